// Trace replay (R-MET-3): the plan of a trace whose requests carry their
// own send times, in the plan's form (rates, intervals, offsets, classes), so
// that the plan file, the pages and the summary read it like a generated
// plan. Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_PLAN_REPLAY_SCHEDULE_H_
#define SURGE_COORDINATOR_PLAN_REPLAY_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"

namespace surge::coordinator {

// The traffic facts of a replayed trace with offsets t_0..t_{N-1} (seconds,
// finite, >= 0, non-decreasing):
// - instant when every offset is 0 (target rate 0), else not instant, even
//   when the mean rate is below 0.1 RPS;
// - request_rate_rps = target_rate_rps = the trace's mean rate
//   (N-1)/(t_{N-1}-t_0); when N = 1 or the span is 0 (and some offset > 0)
//   N/t_{N-1};
// - ramp-up inactive, no warnings, trace_replay true;
// - burstiness = the moment estimate 1/CV^2 of the intervals Δ_1..Δ_{N-1}
//   (mean^2/variance), 0 when there are fewer than two of them or they are all
//   equal. It is shown on the pages only; it shapes nothing;
// - described as a trace replay; `trace_time_scale` (the factor the trace's
//   timestamps were scaled by) appears in the description's log intro only.
ResolvedTraffic ResolveReplayTraffic(const std::vector<double>& offsets_s,
                                     double trace_time_scale = 1.0);

// The replay plan: offset_s = `offsets_s`; Δ_0 = t_0 and Δ_i = t_i − t_{i−1};
// rate_rps_i = the mean rate of ResolveReplayTraffic for every i; classes by
// R-ANOM with 1/(mean rate) as expected interval and burstiness anomalies
// enabled (a trace's intervals are not fixed), so intervals under 1 ms are
// timing anomalies and intervals more than 50 % off the mean are burstiness
// anomalies. When every offset is 0 the plan is instant (R-INST: rate 0,
// intervals 0, class instant). `seed` is recorded only (nothing is drawn).
// Errors: INVALID_ARGUMENT when `offsets_s` is empty, or an offset is not
// finite, negative or smaller than the one before (naming the index).
// `trace_time_scale` as for ResolveReplayTraffic.
absl::StatusOr<ArrivalSchedule> BuildReplaySchedule(const std::vector<double>& offsets_s,
                                                    uint64_t seed, double trace_time_scale = 1.0);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_REPLAY_SCHEDULE_H_
