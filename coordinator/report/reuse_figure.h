// The actual page's prefix reuse chart (docs/DATASETS.md "Shared prefixes
// and reuse"): the measured reuse over time, Σ cached_tokens / Σ
// input_tokens of the requests sent in each bin of the rate chart, beside
// the plan's reuse as a reference line. Drawn only when the server reported
// cached tokens. Pure.
#ifndef SURGE_COORDINATOR_REPORT_REUSE_FIGURE_H_
#define SURGE_COORDINATOR_REPORT_REUSE_FIGURE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "coordinator/report/rps_figure.h"

namespace surge::coordinator {

inline constexpr char kReuseTitle[] = "Actual: Prefix Reuse over Time";
inline constexpr char kMeasuredReuseName[] = "Measured prefix reuse";
inline constexpr char kPlannedReuseName[] = "Planned prefix reuse";

// One OK request whose server reported cached_tokens.
struct ReuseSample {
  double sent_s = 0;  // actual send, s after t0
  uint32_t cached_tokens = 0;
  uint32_t input_tokens = 0;
};

// The measured reuse and the plan's.
struct ReuseSeries {
  std::vector<ReuseSample> samples;
  // The plan's reuse, 0..1; unset when the plan has no shared prefixes.
  std::optional<double> planned_reuse;
};

// Adds the reuse chart and its traces to an actual figure that has its
// rate chart (not in instant mode), in bins of the rate chart's width
// (fig.actual->rate_bin_width_s). Nothing without samples.
void AddReuseChart(const ReuseSeries& reuse, RpsFigure& fig);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_REUSE_FIGURE_H_
