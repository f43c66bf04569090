#include "common/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace surge {

absl::StatusOr<FileLimit> RaiseOpenFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) {
    return absl::InternalError(absl::StrCat("getrlimit(RLIMIT_NOFILE): ", std::strerror(errno)));
  }
  FileLimit out;
  out.before = r.rlim_cur == RLIM_INFINITY ? UINT64_MAX : r.rlim_cur;
  out.hard = r.rlim_max == RLIM_INFINITY ? UINT64_MAX : r.rlim_max;
  rlim_t target = r.rlim_max;
  if (target == RLIM_INFINITY) {
    // An unlimited hard limit cannot be the soft one: the kernel's own cap.
    uint64_t nr_open = 1048576;
    std::ifstream("/proc/sys/fs/nr_open") >> nr_open;
    target = nr_open;
  }
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < target) {
    r.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
      return absl::InternalError(absl::StrCat("setrlimit(RLIMIT_NOFILE, ", target,
                                              "): ", std::strerror(errno)));
    }
  }
  out.now = r.rlim_cur == RLIM_INFINITY ? UINT64_MAX : r.rlim_cur;
  return out;
}

}  // namespace surge
