// What `surge worker` and `surge coordinator` share for their role options
// beyond the option table's bounds (proto/surge/v1/roles.proto): the join
// timeout in milliseconds and the reading of a CurveZMQ key file named by a
// flag. Each error names the flag as the user typed it.
#ifndef SURGE_COMMON_ROLE_OPTIONS_H_
#define SURGE_COMMON_ROLE_OPTIONS_H_

#include <chrono>
#include <string>

#include "absl/status/statusor.h"

namespace surge {

// --join-timeout SECONDS (its range, > 0 and at most one day, checked by
// the option table) in milliseconds, rounded up.
std::chrono::milliseconds JoinTimeoutMs(double seconds);

// The Z85 key of the CurveZMQ key file `path` given with `flag` (e.g.
// "--curve-secret-key"). Errors: INVALID_ARGUMENT "<flag>: <why>", the why
// of ReadCurveKeyFile (unreadable file, not one Z85 key).
absl::StatusOr<std::string> ReadKeyFlag(const std::string& flag, const std::string& path);

}  // namespace surge

#endif  // SURGE_COMMON_ROLE_OPTIONS_H_
