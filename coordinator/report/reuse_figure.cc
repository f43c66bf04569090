#include "coordinator/report/reuse_figure.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/plan/number_format.h"
#include "coordinator/report/figure_parts.h"

namespace surge::coordinator {
namespace {

using figure_internal::kGreen;
using figure_internal::kGroupReuse;
using figure_internal::kOrange;
using figure_internal::kReuseChart;
using figure_internal::MakeTrace;
using figure_internal::TraceSpec;

constexpr TraceSpec kMeasuredReuseSpec = {
    .name = kMeasuredReuseName,
    .chart = kReuseChart,
    .kind = TraceKind::kLine,
    .color = kOrange,
    .hover = "sent from %{x:.4g} s<br>measured reuse %{y:.3g}%",
    .meaning = "The share of prompt tokens the server found in its prefix cache, by send time "
               "(usage.prompt_tokens_details.cached_tokens).",
    .look = "Orange step line",
    .line_shape = "hv",
    .line_width = 2};
constexpr TraceSpec kPlannedReuseSpec = {
    .name = kPlannedReuseName,
    .chart = kReuseChart,
    .kind = TraceKind::kLine,
    .color = kGreen,
    .hover = "planned reuse %{y:.3g}%",
    .meaning = "The share of the plan's prompt tokens that repeat, in whole blocks, a prefix "
               "sent earlier: what an unbounded prefix cache would hit.",
    .look = "Green dashed line",
    .dash = "dash",
    .line_width = 2};

// Σ cached / Σ input per bin of `width` s from `lo`, as step points.
XySeries BinnedReuse(std::span<const ReuseSample> samples, double lo, double hi, double width) {
  const size_t bins = std::max<size_t>(1, static_cast<size_t>(std::ceil((hi - lo) / width)));
  std::vector<double> cached(bins, 0), input(bins, 0);
  for (const ReuseSample& s : samples) {
    size_t b = static_cast<size_t>(std::max(0.0, std::floor((s.sent_s - lo) / width)));
    b = std::min(b, bins - 1);
    cached[b] += s.cached_tokens;
    input[b] += s.input_tokens;
  }
  XySeries out;
  double last = 0;
  for (size_t b = 0; b < bins; ++b) {
    if (input[b] == 0) continue;  // no reported request sent in this bin
    last = 100.0 * cached[b] / input[b];
    out.Add(lo + static_cast<double>(b) * width, last);
  }
  if (out.size() > 0) out.Add(std::min(hi, lo + static_cast<double>(bins) * width), last);
  return out;
}

}  // namespace

void AddReuseChart(const ReuseSeries& reuse, RpsFigure& fig) {
  if (reuse.samples.empty() || fig.instant || fig.charts.size() != kReuseChart) return;
  double lo = 0, hi = 0;
  uint64_t cached = 0, input = 0;
  for (const ReuseSample& s : reuse.samples) {
    lo = std::min(lo, s.sent_s);
    hi = std::max(hi, s.sent_s);
    cached += s.cached_tokens;
    input += s.input_tokens;
  }
  double width = fig.actual.has_value() ? fig.actual->rate_bin_width_s : 0.0;
  if (!std::isfinite(width) || width <= 0) width = std::max(hi - lo, 1e-3);
  hi = std::max(hi, lo + width);
  const double overall = input == 0 ? 0.0 : 100.0 * static_cast<double>(cached) / input;
  fig.charts.push_back({.title = absl::StrFormat("%s (measured %.1f%%%s)", kReuseTitle, overall,
                                                 reuse.planned_reuse.has_value()
                                                     ? absl::StrFormat(", planned %.1f%%",
                                                                       100.0 * *reuse.planned_reuse)
                                                     : std::string()),
                        .legend_title = kGroupReuse,
                        .x_title = "Time (s)",
                        .y_title = "Reuse (% of prompt tokens)",
                        .time_axis = true});
  const uint64_t n = reuse.samples.size();
  const std::string width_text = FormatShort(width);
  fig.traces.push_back(MakeTrace(
      kMeasuredReuseSpec, BinnedReuse(reuse.samples, lo, hi, width), n,
      {.criterion = absl::StrCat("The ", FormatCount(n),
                                 " OK requests whose server reported cached_tokens; overall ",
                                 absl::StrFormat("%.2f", overall), "%."),
       .appearance = std::string(kMeasuredReuseSpec.look),
       .computation = absl::StrCat("Σ cached_tokens ÷ Σ input_tokens of the requests sent in each ",
                                   width_text, " s bin (the rate chart's bins), × 100.")}));
  if (reuse.planned_reuse.has_value()) {
    XySeries line;
    line.Add(lo, 100.0 * *reuse.planned_reuse);
    line.Add(hi, 100.0 * *reuse.planned_reuse);
    fig.traces.push_back(MakeTrace(
        kPlannedReuseSpec, std::move(line), 1,
        {.criterion = "The whole plan.",
         .appearance = std::string(kPlannedReuseSpec.look),
         .computation = "Σ shared tokens ÷ Σ prompt tokens of the plan, × 100 (a constant)."}));
  }
}

}  // namespace surge::coordinator
