// Warm-up and steady state, computed before a run (docs/DATASETS.md
// "Warm-up and steady state"): the warm-ups' planned offsets and payloads,
// and the steady-state window resolved against the plan.
#ifndef SURGE_APP_WARMUP_PREPARE_H_
#define SURGE_APP_WARMUP_PREPARE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/steady_state.h"
#include "surge/v1/config.pb.h"

namespace surge::app {

struct Warmups {
  // ns after t0, negative and increasing (WarmupOffsetsNs).
  std::vector<int64_t> offsets_ns;
  // Their payloads: the run's dataset settings for num_warmups requests,
  // drawn with a seed of their own (WarmupPayloadSeed), so the plan's
  // payloads and plan CSV are those of a run without warm-ups. Null when
  // there are none.
  std::unique_ptr<coordinator::PayloadSource> payloads;
};

// The warm-ups of `config` (num_warmups) before `plan`, at its first rate.
// Errors: the payload source's (INVALID_ARGUMENT naming dataset_path).
absl::StatusOr<Warmups> MakeWarmups(const surge::v1::RunConfig& config,
                                    const coordinator::ArrivalSchedule& plan);

// steady_state_s resolved against `plan`; nullopt when not given. Errors:
// INVALID_ARGUMENT naming the field and its flag (a bad form, or a window
// holding no planned request).
absl::StatusOr<std::optional<coordinator::SteadyStateWindow>> ResolveSteadyStateOption(
    const surge::v1::RunConfig& config, const coordinator::ArrivalSchedule& plan);

}  // namespace surge::app

#endif  // SURGE_APP_WARMUP_PREPARE_H_
