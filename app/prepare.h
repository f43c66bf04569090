// What `surge run`, `surge coordinator` and `surge plan` compute before
// anything is sent: the payloads, the plan, the run folder with its plan CSV,
// run_config.json and (unless instant) the expected page.
#ifndef SURGE_APP_PREPARE_H_
#define SURGE_APP_PREPARE_H_

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "app/warmup_prepare.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dataset/prefix_reuse.h"
#include "coordinator/dataset/session_starts.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/steady_state.h"
#include "coordinator/report/rps_figure.h"
#include "surge/v1/config.pb.h"

namespace surge::app {

// Everything the commands compute before anything is sent.
struct Prepared {
  // Multi-turn sessions (docs/SESSIONS.md); null without --multi-turn. The
  // payloads are then its sessions' first turns (declared first: it
  // outlives them).
  std::unique_ptr<coordinator::SessionSource> sessions;
  std::unique_ptr<coordinator::PayloadSource> payloads;
  // With sessions: each one's turns and every turn's think time.
  coordinator::SessionShape session_shape;
  coordinator::ArrivalSchedule plan;
  std::filesystem::path folder;
  std::string dataset;               // file-name stem, R-PLOT-1
  std::string started_at;            // local time with offset, FormatLocalTime
  std::string started_at_utc;        // UTC, FormatUtcTime
  coordinator::PageContext context;  // shown on both pages
  // Warm-ups before t0 (num_warmups) and the steady-state window
  // (steady_state_s; nullopt = the whole run): docs/DATASETS.md.
  Warmups warmups;
  std::optional<coordinator::SteadyStateWindow> steady_state;
  // The plan's prefix reuse (coordinator/dataset/prefix_reuse.h); unset
  // when the plan has no shared prefixes.
  std::optional<coordinator::PlannedReuse> planned_reuse;
};

// Plan, folder, plan CSV, configuration and the expected page. `saved` is
// the configuration written to run_config.json (what `--config` needs to
// reproduce the run). Errors: INVALID_ARGUMENT for a configuration that
// cannot make a plan (exit 2, ExitCodeFor); another code when the folder or
// its files cannot be written (exit 1).
//
// Exact replay: with a `plan_file`, the plan is that file as written
// (ReadPlanCsv: every offset to the nanosecond) instead of the one built
// here; its row count must be num_prompts. The configuration's own plan is
// still built, to say in the log whether the file differs from it (an
// edited plan is sent as written).
absl::StatusOr<Prepared> Prepare(const surge::v1::RunConfig& config, const std::string& model,
                                 const surge::v1::RunConfig& saved,
                                 const std::filesystem::path& plan_file = {});

// The run_config.json beside a plan file (same folder).
std::string PlanConfigPath(const std::string& plan_file);

// Exact replay: the configuration must make the same plan and payloads as
// the one the plan file was made with (its run_config.json). Errors:
// INVALID_ARGUMENT naming the file, or every differing key.
absl::Status CheckReplayConfig(const surge::v1::RunConfig& config,
                               const std::filesystem::path& plan_file);

}  // namespace surge::app

#endif  // SURGE_APP_PREPARE_H_
