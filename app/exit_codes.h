// The exit codes of every `surge` command (README's exit-code table): 2 for
// configuration errors, 3 when --stop-on-alarm ended the run, 130 after
// Ctrl-C, 143 after SIGTERM, 1 for other failures.
#ifndef SURGE_APP_EXIT_CODES_H_
#define SURGE_APP_EXIT_CODES_H_

#include "absl/status/status.h"

namespace surge::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitConfigError = 2;
// Ended by --stop-on-alarm at the first lateness alarm: the generator fell
// behind its schedule; every file is written.
inline constexpr int kExitLatenessAlarm = 3;
inline constexpr int kExitInterrupted = 130;
// Stopped by SIGTERM (e.g. `docker stop`, a Kubernetes eviction): drained and
// written like Ctrl-C.
inline constexpr int kExitTerminated = 143;

// Prints "surge: <message>" to stderr and returns `code`.
int Fail(const absl::Status& status, int code);

}  // namespace surge::app

#endif  // SURGE_APP_EXIT_CODES_H_
