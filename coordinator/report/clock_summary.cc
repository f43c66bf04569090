#include "coordinator/report/clock_summary.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace surge::coordinator {
namespace {

using surge::v1::ClockSyncFact;

ClockSyncFact FactOf(uint64_t worker, const surge::v1::ClockReport& c) {
  ClockSyncFact w;
  w.set_worker(worker);
  w.set_reported(c.samples() > 0);
  if (c.samples() == 0) return w;
  w.set_offset_ns(c.offset_ns());
  w.set_offset_ms(c.offset_ns() / 1e6);
  w.set_drift_ppm(std::round(c.drift_ppm() * 1000) / 1000);
  w.set_drift_fitted(c.drift_fitted());
  w.set_uncertainty_ns(c.uncertainty_ns());
  w.set_uncertainty_ms(c.uncertainty_ns() / 1e6);
  w.set_min_rtt_ns(c.min_rtt_ns());
  w.set_samples(c.samples());
  w.set_rejected(c.rejected());
  w.set_largest_step_ns(c.largest_step_ns());
  w.set_at_coord_ns(c.ref_coord_ns());
  if (c.same_clock()) {
    w.set_same_clock(true);
    w.set_measured_offset_ns(c.measured_offset_ns());
    w.set_measured_offset_ms(c.measured_offset_ns() / 1e6);
  }
  if (c.simulated()) {
    w.set_simulated_offset_ns(c.simulated_offset_ns());
    w.set_simulated_drift_ppm(c.simulated_drift_ppm());
    w.set_offset_error_ns(c.offset_ns() - c.simulated_offset_ns());
  }
  return w;
}

// "worker 0 +250.012 ms ±0.041 ms, +199.9 ppm" (with the simulated truth),
// or "worker 1 same clock (probes measured -0.120 ms)".
std::string WorkerPart(const ClockSyncFact& w) {
  std::string part = w.same_clock()
                         ? absl::StrFormat("worker %d same clock (probes measured %+.3f ms)",
                                           w.worker(), w.measured_offset_ms())
                         : absl::StrFormat("worker %d %+.3f ms ±%.3f ms, %+.1f ppm", w.worker(),
                                           w.offset_ms(), w.uncertainty_ms(), w.drift_ppm());
  if (w.has_simulated_offset_ns()) {
    absl::StrAppendFormat(&part, " (simulated %+.3f ms, %+.1f ppm)", w.simulated_offset_ns() / 1e6,
                          w.simulated_drift_ppm());
  }
  return part;
}

}  // namespace

ClockSyncFacts ClockSyncFactsOf(const std::vector<surge::v1::ClockReport>& clocks) {
  ClockSyncFacts out;
  for (size_t k = 0; k < clocks.size(); ++k) *out.Add() = FactOf(k, clocks[k]);
  return out;
}

std::string ClockSyncText(const ClockSyncFacts& clock_sync) {
  if (clock_sync.empty()) return "";
  std::vector<std::string> parts;
  double lo_ms = 0, hi_ms = 0, max_u_ms = 0, lo_ppm = 0, hi_ppm = 0;
  size_t reported = 0;
  for (const ClockSyncFact& w : clock_sync) {
    if (!w.reported()) {
      parts.push_back(absl::StrCat("worker ", w.worker(), " no estimate"));
      continue;
    }
    const double off = w.offset_ms();
    const double ppm = w.drift_ppm();
    lo_ms = reported == 0 ? off : std::min(lo_ms, off);
    hi_ms = reported == 0 ? off : std::max(hi_ms, off);
    lo_ppm = reported == 0 ? ppm : std::min(lo_ppm, ppm);
    hi_ppm = reported == 0 ? ppm : std::max(hi_ppm, ppm);
    max_u_ms = std::max(max_u_ms, w.uncertainty_ms());
    ++reported;
    parts.push_back(WorkerPart(w));
  }
  if (clock_sync.size() <= 8 || reported == 0) return absl::StrJoin(parts, "; ");
  return absl::StrFormat(
      "%d workers: offset %+.3f to %+.3f ms, uncertainty ≤ %.3f ms, drift %+.1f to %+.1f ppm",
      static_cast<int>(reported), lo_ms, hi_ms, max_u_ms, lo_ppm, hi_ppm);
}

}  // namespace surge::coordinator
