#include "common/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace surge {

absl::Status WriteFileAtomically(const std::filesystem::path& path,
                                 const std::vector<std::string_view>& parts) {
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot create folder ", path.parent_path().string(), ": ", ec.message()));
    }
  }
  const std::filesystem::path tmp = path.string() + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot write ", tmp.string(), ": ", std::strerror(errno)));
  }
  bool ok = true;
  for (std::string_view part : parts) {
    if (std::fwrite(part.data(), 1, part.size(), f) != part.size()) {
      ok = false;
      break;
    }
  }
  const int saved_errno = errno;
  if (std::fclose(f) != 0) ok = false;
  if (!ok) {
    std::filesystem::remove(tmp, ec);
    return absl::InternalError(
        absl::StrCat("cannot write ", tmp.string(), ": ", std::strerror(saved_errno)));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp.string(), " to ", path.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace surge
