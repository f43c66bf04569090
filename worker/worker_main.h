// `surge worker`: the process a local or remote worker runs.
#ifndef SURGE_WORKER_WORKER_MAIN_H_
#define SURGE_WORKER_WORKER_MAIN_H_

#include <string>

namespace surge::worker {

struct WorkerArgs {
  // Coordinator endpoint, e.g. tcp://10.0.0.5:5555. Required.
  std::string connect;
  // Index asked for; -1 lets the coordinator choose.
  int worker_index = -1;
  // Local workers: the coordinator's pid. The worker dies with it
  // (PR_SET_PDEATHSIG) and exits at once when it is already gone. 0 = none.
  int parent_pid = 0;
  // --join-timeout: seconds to keep saying Hello until a coordinator answers
  // (a worker may start before its coordinator); then exit 3.
  double join_timeout_s = 60;
  // CurveZMQ (docs/SECURITY.md): this worker's secret key file and the
  // coordinator's public key file, both from `surge keygen`; "" = none.
  // Required together for a non-loopback --connect unless `insecure`.
  std::string curve_secret_key_file;
  std::string curve_server_key_file;
  // --insecure: connect to a non-loopback coordinator without CurveZMQ.
  bool insecure = false;
  // Test-only (R-DIST-4 tests): run this worker on a clock shifted by this
  // many ms and skewed by this many ppm against its host's steady clock
  // (common/skewed_clock.h). 0 and 0 = the real clock.
  double simulate_clock_offset_ms = 0;
  double simulate_clock_drift_ppm = 0;
  // The pacer thread's scheduling (worker/pacer_thread.h): --pacer-cpu
  // (-1 = no pinning) and --pacer-realtime (SCHED_FIFO).
  int pacer_cpu = -1;
  bool pacer_realtime = false;
};

// Runs one worker to the end; returns the exit code (worker_session.h):
// kExitRejected (2) also for security flags that break the rule of
// CheckConnectSecurity (common/zmq_transport.h) or unreadable key files.
int WorkerCommand(const WorkerArgs& args);

}  // namespace surge::worker

#endif  // SURGE_WORKER_WORKER_MAIN_H_
