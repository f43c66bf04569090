// Warm-up requests (RunConfig.num_warmups; docs/DATASETS.md "Warm-up and
// steady state"): when they are planned. Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_PLAN_WARMUP_H_
#define SURGE_COORDINATOR_PLAN_WARMUP_H_

#include <cstdint>
#include <vector>

namespace surge::coordinator {

// Below this first rate (requests/s) the plan is in instant mode and the
// warm-ups are spread over the second before t0 instead.
inline constexpr double kWarmupMinRateRps = 0.1;

// The seconds between two warm-ups: 1 / `first_rate_rps` (the plan's first
// rate), or 1 / `count` (the `count` warm-ups spread evenly over the second
// before t0) when that rate is below kWarmupMinRateRps, infinite or not a
// number (instant mode). 0 when count is 0.
double WarmupSpacingS(uint32_t count, double first_rate_rps);

// Planned offsets of the `count` warm-ups, ns after t0, increasing and
// negative: warm-up s is planned at −(count − s) · spacing, so the last one
// is one spacing before t0 and the plan's own cadence goes on from there.
// Each offset is rounded to the nanosecond from the exact product.
std::vector<int64_t> WarmupOffsetsNs(uint32_t count, double first_rate_rps);

// The seed of the warm-ups' own payload draws, derived from the run seed so
// that they are reproducible but are not the plan's prompts.
uint64_t WarmupPayloadSeed(uint64_t run_seed);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_WARMUP_H_
