// The shared clock's results (R-DIST-4) in words and numbers: per worker its
// estimated offset (worker clock − coordinator clock), drift and
// uncertainty, for the summary JSON's run block, the console summary and the
// actual page's run context.
#ifndef SURGE_COORDINATOR_REPORT_CLOCK_SUMMARY_H_
#define SURGE_COORDINATOR_REPORT_CLOCK_SUMMARY_H_

#include <google/protobuf/repeated_ptr_field.h>

#include <string>
#include <vector>

#include "surge/v1/run_facts.pb.h"
#include "surge/v1/wire.pb.h"

namespace surge::coordinator {

using ClockSyncFacts = google::protobuf::RepeatedPtrField<surge::v1::ClockSyncFact>;

// One entry per worker index: worker, reported (false when it never sent an
// estimate; then nothing else), offset, drift (rounded to 0.001 ppm),
// drift_fitted, uncertainty, min_rtt_ns, samples, rejected,
// largest_step_ns, at_coord_ns (the coordinator instant the offset refers
// to); for a simulated clock (test option) also simulated_offset_ns,
// simulated_drift_ppm and offset_error_ns (estimate − truth); for a worker
// on the coordinator's own clock (ClockReport.same_clock: offset, drift and
// uncertainty are exactly 0) also same_clock and measured_offset_ns/_ms
// (what its probes estimated, a check of the estimator).
ClockSyncFacts ClockSyncFactsOf(const std::vector<surge::v1::ClockReport>& clocks);

// One line for people, e.g. "worker 0 +250.012 ms ±0.041 ms, +199.9 ppm;
// worker 1 +0.002 ms ±0.020 ms, -0.3 ppm"; a same-clock worker reads
// "worker 1 same clock (probes measured -0.120 ms)". More than 8 workers:
// the ranges instead. Empty for no entries (a summary written before clock
// sync existed).
std::string ClockSyncText(const ClockSyncFacts& clock_sync);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_CLOCK_SUMMARY_H_
