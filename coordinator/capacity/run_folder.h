// The files of a finished run folder (.../performances/<model>) that the
// capacity tools read: which dataset stem it holds and the JSON files in it.
#ifndef SURGE_COORDINATOR_CAPACITY_RUN_FOLDER_H_
#define SURGE_COORDINATOR_CAPACITY_RUN_FOLDER_H_

#include <filesystem>
#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

// The dataset stem of a run folder: from its one {dataset}_plan.csv, which
// must have a {dataset}.json (the summary) beside it. Errors: NOT_FOUND
// naming the folder when it is no folder, or the file that is missing.
absl::StatusOr<std::string> RunFolderDataset(const std::filesystem::path& run_folder);

// The JSON file at `path`. Errors: NOT_FOUND naming the path when it is
// missing; INVALID_ARGUMENT naming it when it is not JSON.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::filesystem::path& path);

// The value at `path` (object keys, outermost first) in `j`, or null when a
// step is missing or not an object.
const nlohmann::json* JsonAt(const nlohmann::json& j, std::initializer_list<const char*> path);
// The number there, NaN when it is missing or not a number.
double NumberAt(const nlohmann::json& j, std::initializer_list<const char*> path);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CAPACITY_RUN_FOLDER_H_
