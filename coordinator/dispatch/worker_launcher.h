// Starts and stops the local `surge worker` processes of `surge run`
// (R-DIST-1): one per core by default. Every process it starts, it stops by
// its pid.
#ifndef SURGE_COORDINATOR_DISPATCH_WORKER_LAUNCHER_H_
#define SURGE_COORDINATOR_DISPATCH_WORKER_LAUNCHER_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/clock.h"

namespace surge::coordinator {

class WorkerLauncher {
 public:
  // `executable` is the surge binary (normally /proc/self/exe).
  WorkerLauncher(Clock& clock, std::string executable)
      : clock_(clock), executable_(std::move(executable)) {}
  ~WorkerLauncher();  // Stop(0)

  // Starts `count` workers: `surge worker --connect <endpoint> --worker-index k
  // --parent-pid <this pid>` plus `extra_args[k]` when given (test options).
  // Errors: INTERNAL when a spawn fails (those already started are stopped).
  absl::Status Start(int count, const std::string& endpoint,
                     const std::vector<std::vector<std::string>>& extra_args = {});
  // True when worker `index` has exited (reaped with waitpid).
  bool Exited(int index);
  // Waits up to `grace` for all to exit, then SIGKILLs the rest by pid and
  // reaps them. Idempotent.
  void Stop(std::chrono::milliseconds grace);
  // Exit status per worker (-1 while running or when killed by a signal).
  const std::vector<int>& exit_codes() const { return exit_codes_; }

 private:
  Clock& clock_;
  std::string executable_;
  std::vector<pid_t> pids_;
  std::vector<bool> exited_;
  std::vector<int> exit_codes_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_WORKER_LAUNCHER_H_
