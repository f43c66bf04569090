// The pages' shaded bands for warm-up and steady state (docs/DATASETS.md
// "Warm-up and steady state"). Pure.
#ifndef SURGE_COORDINATOR_REPORT_SHADED_BANDS_H_
#define SURGE_COORDINATOR_REPORT_SHADED_BANDS_H_

#include <cstdint>
#include <vector>

#include "coordinator/plan/steady_state.h"
#include "coordinator/report/page_types.h"

namespace surge::coordinator {

// The steady-state window [start_s, end_s), green, labelled
// "steady state 0.2:0.8 (60 requests)".
ShadedBand SteadyStateBand(const SteadyStateWindow& window);

// The warm-ups' sends, from the first to t0 (grey), labelled "warm-up
// (10)". None (empty) when no warm-up was sent.
std::vector<ShadedBand> WarmupBands(uint64_t sent, double first_sent_s, double last_sent_s);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_SHADED_BANDS_H_
