#include "coordinator/report/clock_summary.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace surge::coordinator {

nlohmann::json ClockSyncJson(const std::vector<surge::v1::ClockReport>& clocks) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t k = 0; k < clocks.size(); ++k) {
    const surge::v1::ClockReport& c = clocks[k];
    nlohmann::json w = {{"worker", k}, {"reported", c.samples() > 0}};
    if (c.samples() > 0) {
      w["offset_ns"] = c.offset_ns();
      w["offset_ms"] = c.offset_ns() / 1e6;
      w["drift_ppm"] = std::round(c.drift_ppm() * 1000) / 1000;
      w["drift_fitted"] = c.drift_fitted();
      w["uncertainty_ns"] = c.uncertainty_ns();
      w["uncertainty_ms"] = c.uncertainty_ns() / 1e6;
      w["min_rtt_ns"] = c.min_rtt_ns();
      w["samples"] = c.samples();
      w["rejected"] = c.rejected();
      w["largest_step_ns"] = c.largest_step_ns();
      w["at_coord_ns"] = c.ref_coord_ns();
      if (c.same_clock()) {
        w["same_clock"] = true;
        w["measured_offset_ns"] = c.measured_offset_ns();
        w["measured_offset_ms"] = c.measured_offset_ns() / 1e6;
      }
      if (c.simulated()) {
        w["simulated_offset_ns"] = c.simulated_offset_ns();
        w["simulated_drift_ppm"] = c.simulated_drift_ppm();
        w["offset_error_ns"] = c.offset_ns() - c.simulated_offset_ns();
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

std::string ClockSyncText(const nlohmann::json& clock_sync) {
  if (!clock_sync.is_array() || clock_sync.empty()) return "";
  std::vector<std::string> parts;
  double lo_ms = 0, hi_ms = 0, max_u_ms = 0, lo_ppm = 0, hi_ppm = 0;
  size_t reported = 0;
  for (const auto& w : clock_sync) {
    if (!w.is_object() || !w.value("reported", false)) {
      parts.push_back(absl::StrCat("worker ", w.value("worker", -1), " no estimate"));
      continue;
    }
    const double off = w.value("offset_ms", 0.0);
    const double u = w.value("uncertainty_ms", 0.0);
    const double ppm = w.value("drift_ppm", 0.0);
    lo_ms = reported == 0 ? off : std::min(lo_ms, off);
    hi_ms = reported == 0 ? off : std::max(hi_ms, off);
    lo_ppm = reported == 0 ? ppm : std::min(lo_ppm, ppm);
    hi_ppm = reported == 0 ? ppm : std::max(hi_ppm, ppm);
    max_u_ms = std::max(max_u_ms, u);
    ++reported;
    std::string part =
        w.value("same_clock", false)
            ? absl::StrFormat("worker %d same clock (probes measured %+.3f ms)",
                              w.value("worker", -1), w.value("measured_offset_ms", 0.0))
            : absl::StrFormat("worker %d %+.3f ms ±%.3f ms, %+.1f ppm", w.value("worker", -1), off,
                              u, ppm);
    if (w.contains("simulated_offset_ns")) {
      absl::StrAppendFormat(&part, " (simulated %+.3f ms, %+.1f ppm)",
                            w.value("simulated_offset_ns", int64_t{0}) / 1e6,
                            w.value("simulated_drift_ppm", 0.0));
    }
    parts.push_back(std::move(part));
  }
  if (clock_sync.size() <= 8 || reported == 0) return absl::StrJoin(parts, "; ");
  return absl::StrFormat(
      "%d workers: offset %+.3f to %+.3f ms, uncertainty ≤ %.3f ms, drift %+.1f to %+.1f ppm",
      static_cast<int>(reported), lo_ms, hi_ms, max_u_ms, lo_ppm, hi_ppm);
}

}  // namespace surge::coordinator
