#include "coordinator/capacity/run_folder.h"

#include <fstream>
#include <limits>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace surge::coordinator {

namespace fs = std::filesystem;

absl::StatusOr<std::string> RunFolderDataset(const fs::path& run_folder) {
  std::error_code ec;
  if (!fs::is_directory(run_folder, ec)) {
    return absl::NotFoundError(absl::StrCat(run_folder.string(), ": no such folder"));
  }
  const std::string suffix = "_plan.csv";
  std::string dataset;
  for (const auto& entry : fs::directory_iterator(run_folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      dataset = name.substr(0, name.size() - suffix.size());
    }
  }
  if (ec || dataset.empty()) {
    return absl::NotFoundError(
        absl::StrCat(run_folder.string(),
                     ": no {dataset}_plan.csv in it; give a run folder as `surge run` printed it "
                     "(.../performances/{model})"));
  }
  const fs::path summary = run_folder / (dataset + ".json");
  if (!fs::is_regular_file(summary, ec)) {
    return absl::NotFoundError(absl::StrCat(
        summary.string(), " is missing: the run never finished (`surge report` rebuilds it)"));
  }
  return dataset;
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot be read"));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not valid JSON"));
  }
  return j;
}

const nlohmann::json* JsonAt(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

double NumberAt(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* v = JsonAt(j, path);
  return v != nullptr && v->is_number() ? v->get<double>()
                                        : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace surge::coordinator
