// Checks a finished run folder: the plan CSV satisfies the schedule rules
// (rates, cumulative offsets, normalization, classes), the details hold
// exactly one record per planned request, and the summary's achieved and
// intended rates are those of R-MET-2. Used by the integration tests and by
// the `check_run` tool.
#ifndef SURGE_TESTS_INTEGRATION_RUN_FOLDER_CHECK_H_
#define SURGE_TESTS_INTEGRATION_RUN_FOLDER_CHECK_H_

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace surge::testing {

struct RunFolderReport {
  std::vector<std::string> problems;  // empty = all checks passed
  size_t planned = 0;
  size_t records = 0;
  size_t ok = 0;
  double achieved_rate_rps = 0;
  double intended_rate_rps = 0;
  nlohmann::json summary;
  std::string Describe() const;
};

// `folder` is …/performances/{model}; `dataset` the file stem.
RunFolderReport CheckRunFolder(const std::filesystem::path& folder, const std::string& dataset);

}  // namespace surge::testing

#endif  // SURGE_TESTS_INTEGRATION_RUN_FOLDER_CHECK_H_
