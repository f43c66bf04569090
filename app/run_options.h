// The flags shared by `surge run` and `surge plan` (R-UI-2: `vllm bench
// serve` names) and their merge over the YAML file: flags override the file,
// the file overrides the defaults.
#ifndef SURGE_APP_RUN_OPTIONS_H_
#define SURGE_APP_RUN_OPTIONS_H_

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::app {

// Raw flag values, kept as text so that a bad value gets the same
// field-named error as a bad YAML value (R-CFG-1).
class RunOptions {
 public:
  // Declares every option on `command`.
  void Register(CLI::App& command);
  // Defaults ← --config file ← flags; then validation. Errors:
  // INVALID_ARGUMENT with every problem, each naming the field path, the
  // value and what is allowed.
  // Options that imply another (ApplyImpliedOptions: a range ratio without
  // a distribution means uniform) are applied before validation; each
  // such change is one line in notes().
  absl::StatusOr<surge::v1::RunConfig> Resolve() const;
  // Exact replay: reads `path` as if given with --config, unless --config
  // was given (then that file is read and checked against the plan's).
  void UseConfigFileIfNone(const std::string& path) {
    if (config_path_.empty()) config_path_ = path;
  }
  // What the last Resolve() changed by implication, one sentence each.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  CLI::App* command_ = nullptr;
  std::string config_path_;
  // --goodput ttft:MS tpot:MS e2el:MS (vLLM's syntax).
  std::vector<std::string> goodput_;
  // flag name without dashes → (option, value)
  std::map<std::string, std::pair<CLI::Option*, std::string>> values_;
  mutable std::vector<std::string> notes_;
};

// Parses --goodput values (vLLM's syntax): each value holds one or more
// "METRIC:MS" items separated by spaces or commas, METRIC one of ttft, tpot,
// e2el, MS a number >= 0; later items win. Errors: INVALID_ARGUMENT listing
// every bad item (unknown metric with a "did you mean", bad number).
absl::Status ParseGoodput(const std::vector<std::string>& values, surge::v1::GoodputConfig* out);

}  // namespace surge::app

#endif  // SURGE_APP_RUN_OPTIONS_H_
