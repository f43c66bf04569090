#include "coordinator/report/session_figure.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/stats.h"
#include "coordinator/plan/number_format.h"
#include "coordinator/report/figure_parts.h"

namespace surge::coordinator {
namespace {

using figure_internal::kBlue;
using figure_internal::kGreen;
using figure_internal::kOrange;
using figure_internal::kPurple;
using figure_internal::MakeTrace;
using figure_internal::StepsOf;
using figure_internal::TraceSpec;

inline constexpr char kGroupSessions[] = "Sessions";

constexpr TraceSpec kTurnsSentSpec = {
    .name = kTurnsSentName,
    .chart = 0,  // set when added
    .kind = TraceKind::kLine,
    .color = kOrange,
    .hover = "from %{x:.4g} s<br>%{y:.4g} turns/s sent",
    .meaning = "Every turn of every session sent, by actual send time: the load the server saw.",
    .look = "Orange step line",
    .line_shape = "hv",
    .line_width = 2};
constexpr TraceSpec kStartsPlannedSpec = {
    .name = kStartsPlannedName,
    .chart = 0,
    .kind = TraceKind::kLine,
    .color = kGreen,
    .hover = "from %{x:.4g} s<br>%{y:.4g} session starts/s planned",
    .meaning =
        "The plan: the session starts' rate. Later turns are not planned ahead: each is "
        "due its think time after the previous turn's answer ended.",
    .look = "Green dashed step line",
    .dash = "dash",
    .line_shape = "hv",
    .line_width = 2};
constexpr TraceSpec kTtftP50Spec = {
    .name = kTurnTtftP50Name,
    .chart = 0,
    .kind = TraceKind::kLine,
    .color = kBlue,
    .hover = "turn %{x}<br>TTFT p50 %{y:.4g} ms",
    .meaning = "Median TTFT of the turns with this number: each resends the whole history.",
    .look = "Blue line",
    .line_width = 2};
constexpr TraceSpec kTtftP90Spec = {
    .name = kTurnTtftP90Name,
    .chart = 0,
    .kind = TraceKind::kLine,
    .color = kPurple,
    .hover = "turn %{x}<br>TTFT p90 %{y:.4g} ms",
    .meaning = "90th percentile TTFT of the turns with this number.",
    .look = "Purple dashed line",
    .dash = "dash",
    .line_width = 2};

// Events per second in the rate chart's bins (MakeRateBinner), as steps.
XySeries BinnedRate(const std::vector<double>& at_s, double lo, double hi, double width) {
  RateBinner bins = MakeRateBinner(lo, hi, width);
  for (double t : at_s) bins.Add(t);
  return StepsOf(bins, at_s.size(), bins.Edges());
}

FigureTrace OnChart(FigureTrace trace, size_t chart) {
  trace.chart = chart;
  return trace;
}

void AddRateChart(const std::vector<TurnSample>& samples, const std::vector<double>& starts_s,
                  RpsFigure& fig) {
  std::vector<double> sent;
  sent.reserve(samples.size());
  for (const TurnSample& s : samples) sent.push_back(s.sent_s);
  double lo = 0, hi = 0;
  for (double t : sent) hi = std::max(hi, t);
  for (double t : starts_s) hi = std::max(hi, t);
  double width = fig.actual.has_value() ? fig.actual->rate_bin_width_s : 0.0;
  if (!std::isfinite(width) || width <= 0) width = std::max(hi - lo, 1e-3) / 50;
  hi = std::max(hi, lo + width);
  const size_t chart = fig.charts.size();
  fig.charts.push_back({.title = kTurnRateTitle,
                        .legend_title = kGroupSessions,
                        .x_title = "Time (s)",
                        .y_title = "Per second",
                        .time_axis = true});
  const std::string width_text = FormatShort(width);
  fig.traces.push_back(OnChart(
      MakeTrace(
          kTurnsSentSpec, BinnedRate(sent, lo, hi, width), sent.size(),
          {.criterion = absl::StrCat("The ", FormatCount(sent.size()), " turns sent."),
           .appearance = std::string(kTurnsSentSpec.look),
           .computation = absl::StrCat("Turns sent in each ", width_text,
                                       " s bin (the rate chart's bins) ÷ the bin's length.")}),
      chart));
  fig.traces.push_back(OnChart(
      MakeTrace(kStartsPlannedSpec, BinnedRate(starts_s, lo, hi, width), starts_s.size(),
                {.criterion =
                     absl::StrCat("The plan's ", FormatCount(starts_s.size()), " session starts."),
                 .appearance = std::string(kStartsPlannedSpec.look),
                 .computation = absl::StrCat("Session starts planned in each ", width_text,
                                             " s bin ÷ the bin's length.")}),
      chart));
}

void AddTtftChart(const std::vector<TurnSample>& samples, RpsFigure& fig) {
  std::map<uint32_t, std::vector<double>> by_turn;
  for (const TurnSample& s : samples) {
    if (s.ttft_s > 0) by_turn[s.turn].push_back(s.ttft_s * 1e3);
  }
  if (by_turn.empty()) return;
  XySeries p50, p90;
  uint64_t n = 0;
  for (auto& [turn, ttft_ms] : by_turn) {
    std::sort(ttft_ms.begin(), ttft_ms.end());
    p50.Add(turn + 1, PercentileOfSorted(ttft_ms, 50));
    p90.Add(turn + 1, PercentileOfSorted(ttft_ms, 90));
    n += ttft_ms.size();
  }
  const size_t chart = fig.charts.size();
  fig.charts.push_back({.title = kTurnTtftTitle,
                        .legend_title = kGroupSessions,
                        .x_title = "Turn of the session (1 = the first)",
                        .y_title = "TTFT (ms)"});
  const std::string criterion =
      absl::StrCat("The ", FormatCount(n), " turns with a first token, by turn number.");
  const std::string rule = " (linear interpolation between closest ranks, as the summary).";
  fig.traces.push_back(
      OnChart(MakeTrace(kTtftP50Spec, std::move(p50), n,
                        {.criterion = criterion,
                         .appearance = std::string(kTtftP50Spec.look),
                         .computation = absl::StrCat("Median of the turns' TTFT", rule)}),
              chart));
  fig.traces.push_back(
      OnChart(MakeTrace(kTtftP90Spec, std::move(p90), n,
                        {.criterion = criterion,
                         .appearance = std::string(kTtftP90Spec.look),
                         .computation = absl::StrCat("90th percentile of the turns' TTFT", rule)}),
              chart));
}

}  // namespace

void AddSessionCharts(const std::vector<TurnSample>& samples,
                      const std::vector<double>& start_offsets_s, RpsFigure& fig) {
  if (samples.empty() || fig.instant) return;
  AddRateChart(samples, start_offsets_s, fig);
  AddTtftChart(samples, fig);
}

}  // namespace surge::coordinator
