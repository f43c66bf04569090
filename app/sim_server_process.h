// `surge run`'s built-in simulated server in a process of its own:
// `surge sim-server --port 0 ... --parent-pid <this pid>`, so its I/O
// threads are not the coordinator's and can be kept off the pacers' cores
// (affinity) while they stream answers.
#ifndef SURGE_APP_SIM_SERVER_PROCESS_H_
#define SURGE_APP_SIM_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "surge/v1/config.pb.h"

namespace surge::app {

// The server `surge run` starts when no target is given: the run's
// timing and faults (`run_sim`, RunConfig.sim_server), the listen options
// at `surge sim-server`'s defaults but on any free port (port 0). Pure.
surge::v1::SimServerConfig BuiltInServerConfig(const surge::v1::SimServerConfig& run_sim);

// How the built-in server times its answers, for the run's log line:
// "TTFT 20 ms, 2 ms per token", or with the queueing model (max_num_seqs >
// 0) "queueing model: 8 sequences, steps of 10 ms + 0.5 ms per sequence +
// 0.01 ms per prompt token". Pure.
std::string BuiltInServerTiming(const surge::v1::SimServerConfig& sim);

// The arguments after the executable that make `surge sim-server` serve
// `config`: "sim-server", the flags of its option table
// (OptionTable::FlagArgs: every option that has a flag, doubles exact),
// then --parent-pid `parent_pid`. Pure.
std::vector<std::string> SimServerArgs(const surge::v1::SimServerConfig& config, pid_t parent_pid);

// The port in `surge sim-server`'s first stdout line
// "surge sim-server listening on http://HOST:PORT (model M)"; 0 when the
// line does not have that shape. Pure.
uint16_t PortFromListeningLine(const std::string& line);

class SimServerProcess {
 public:
  // Starts `executable sim-server` with SimServerArgs(config, getpid()) and
  // waits up to `start_timeout` for its listening line. The child dies with
  // this process (PR_SET_PDEATHSIG) and ignores Ctrl-C (the coordinator
  // stops it). Errors: INTERNAL when it cannot be started; UNAVAILABLE when
  // it exits or stays silent before listening (its own message is on
  // stderr).
  static absl::StatusOr<std::unique_ptr<SimServerProcess>> Start(
      Clock& clock, const std::string& executable, const surge::v1::SimServerConfig& config,
      std::chrono::milliseconds start_timeout = std::chrono::milliseconds(10000));
  // Lets every thread of the server run only on `cpus`
  // (sched_setaffinity on each of /proc/PID/task; its threads all exist
  // once it listens). CPUs the machine lacks are ignored. Errors:
  // INVALID_ARGUMENT when none of `cpus` exists; INTERNAL naming the errno
  // when the kernel refuses.
  absl::Status KeepOnCpus(const std::vector<int>& cpus);
  // Stop(0 grace is not used: 2 s).
  ~SimServerProcess();
  SimServerProcess(const SimServerProcess&) = delete;
  SimServerProcess& operator=(const SimServerProcess&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // SIGTERM, then SIGKILL after `grace`; reaps it. Later calls do nothing.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

 private:
  SimServerProcess(Clock& clock, pid_t pid, int stdout_fd, uint16_t port)
      : clock_(clock), pid_(pid), stdout_fd_(stdout_fd), port_(port) {}
  Clock& clock_;
  pid_t pid_;
  int stdout_fd_;
  uint16_t port_;
  bool stopped_ = false;
};

}  // namespace surge::app

#endif  // SURGE_APP_SIM_SERVER_PROCESS_H_
