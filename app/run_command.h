// `surge run` (R-UI-1): the whole job on one machine, with local worker
// processes.
#ifndef SURGE_APP_RUN_COMMAND_H_
#define SURGE_APP_RUN_COMMAND_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "app/run_job.h"
#include "surge/v1/config.pb.h"

namespace surge::app {

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

// Test-only settings of `surge run` (hidden options, not in RunConfig):
// worker 0 runs `surge worker --simulate-clock-offset-ms X
// --simulate-clock-drift-ppm Y`, a clock shifted and skewed against the
// host's, to test the shared clock (R-DIST-4). 0 and 0 = off.
struct RunTestOptions {
  double worker0_clock_offset_ms = 0;
  double worker0_clock_drift_ppm = 0;
};

// R-UI-1: the whole job on one machine (RunJob with local worker
// processes); starts the built-in simulated server when
// config.target.base_url is empty. `self_exe` is the surge binary the local
// workers run. Returns the exit code (ExitCodeFor).
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
               const RunTestOptions& test = {}, const std::string& plan_file = "");

// The same job, for a command that runs several (`surge sweep`): its status
// instead of an exit code, and where it wrote its files.
absl::Status RunLocally(const surge::v1::RunConfig& config, const std::string& self_exe,
                        RunJobResult* result);

}  // namespace surge::app

#endif  // SURGE_APP_RUN_COMMAND_H_
