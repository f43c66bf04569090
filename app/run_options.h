// The flags shared by `surge run` and `surge plan` (R-UI-2: `vllm bench
// serve` names) and their merge over the YAML file: flags override the file,
// the file overrides the defaults.
#ifndef SURGE_APP_RUN_OPTIONS_H_
#define SURGE_APP_RUN_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/config/option_table.h"
#include "surge/v1/config.pb.h"

namespace surge::app {

// The flags of an option table (coordinator/config/option_table.h): one per
// annotated field of `root` (name, help and kind from its OptionSpec), the
// values kept as text so that a bad value gets the same field-named error as
// a bad YAML value (R-CFG-1). Bool fields are switches (`--x` or
// `--x=false`), repeated ones repeatable; a spec's flag_alias names are
// more names of the flag, `required` makes CLI11 refuse a command line
// without it, `help_group` is its --help section ("-": not listed).
class TableFlags {
 public:
  explicit TableFlags(const google::protobuf::Descriptor* root);
  // Declares every flag on `command`.
  void Register(CLI::App& command);
  // Sets the fields of the flags given on `message` (a list flag adds its
  // items); one line per bad value, "  <field> = \"<value>\": must be ...
  // (flag --<name>)", appended to `errors`.
  void Apply(google::protobuf::Message* message, std::vector<std::string>* errors) const;
  // The flag names, without "--".
  std::vector<std::string> Names() const;
  // For a command whose options are the one message (`surge sim-server`):
  // defaults, then the flags, then each field's own checks. Errors:
  // INVALID_ARGUMENT "invalid configuration:" and one line per problem.
  absl::Status Resolve(google::protobuf::Message* message) const;

 private:
  const coordinator::OptionTable& table_;
  // flag name → (option, value as given)
  std::map<std::string, std::pair<CLI::Option*, std::string>> values_;
};

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
  // Flags of the same command declared elsewhere (a role's own table):
  // offered too when an unknown flag gets a "did you mean".
  void AcceptAlso(std::vector<std::string> names) { other_names_ = std::move(names); }

 private:
  CLI::App* command_ = nullptr;
  std::string config_path_;
  // --goodput ttft:MS tpot:MS e2el:MS (vLLM's syntax).
  std::vector<std::string> goodput_;
  std::vector<std::string> stages_;  // --stage LENGTH@RATE, in order
  std::vector<std::string> spikes_;  // --spike AT_S:DURATION_S:MULTIPLIER
  // One flag per RunConfig option (config.proto).
  TableFlags flags_{surge::v1::RunConfig::descriptor()};
  mutable std::vector<std::string> notes_;
  std::vector<std::string> other_names_;
};

// The problems of several Resolve() results as one INVALID_ARGUMENT
// "invalid configuration:" followed by every line of each failed status, in
// order (OK statuses add nothing). OK when all are.
absl::Status JoinProblems(const std::vector<absl::Status>& statuses);

// Parses --goodput values (vLLM's syntax): each value holds one or more
// "METRIC:MS" items separated by spaces or commas, METRIC one of ttft, tpot,
// e2el, MS a number >= 0; later items win. Errors: INVALID_ARGUMENT listing
// every bad item (unknown metric with a "did you mean", bad number).
absl::Status ParseGoodput(const std::vector<std::string>& values, surge::v1::GoodputConfig* out);

}  // namespace surge::app

#endif  // SURGE_APP_RUN_OPTIONS_H_
