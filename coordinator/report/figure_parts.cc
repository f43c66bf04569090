#include "coordinator/report/figure_parts.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/plan/number_format.h"

namespace surge::coordinator::figure_internal {
namespace {

// A chart starts on a log axis when its drawn values span more than this
// factor (Time vs RPS: y; RPS histogram: x).
constexpr double kLogAxisRatio = 100;

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  return absl::StrFormat("%.3g%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// Traffic classes' colours, in class order (then again from the first).
constexpr const char* kClassColors[] = {"#17becf", "#e377c2", "#7f7f7f", "#bcbd22",
                                        "#393b79", "#ad494a", "#637939", "#7b4173"};

}  // namespace

const char* ClassColor(size_t c) { return kClassColors[c % std::size(kClassColors)]; }

// "n requests (p%)".
std::string CountOf(uint64_t part, uint64_t whole) {
  return absl::StrCat(FormatCount(part), part == 1 ? " request (" : " requests (",
                      Percent(part, whole), " of ", FormatCount(whole), ")");
}

std::string DrawnNote(uint64_t drawn, uint64_t full, const std::string& rule) {
  if (drawn == full) return absl::StrCat("all ", FormatCount(full), " points drawn");
  return absl::StrCat(FormatCount(drawn), " of ", FormatCount(full), " points drawn (", rule, ")");
}

std::string BinsNote(const Histogram& h) {
  if (h.bins.count == 0) return "no values";
  return absl::StrCat(h.bins.count, h.bins.count == 1 ? " bin" : " bins", " of width ",
                      absl::StrFormat("%.4g", h.bins.width), h.bins.log10 ? " in log10 units" : "",
                      " (Freedman–Diaconis rule", h.bins.log10 ? " on log10 values" : "",
                      ", clamped to ", kMinHistogramBins, "–", kMaxHistogramBins, " bins)");
}

// True when positive values from lo to hi span more than kLogAxisRatio.
bool WantsLogAxis(double lo, double hi) { return lo > 0 && hi / lo > kLogAxisRatio; }

absl::Status ValidatePlan(const ArrivalSchedule& plan) {
  const size_t n = plan.offset_s.size();
  if (n == 0) return absl::InvalidArgumentError("the plan has no requests");
  if (plan.rate_rps.size() != n || plan.interval_s.size() != n || plan.anomaly.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan columns differ in length: offset_s ", n, ", rate_rps ", plan.rate_rps.size(),
        ", interval_s ", plan.interval_s.size(), ", anomaly ", plan.anomaly.size()));
  }
  return absl::OkStatus();
}

// A trace of `spec` drawing `points`, which stand for `full_count` values.
FigureTrace MakeTrace(const TraceSpec& spec, XySeries points, uint64_t full_count, RowText text) {
  FigureTrace tr;
  tr.name = spec.name;
  tr.chart = spec.chart;
  tr.kind = spec.kind;
  tr.color = spec.color;
  tr.dash = spec.dash;
  tr.line_shape = spec.line_shape;
  tr.line_width = spec.line_width;
  tr.symbol = spec.symbol;
  tr.marker_size = spec.marker_size;
  tr.hover = spec.hover;
  tr.points = std::move(points);
  tr.full_count = full_count;
  tr.row = {kChartGroups[spec.chart],
            tr.name,
            text.meaning.empty() ? std::string(spec.meaning) : std::move(text.meaning),
            text.computation.empty() ? std::string(spec.computation) : std::move(text.computation),
            std::move(text.criterion),
            std::move(text.appearance)};
  return tr;
}

// The bars of `h` as a trace of `spec` (x = bin centre, y = count).
FigureTrace BarTrace(const TraceSpec& spec, const Histogram& h, uint64_t full_count, RowText text) {
  XySeries points;
  std::vector<double> widths;
  for (int k = 0; k < h.bins.count; ++k) {
    points.Add(h.Center(k), static_cast<double>(h.counts[static_cast<size_t>(k)]));
    widths.push_back(h.Width(k));
  }
  FigureTrace tr = MakeTrace(spec, std::move(points), full_count, std::move(text));
  tr.bar_widths = std::move(widths);
  return tr;
}

// "<look>; <note>".
std::string Look(const TraceSpec& spec, const std::string& note) {
  return absl::StrCat(spec.look, "; ", note);
}

FigureChart TimeVsRpsChart() {
  return {.title = kTimeVsRpsTitle,
          .legend_title = kGroupTime,
          .x_title = "Time (s)",
          .y_title = "RPS (requests/s)",
          .y_log_toggle = true,
          .time_axis = true};
}

// Picks chart 0's initial y axis type from its drawn values.
void ChooseTimeAxis(RpsFigure& fig) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = 0;
  for (const FigureTrace& tr : fig.traces) {
    if (tr.chart != 0) continue;
    for (double y : tr.points.y) {
      if (y > 0 && std::isfinite(y)) {
        lo = std::min(lo, y);
        hi = std::max(hi, y);
      }
    }
  }
  fig.charts[0].y_log = WantsLogAxis(lo, hi);
}

XySeries StepsOf(const RateBinner& bins, uint64_t events, const std::vector<double>& edges) {
  XySeries s;
  if (events < 2) return s;
  const std::vector<double> rate = bins.Rates();
  for (size_t k = 0; k < rate.size(); ++k) s.Add(edges[k], rate[k]);
  s.Add(edges.back(), rate.back());
  return s;
}

}  // namespace surge::coordinator::figure_internal
