// The rules `surge worker` and `surge coordinator` share for their role
// options: the join timeout's range and the reading of a CurveZMQ key file
// named by a flag. Each error names the flag as the user typed it.
#ifndef SURGE_COMMON_ROLE_OPTIONS_H_
#define SURGE_COMMON_ROLE_OPTIONS_H_

#include <chrono>
#include <string>

#include "absl/status/statusor.h"

namespace surge {

// --join-timeout SECONDS: how long a worker keeps saying Hello, or a
// coordinator waits for its workers; > 0 and at most 86400 (one day).
// Returns it in milliseconds, rounded up. Errors: INVALID_ARGUMENT
// "--join-timeout <seconds>: must be > 0 and at most 86400 seconds".
absl::StatusOr<std::chrono::milliseconds> JoinTimeout(double seconds);

// The Z85 key of the CurveZMQ key file `path` given with `flag` (e.g.
// "--curve-secret-key"). Errors: INVALID_ARGUMENT "<flag>: <why>", the why
// of ReadCurveKeyFile (unreadable file, not one Z85 key).
absl::StatusOr<std::string> ReadKeyFlag(const std::string& flag, const std::string& path);

}  // namespace surge

#endif  // SURGE_COMMON_ROLE_OPTIONS_H_
