// Where a run's workers come from (R-DIST-1): the pool seam. `surge run`
// uses a LocalProcessPool (it spawns `surge worker` processes on this host
// and knows when one exits); a RemoteWorkerPool spawns nothing and expects
// the workers to join over the network (`surge coordinator`;
// liveness then comes from heartbeats alone). The dispatcher only asks a
// pool whether worker k has exited.
#ifndef SURGE_COORDINATOR_DISPATCH_WORKER_POOL_H_
#define SURGE_COORDINATOR_DISPATCH_WORKER_POOL_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/clock.h"

namespace surge::coordinator {

class WorkerPool {
 public:
  virtual ~WorkerPool() = default;
  // Brings up `count` workers that connect to `endpoint` (a ZeroMQ address
  // such as tcp://127.0.0.1:5555). Errors: INTERNAL when a local worker
  // cannot be started (those already started are stopped).
  virtual absl::Status Start(int count, const std::string& endpoint) = 0;
  // How many workers the run waits for (set by Start).
  virtual int expected() const = 0;
  // True when worker `index` is known to have exited (process ground truth,
  // faster than heartbeat silence). A pool that cannot know says false.
  virtual bool Exited(int32_t index) = 0;
  // Waits up to `grace` for the workers it started to exit, then kills the
  // rest by pid. Idempotent.
  virtual void Stop(std::chrono::milliseconds grace) = 0;
  // "local" or "remote", for logs.
  virtual absl::string_view kind() const = 0;
};

// The local `surge worker` processes of `surge run` (how many: app/'s
// choice). Every process it starts, it stops by its pid.
class LocalProcessPool final : public WorkerPool {
 public:
  // `executable` is the surge binary (normally /proc/self/exe).
  LocalProcessPool(Clock& clock, std::string executable)
      : clock_(clock), executable_(std::move(executable)) {}
  ~LocalProcessPool() override;  // Stop(0)

  // Starts `count` workers: `<executable> worker --connect <endpoint>
  // --worker-index k --parent-pid <this pid>`, plus extra_args[k] when
  // SetExtraArgs gave them (test options, e.g. a skewed clock for worker 0).
  absl::Status Start(int count, const std::string& endpoint) override;
  void SetExtraArgs(std::vector<std::vector<std::string>> extra_args) {
    extra_args_ = std::move(extra_args);
  }
  int expected() const override { return static_cast<int>(pids_.size()); }
  // Reaps with waitpid(WNOHANG).
  bool Exited(int32_t index) override;
  void Stop(std::chrono::milliseconds grace) override;
  absl::string_view kind() const override { return "local"; }
  // Exit status per worker (-1 while running or when killed by a signal).
  const std::vector<int>& exit_codes() const { return exit_codes_; }

 private:
  Clock& clock_;
  std::string executable_;
  std::vector<pid_t> pids_;
  std::vector<bool> exited_;
  std::vector<int> exit_codes_;
  std::vector<std::vector<std::string>> extra_args_;
};

// Workers started elsewhere (other hosts, containers) that join by
// themselves: Start spawns nothing and only records how many are expected.
class RemoteWorkerPool final : public WorkerPool {
 public:
  absl::Status Start(int count, const std::string&) override {
    expected_ = count;
    return absl::OkStatus();
  }
  int expected() const override { return expected_; }
  bool Exited(int32_t) override { return false; }
  void Stop(std::chrono::milliseconds) override {}
  absl::string_view kind() const override { return "remote"; }

 private:
  int expected_ = 0;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_WORKER_POOL_H_
