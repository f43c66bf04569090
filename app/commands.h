// `surge run`, `surge coordinator`, `surge plan` and `surge report`: the
// composition root (app/) that wires the coordinator's modules, the local
// worker pool and the built-in server for one command, and maps failures to
// exit codes (R-CFG-1: 2 for configuration errors; 130 after Ctrl-C; 1 for
// other failures).
#ifndef SURGE_APP_COMMANDS_H_
#define SURGE_APP_COMMANDS_H_

#include <cstdint>
#include <string>

#include "surge/v1/config.pb.h"

namespace surge::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitConfigError = 2;
// Ended by --stop-on-alarm at the first lateness alarm (issue 9 item 1): the
// generator fell behind its schedule; every file is written.
inline constexpr int kExitLatenessAlarm = 3;
inline constexpr int kExitInterrupted = 130;
// Stopped by SIGTERM (e.g. `docker stop`, a Kubernetes eviction): drained and
// written like Ctrl-C.
inline constexpr int kExitTerminated = 143;

// Local workers per core beyond which `surge run` caps --workers (with a
// warning) unless workers_force: far more processes than cores starve each
// other's heartbeats and pacers.
inline constexpr int kWorkersPerCore = 4;
// min(kWorkersPerCore × max(1, cores), max(1, requests)).
inline int MaxUsefulWorkers(unsigned cores, uint64_t requests) {
  const uint64_t by_cores = static_cast<uint64_t>(kWorkersPerCore) * (cores > 0 ? cores : 1);
  const uint64_t by_requests = requests > 0 ? requests : 1;
  return static_cast<int>(by_cores < by_requests ? by_cores : by_requests);
}

// R-UI-4: computes the plan, writes `{dataset}_plan.csv` and (unless instant)
// the expected page into a new run folder; sends nothing.
int PlanCommand(const surge::v1::RunConfig& config);

// Test-only settings of `surge run` (hidden options, not in RunConfig):
// worker 0 runs `surge worker --simulate-clock-offset-ms X
// --simulate-clock-drift-ppm Y`, a clock shifted and skewed against the
// host's, to test the shared clock (R-DIST-4). 0 and 0 = off.
struct RunTestOptions {
  double worker0_clock_offset_ms = 0;
  double worker0_clock_drift_ppm = 0;
};

// `surge coordinator` (issue 7 item 1, R-DIST-1): the job of `surge run`,
// but its workers are started elsewhere (`surge worker --connect`) and join.
struct CoordinatorRole {
  // --bind, e.g. "tcp://0.0.0.0:5555". Required. A non-loopback address needs
  // CurveZMQ or --insecure (CheckBindSecurity, docs/SECURITY.md).
  std::string bind;
  // --expect-workers N (>= 1): the run starts when N workers are ready.
  int expect_workers = 0;
  // --join-timeout, seconds (default 60): without N ready workers by then,
  // the coordinator ends with exit 1 and sends nothing.
  double join_timeout_s = 60;
  // --curve-secret-key FILE, --curve-allow DIR, --insecure.
  std::string curve_secret_key_file;
  std::string curve_allow_dir;
  bool insecure = false;
};

// R-UI-1: the whole job on one machine; starts the built-in simulated server
// when config.target.base_url is empty. `self_exe` is the surge binary the
// local workers run. With `role`, the same job as a coordinator whose
// workers join from elsewhere: no local workers, no cap by this machine's
// cores; errors in the role's flags exit 2, a join timeout exits 1.
//
// Exact replay (docs/REPLAY.md): with a non-empty `plan_file` (a
// {dataset}_plan.csv written by surge), the run sends that plan as written —
// its offsets to the nanosecond, its order — with the payloads (sizes,
// prompts) rebuilt from the configuration, which must agree with the
// run_config.json beside the file in every key that makes the plan or the
// payloads (PlanDefiningDifferences). Errors (exit 2, nothing sent): the
// file missing or malformed (line and column named), no run_config.json
// beside it, a differing key, or a row count other than num_prompts.
int RunCommand(const surge::v1::RunConfig& config, const std::string& self_exe,
               const RunTestOptions& test = {}, const CoordinatorRole* role = nullptr,
               const std::string& plan_file = "");

// The run_config.json beside a plan file (same folder).
std::string PlanConfigPath(const std::string& plan_file);

// `surge report <run folder>`: rebuilds the summary and both pages from the
// run's files (plan CSV, details JSONL, run_config.json), also after a crash;
// planned requests without a record count as lost (R-OUT-1).
int ReportCommand(const std::string& folder);

}  // namespace surge::app

#endif  // SURGE_APP_COMMANDS_H_
