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

uint64_t DescriptorCapacity(uint64_t fd_limit) {
  return fd_limit > kReservedDescriptors + 1 ? fd_limit - kReservedDescriptors : 1;
}

absl::Status CheckConnectionsFit(uint64_t max_concurrency, uint64_t workers,
                                 bool sim_server_in_process, const FileLimit& limit) {
  if (max_concurrency == 0 || workers == 0) return absl::OkStatus();
  const uint64_t capacity = DescriptorCapacity(limit.now);
  const uint64_t per_worker = (max_concurrency + workers - 1) / workers;
  auto hard = [&limit] {
    return limit.hard == UINT64_MAX ? std::string("unlimited") : absl::StrCat(limit.hard);
  };
  if (per_worker > capacity) {
    return absl::FailedPreconditionError(absl::StrCat(
        "max_concurrency = ", max_concurrency, " cannot fit: each of ", workers,
        " workers would hold up to ", per_worker, " connections, but its open-file limit is ",
        limit.now, " (hard limit ", hard(), "; ", kReservedDescriptors,
        " kept for surge itself) so it can hold ", capacity,
        ". Raise the limit (ulimit -n, LimitNOFILE=, docker --ulimit nofile=), use more "
        "workers (--workers ",
        (max_concurrency + capacity - 1) / capacity, " or more), or lower --max-concurrency"));
  }
  if (sim_server_in_process && max_concurrency > capacity) {
    return absl::FailedPreconditionError(absl::StrCat(
        "max_concurrency = ", max_concurrency,
        " cannot fit: the built-in server runs in this process and would hold one descriptor per "
        "connection, but the open-file limit is ",
        limit.now, " (hard limit ", hard(), "; ", kReservedDescriptors,
        " kept for surge itself) so it can hold ", capacity,
        ". Raise the limit (ulimit -n), run the server separately (surge sim-server, then "
        "--base-url), or lower --max-concurrency"));
  }
  return absl::OkStatus();
}

}  // namespace surge
