#include "coordinator/report/shaded_bands.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {

ShadedBand SteadyStateBand(const SteadyStateWindow& w) {
  ShadedBand b;
  b.x0_s = w.start_s;
  b.x1_s = w.end_s;
  b.label = absl::StrCat("steady state ", w.spec, " (", w.requests, " requests)");
  b.hover = absl::StrFormat(
      "Steady state %s: requests planned in [%.3f, %.3f%s s count in the summary's latency and "
      "throughput metrics",
      w.spec, w.start_s, w.end_s, w.includes_end ? "]" : ")");
  return b;
}

std::vector<ShadedBand> WarmupBands(uint64_t sent, double first_sent_s, double last_sent_s) {
  if (sent == 0) return {};
  ShadedBand b;
  b.x0_s = first_sent_s;
  b.x1_s = std::max(0.0, last_sent_s);
  b.color = "rgba(128,128,128,0.15)";
  b.label = absl::StrCat("warm-up (", sent, ")");
  b.hover = absl::StrFormat("%d warm-up requests sent from %.3f s to %.3f s: in no metric", sent,
                            first_sent_s, last_sent_s);
  return {b};
}

}  // namespace surge::coordinator
