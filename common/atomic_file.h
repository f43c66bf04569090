// Writing a file so that a reader never sees half of it: the parts go to
// `<path>.tmp`, which is renamed into place once complete.
#ifndef SURGE_COMMON_ATOMIC_FILE_H_
#define SURGE_COMMON_ATOMIC_FILE_H_

#include <filesystem>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace surge {

// Writes `parts` one after the other to `path`, creating its parent folder
// when missing. Errors: INTERNAL naming the path and the OS error (the
// temporary file is removed).
absl::Status WriteFileAtomically(const std::filesystem::path& path,
                                 const std::vector<std::string_view>& parts);

}  // namespace surge

#endif  // SURGE_COMMON_ATOMIC_FILE_H_
