// The open-file limit: every connection a worker or the
// built-in server holds is a file descriptor, and the usual soft limit (1024)
// is far below what a high-rate run keeps open, while the hard limit is
// usually much higher. surge raises the soft limit to the hard one at start.
#ifndef SURGE_COMMON_FD_LIMIT_H_
#define SURGE_COMMON_FD_LIMIT_H_

#include <cstdint>

#include "absl/status/status.h"
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

// Descriptors a process keeps for itself besides its connections (ZeroMQ
// sockets and its I/O thread's pipes, the details file, stdio, the resolver).
inline constexpr uint64_t kReservedDescriptors = 64;

// Connections a process with open-file limit `fd_limit` can hold:
// fd_limit − kReservedDescriptors, at least 1. Pure.
uint64_t DescriptorCapacity(uint64_t fd_limit);

// Whether a run's planned connections fit the open-file limit, so a
// plan that cannot fit is refused with a clear message. Each of `workers`
// worker processes (with `fd_limit`) holds up to its share of
// `max_concurrency` connections (⌈C/W⌉ for the largest share); the process
// running the built-in server (`sim_server_in_process`) holds one per
// connection of every worker, C in all. max_concurrency 0 (no cap) is not
// checked: its need depends on the server's speed, and each worker then caps
// itself at its capacity (a request waits for a descriptor instead of
// failing). Errors: FAILED_PRECONDITION naming max_concurrency, the need,
// the limit (and hard limit) and the ways out. Pure.
absl::Status CheckConnectionsFit(uint64_t max_concurrency, uint64_t workers,
                                 bool sim_server_in_process, const FileLimit& limit);

}  // namespace surge

#endif  // SURGE_COMMON_FD_LIMIT_H_
