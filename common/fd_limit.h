// The open-file limit (issue 9 item 1): every connection a worker or the
// built-in server holds is a file descriptor, and the usual soft limit (1024)
// is far below what a high-rate run keeps open, while the hard limit is
// usually much higher. surge raises the soft limit to the hard one at start.
#ifndef SURGE_COMMON_FD_LIMIT_H_
#define SURGE_COMMON_FD_LIMIT_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace surge {

struct FileLimit {
  uint64_t before = 0;  // soft limit found, descriptors
  uint64_t now = 0;     // soft limit after the call (== hard unless refused)
  uint64_t hard = 0;    // hard limit (RLIM_INFINITY as UINT64_MAX)
};

// Sets RLIMIT_NOFILE's soft limit to its hard limit (capped at
// /proc/sys/fs/nr_open when the hard limit is unlimited). Errors: INTERNAL
// with the errno text when getrlimit/setrlimit fail.
absl::StatusOr<FileLimit> RaiseOpenFileLimit();

}  // namespace surge

#endif  // SURGE_COMMON_FD_LIMIT_H_
