#include "app/exit_codes.h"

#include <signal.h>

#include <iostream>

#include "absl/strings/cord.h"

namespace surge::app {
namespace {

// The payload that carries the stopping signal of an interruption.
constexpr char kSignalPayload[] = "surge.app/stop_signal";

}  // namespace

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
      return kExitConfigError;
    case absl::StatusCode::kAborted:
      return kExitLatenessAlarm;
    case absl::StatusCode::kResourceExhausted:
      return kExitSaturated;
    case absl::StatusCode::kCancelled: {
      const auto signal = status.GetPayload(kSignalPayload);
      return signal.has_value() && *signal == "SIGTERM" ? kExitTerminated : kExitInterrupted;
    }
    default:
      return kExitFailure;
  }
}

absl::Status InterruptedStatus(int signal) {
  absl::Status status = absl::CancelledError();
  status.SetPayload(kSignalPayload, absl::Cord(signal == SIGTERM ? "SIGTERM" : "SIGINT"));
  return status;
}

absl::Status AsConfigError(const absl::Status& status) {
  if (status.ok() || status.code() == absl::StatusCode::kInvalidArgument) return status;
  return absl::InvalidArgumentError(status.message());
}

absl::Status AsRuntimeFailure(const absl::Status& status) {
  if (ExitCodeFor(status) == kExitFailure || status.ok()) return status;
  return absl::UnknownError(status.message());
}

int ExitWith(const absl::Status& status) {
  if (!status.ok() && status.code() != absl::StatusCode::kCancelled) {
    std::cerr << "surge: " << status.message() << "\n";
  }
  return ExitCodeFor(status);
}

int Fail(const absl::Status& status, int code) {
  std::cerr << "surge: " << status.message() << "\n";
  return code;
}

}  // namespace surge::app
