#include "common/role_options.h"

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/zmq_transport.h"

namespace surge {

std::chrono::milliseconds JoinTimeoutMs(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

absl::StatusOr<std::string> ReadKeyFlag(const std::string& flag, const std::string& path) {
  absl::StatusOr<std::string> key = ReadCurveKeyFile(path);
  if (!key.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", key.status().message()));
  }
  return key;
}

}  // namespace surge
