// The exit codes of every `surge` command (README's exit-code table), and
// the one mapping from a command's Status to them.
#ifndef SURGE_APP_EXIT_CODES_H_
#define SURGE_APP_EXIT_CODES_H_

#include "absl/status/status.h"

namespace surge::app {

inline constexpr int kExitOk = 0;
// A runtime failure: target unreachable, every worker lost, any request
// lost (the files are written first), a file that cannot be written, ...
inline constexpr int kExitFailure = 1;
// A configuration error; nothing was sent.
inline constexpr int kExitConfigError = 2;
// Ended by --stop-on-alarm at the first lateness alarm: the generator fell
// behind its schedule; every file is written.
inline constexpr int kExitLatenessAlarm = 3;
// Ended by --stop-on-saturation: the server's backlog grew without bound
// (docs/CAPACITY.md "Saturation"); every file is written.
inline constexpr int kExitSaturated = 4;
// Interrupted by Ctrl-C (SIGINT): drained, every file written.
inline constexpr int kExitInterrupted = 130;
// Stopped by SIGTERM (e.g. `docker stop`, a Kubernetes eviction): drained and
// written like Ctrl-C.
inline constexpr int kExitTerminated = 143;

// The exit code for a command's result: OK → 0; INVALID_ARGUMENT → 2 (a
// configuration error); ABORTED → 3 (stopped on the lateness alarm);
// RESOURCE_EXHAUSTED → 4 (stopped on saturation);
// CANCELLED → 130, or 143 when InterruptedStatus(SIGTERM) made it; anything
// else → 1.
int ExitCodeFor(const absl::Status& status);

// The status of a run stopped by `signal` (SIGINT or SIGTERM): CANCELLED,
// no message (the interruption is told by the run's own lines).
absl::Status InterruptedStatus(int signal);

// `status` as a configuration error (INVALID_ARGUMENT, same message), or
// as a runtime failure (a code ExitCodeFor maps to 1, same message). OK
// stays OK.
absl::Status AsConfigError(const absl::Status& status);
absl::Status AsRuntimeFailure(const absl::Status& status);

// The end of a command: prints "surge: <message>" to stderr unless `status`
// is OK or an interruption, and returns ExitCodeFor(status).
int ExitWith(const absl::Status& status);

// Prints "surge: <message>" to stderr and returns `code`.
int Fail(const absl::Status& status, int code);

}  // namespace surge::app

#endif  // SURGE_APP_EXIT_CODES_H_
