#include "coordinator/report/rps_figure.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/plan/number_format.h"
#include "coordinator/report/figure_parts.h"

namespace surge::coordinator {
namespace figure_internal {
namespace {

// Anomaly triangles on the histograms sit this far above the highest bar.
constexpr double kAboveBars = 1.12;

constexpr char kTimeRpsHover[] = "t = %{x:.4f} s<br>RPS = %{y:.4g}";
constexpr char kTriangle[] = "triangle-up";

constexpr TraceSpec kNormalRpsSpec = {
    .name = kNormalRpsName,
    .chart = kTimeChart,
    .kind = TraceKind::kLine,
    .color = kBlue,
    .hover = kTimeRpsHover,
    .meaning = "Planned send rate of the requests with no anomaly.",
    .computation = "RPS_i = 1/Δ_i drawn at x = t_i (planned offset, s after t0).",
    .look = "Blue line"};
constexpr TraceSpec kTimingOnTimeSpec = {
    .name = kTimingAnomalyName,
    .chart = kTimeChart,
    .kind = TraceKind::kMarkers,
    .color = kRed,
    .hover = kTimeRpsHover,
    .meaning =
        "Planned interval too short to be sent reliably; the request is still sent as "
        "planned.",
    .computation = "RPS_i = 1/Δ_i drawn at x = t_i.",
    .look = "Red triangles",
    .symbol = kTriangle};
constexpr TraceSpec kBurstinessOnTimeSpec = {
    .name = kBurstinessAnomalyName,
    .chart = kTimeChart,
    .kind = TraceKind::kMarkers,
    .color = kYellow,
    .hover = kTimeRpsHover,
    .meaning =
        "The Gamma-distributed interval deviates strongly from the expected interval; the "
        "request is still sent as planned.",
    .computation = "RPS_i = 1/Δ_i drawn at x = t_i; expected interval e_i = 1/λ_i.",
    .look = "Yellow squares",
    .symbol = "square",
    .marker_size = 7};
// Named by EwmaTraceName (the window is in the name).
constexpr TraceSpec kEwmaSpec = {.name = "",
                                 .chart = kTimeChart,
                                 .kind = TraceKind::kLine,
                                 .color = kPurple,
                                 .hover = "t = %{x:.4f} s<br>EWMA = %{y:.4g}",
                                 .meaning = "Smoothed trend of Normal RPS (noise removed).",
                                 .look = "Purple line",
                                 .line_width = 2};
// Named, hovered and explained by the traffic's description.
constexpr TraceSpec kTheoreticalSpec = {.name = "",
                                        .chart = kTimeChart,
                                        .kind = TraceKind::kLine,
                                        .color = kGreen,
                                        .hover = "",
                                        .look = "Green dashed line",
                                        .dash = "dash",
                                        .line_width = 2};
// A traffic class's intended rate: named, hovered and explained by the
// class's traffic; coloured by ClassColor.
constexpr TraceSpec kClassRateSpec = {.name = "",
                                      .chart = kTimeChart,
                                      .kind = TraceKind::kLine,
                                      .color = "",
                                      .hover = "",
                                      .look =
                                          "Solid line in the class's colour (the same on "
                                          "both pages)",
                                      .line_width = 2};
constexpr TraceSpec kAllClassesRateSpec = {
    .name = kAllClassesRateName,
    .chart = kTimeChart,
    .kind = TraceKind::kLine,
    .color = "#333333",
    .hover = "t = %{x:.4f} s<br>Σ λ = %{y:.4g}",
    .meaning = "The intended rate of all traffic classes together: the sum of their rates.",
    .computation =
        "At every planned offset t_i: the sum over the classes of the λ of each "
        "class's latest planned request at or before t_i; a class counts from its "
        "first to its last planned request.",
    .look = "Dark grey dotted line",
    .dash = "dot",
    .line_width = 2};
constexpr TraceSpec kNormalCountSpec = {
    .name = kNormalRequestCountName,
    .chart = kRpsHistChart,
    .kind = TraceKind::kBars,
    .color = kGreen,
    .hover = "RPS ≈ %{x:.4g}<br>count = %{y}",
    .meaning =
        "How many requests are planned at each rate (burstiness anomalies count as normal "
        "here, to show β's effect).",
    .look = "Green bars (pre-binned)"};
constexpr TraceSpec kTimingOnRpsSpec = {
    .name = kTimingAnomalyName,
    .chart = kRpsHistChart,
    .kind = TraceKind::kMarkers,
    .color = kRed,
    .hover = "RPS = %{x:.4g}",
    .meaning = "Requests whose planned interval is too short; they sit at very high RPS.",
    .look = "Red triangles above the bars",
    .symbol = kTriangle};
constexpr TraceSpec kNormalIntervalsSpec = {
    .name = kNormalIntervalsName,
    .chart = kIntervalChart,
    .kind = TraceKind::kBars,
    .color = kPurple,
    .hover = "Δ ≈ %{x:.4g} s<br>count = %{y}",
    .meaning =
        "Distribution of the planned intervals; Gamma-shaped when β > 0 (burstiness "
        "anomalies count as normal here).",
    .look = "Purple bars (pre-binned)"};
constexpr TraceSpec kTimingOnIntervalSpec = {
    .name = kTimingAnomalyName,
    .chart = kIntervalChart,
    .kind = TraceKind::kMarkers,
    .color = kRed,
    .hover = "Δ = %{x:.3g} s",
    .meaning = "Requests whose planned interval is under 1 ms.",
    .look = "Red triangles near x = 0",
    .symbol = kTriangle};
double AboveBars(const Histogram& h) {
  const uint64_t max = h.Max();
  return max == 0 ? 1.0 : kAboveBars * static_cast<double>(max);
}

// ---- The expected charts ----------------------------------------------------

// What the expected charts draw, gathered in one pass over the plan.
struct ExpectedPoints {
  XySeries normal;     // decimated (t_i, 1/Δ_i) of normal requests
  XySeries ewma;       // decimated EWMA of those
  XySeries rate_line;  // decimated (t_i, λ_i) when the theoretical line is the plan's
  XySeries timing;     // stratified (t_i, 1/Δ_i) of timing anomalies with Δ_i > 0
  XySeries burstiness;
  std::vector<double> timing_intervals;     // Δ_i of the drawn timing anomalies
  std::vector<double> histogram_intervals;  // Δ_i of normal requests and burstiness anomalies
};

// Decimated (t_i, λ_i) of the plan's requests, or of traffic class `only`'s
// alone.
XySeries PlanRateLine(const ArrivalSchedule& plan, std::optional<size_t> only) {
  const size_t n = plan.size();
  auto in = [&](size_t i) { return !only.has_value() || plan.class_index[i] == *only; };
  size_t first = n, last = 0;
  uint64_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!in(i)) continue;
    first = std::min(first, i);
    last = i;
    ++count;
  }
  if (count == 0) return {};
  MinMaxDecimator dec(plan.offset_s[first], plan.offset_s[last], count, kMaxLinePoints);
  for (size_t i = 0; i < n; ++i) {
    if (in(i)) dec.Add(plan.offset_s[i], plan.rate_rps[i]);
  }
  return dec.Finish();
}

// Counts every class (ExpectedStats) and the EWMA window.
void CountClasses(const ArrivalSchedule& plan, ExpectedStats& st) {
  st.requests = plan.size();
  st.normal = plan.Count(Anomaly::kNormal);
  st.timing = plan.Count(Anomaly::kTiming);
  st.burstiness = plan.Count(Anomaly::kBurstiness);
  st.ewma_window = EwmaWindow(st.normal);
}

ExpectedPoints GatherExpectedPoints(const ArrivalSchedule& plan, ExpectedStats& st) {
  const size_t n = plan.size();
  size_t first_normal = n;
  size_t last_normal = 0;
  for (size_t i = 0; i < n; ++i) {
    if (plan.anomaly[i] != Anomaly::kNormal) continue;
    if (first_normal == n) first_normal = i;
    last_normal = i;
  }
  const double x_lo = first_normal < n ? plan.offset_s[first_normal] : 0;
  const double x_hi = first_normal < n ? plan.offset_s[last_normal] : 0;
  MinMaxDecimator normal_dec(x_lo, x_hi, st.normal, kMaxLinePoints);
  MinMaxDecimator ewma_dec(x_lo, x_hi, st.normal, kMaxLinePoints);
  EwmaSmoother ewma(st.ewma_window);
  StratifiedPicker timing(st.timing, kMaxAnomalyPoints);
  StratifiedPicker burstiness(st.burstiness, kMaxAnomalyPoints);
  ExpectedPoints out;
  out.histogram_intervals.reserve(st.normal + st.burstiness);
  for (size_t i = 0; i < n; ++i) {
    const double t = plan.offset_s[i];
    const double dt = plan.interval_s[i];
    switch (plan.anomaly[i]) {
      case Anomaly::kNormal:
        normal_dec.Add(t, 1.0 / dt);
        ewma_dec.Add(t, ewma.Add(1.0 / dt));
        out.histogram_intervals.push_back(dt);
        break;
      case Anomaly::kBurstiness:
        out.histogram_intervals.push_back(dt);
        if (burstiness.Take()) out.burstiness.Add(t, 1.0 / dt);
        break;
      case Anomaly::kTiming:
        if (!(dt > 0)) ++st.infinite_rps;
        if (timing.Take()) {
          if (dt > 0) out.timing.Add(t, 1.0 / dt);
          out.timing_intervals.push_back(dt);
        }
        break;
      case Anomaly::kInstant:
        break;
    }
  }
  out.normal = normal_dec.Finish();
  out.ewma = ewma_dec.Finish();
  const std::optional<TheoreticalRate>& line = plan.traffic.description.theoretical;
  if (line.has_value() && line->curve.empty()) out.rate_line = PlanRateLine(plan, std::nullopt);
  return out;
}

// The two histograms of the planned intervals: of Δ (R-PLOT-5) and, in the
// same buffer, of 1/Δ (R-PLOT-4). The RPS chart uses a log axis, and bins
// equal on it, when its values, the drawn timing anomalies included, span
// more than kLogAxisRatio.
struct PlanHistograms {
  Histogram intervals;
  Histogram rps;
  bool rps_log = false;
};

PlanHistograms BuildPlanHistograms(ExpectedPoints& points) {
  std::vector<double>& hist = points.histogram_intervals;
  PlanHistograms out;
  out.intervals = BuildHistogram(hist);
  double rps_lo = std::numeric_limits<double>::infinity();
  double rps_hi = 0;
  for (double& v : hist) {
    v = 1.0 / v;
    rps_lo = std::min(rps_lo, v);
    rps_hi = std::max(rps_hi, v);
  }
  for (double dt : points.timing_intervals) {
    if (dt > 0) rps_hi = std::max(rps_hi, 1.0 / dt);
  }
  out.rps_log = WantsLogAxis(rps_lo, rps_hi);
  out.rps = BuildHistogram(hist, out.rps_log);
  std::vector<double>().swap(hist);
  return out;
}

void AddExpectedChartFrames(const ResolvedTraffic& traffic, bool rps_log, RpsFigure& fig) {
  fig.charts.push_back(TimeVsRpsChart());
  fig.charts.push_back({.title = kRpsHistogramTitle,
                        .legend_title = kGroupRpsHist,
                        .x_title = rps_log ? "RPS (requests/s, log scale)" : "RPS (requests/s)",
                        .y_title = "Request Count",
                        .x_log = rps_log});
  fig.charts.push_back({.title = GammaChartTitle(traffic.burstiness),
                        .legend_title = kGroupGamma,
                        .x_title = "Interval (s)",
                        .y_title = "Request Count"});
}

// The criterion of the timing-anomaly rows (the same on every chart).
std::string TimingCriterion(const ExpectedStats& st) {
  return absl::StrCat("Δ_i < 1 ms; takes priority over the burstiness class. ",
                      CountOf(st.timing, st.requests),
                      st.infinite_rps > 0 ? absl::StrCat("; ", FormatCount(st.infinite_rps),
                                                         " with Δ_i = 0 (infinite RPS) not drawn")
                                          : "");
}

// A trend needs at least two points; one point smoothed is itself.
FigureTrace EwmaTrace(const ExpectedStats& st, XySeries points) {
  const bool too_few = st.normal < 2;
  if (too_few) points = XySeries();
  const std::string drawn = DrawnNote(points.size(), st.normal, kDecimationRule);
  FigureTrace tr = MakeTrace(
      kEwmaSpec, std::move(points), st.normal,
      {.criterion =
           absl::StrCat("W from the length of the Normal RPS series (", FormatCount(st.normal),
                        " points): 20 when ≤ 1,000, 50 when ≤ 10,000, 100 when ≤ "
                        "100,000, else 200."),
       .appearance = too_few
                         ? absl::StrCat("Not drawn: not enough points (", FormatCount(st.normal),
                                        st.normal == 1 ? " normal request" : " normal requests",
                                        "; an EWMA needs at least 2)")
                         : Look(kEwmaSpec, drawn),
       .computation = absl::StrCat(
           "EWMA_0 = RPS_0, EWMA_j = α·RPS_j + (1−α)·EWMA_{j−1} over the Normal RPS series in "
           "time order, α = 2/(W+1) = ",
           absl::StrFormat("%.4g", EwmaAlpha(st.ewma_window)), ", W = ", st.ewma_window, ".")});
  tr.name = EwmaTraceName(st.ewma_window);
  tr.row.item = tr.name;
  return tr;
}

// The traffic's own intended-rate line: its curve, or the plan's λ_i.
FigureTrace TheoreticalTrace(TraceSpec spec, const TheoreticalRate& line, XySeries plan_rates,
                             uint64_t n) {
  spec.name = line.name.c_str();
  spec.hover = line.hover.c_str();
  spec.meaning = line.meaning.c_str();
  spec.computation = line.computation.c_str();
  if (line.curve.empty()) {
    const std::string drawn = DrawnNote(plan_rates.size(), n, kDecimationRule);
    return MakeTrace(spec, std::move(plan_rates), n,
                     {.criterion = line.criterion, .appearance = Look(spec, drawn)});
  }
  XySeries points;
  for (const RatePoint& p : line.curve) points.Add(p.t_s, p.rate_rps);
  return MakeTrace(spec, std::move(points), line.curve.size(),
                   {.criterion = line.criterion, .appearance = spec.look});
}

// ---- Traffic classes on chart 0 ----------------------------------------------

// A class's line when its traffic draws none of its own (a constant rate).
TheoreticalRate PlannedRateLine() {
  return {.name = "",
          .hover = "t = %{x:.4f} s<br>λ = %{y:.4g}",
          .meaning = "the planned rate λ_i of its requests, without their randomness.",
          .computation =
              "λ_i drawn at x = t_i (planned offset, s after t0) for the class's "
              "requests.",
          .criterion = "",
          .curve = {}};
}

// Class c's intended rate, as a single-class page of its keys draws it (its
// traffic's line, else its λ_i), named by the class, in its colour.
FigureTrace ClassRateTrace(const ArrivalSchedule& plan, size_t c) {
  const TrafficClassPlan& k = plan.classes[c];
  TheoreticalRate line = k.traffic.description.theoretical.value_or(PlannedRateLine());
  line.name = k.name;
  line.meaning = absl::StrCat("Class ", k.name, ": ", line.meaning);
  line.criterion =
      absl::StrCat("Class ", k.name, ": ", CountOf(k.requests, plan.size()), ". ", line.criterion);
  TraceSpec spec = kClassRateSpec;
  spec.color = ClassColor(c);
  XySeries rates = line.curve.empty() ? PlanRateLine(plan, c) : XySeries();
  return TheoreticalTrace(spec, line, std::move(rates), k.requests);
}

// Σ over the classes of each one's latest λ at every planned offset t_i, a
// class counting from its first to its last planned request; decimated.
XySeries AllClassesRateLine(const ArrivalSchedule& plan) {
  const size_t n = plan.size();
  std::vector<size_t> last(plan.classes.size(), 0);
  for (size_t i = 0; i < n; ++i) last[plan.class_index[i]] = i;
  std::vector<double> current(plan.classes.size(), 0);
  double sum = 0;
  MinMaxDecimator dec(plan.offset_s.front(), plan.offset_s.back(), n, kMaxLinePoints);
  for (size_t i = 0; i < n; ++i) {
    const size_t c = plan.class_index[i];
    sum += plan.rate_rps[i] - current[c];
    current[c] = plan.rate_rps[i];
    dec.Add(plan.offset_s[i], sum);
    if (last[c] == i) {
      sum -= current[c];
      current[c] = 0;
    }
  }
  return dec.Finish();
}

// With traffic classes: a line per class and their sum, after the total's
// traces of chart 0.
void AddClassRateTraces(const ArrivalSchedule& plan, RpsFigure& fig) {
  if (plan.classes.empty()) return;
  for (size_t c = 0; c < plan.classes.size(); ++c) fig.traces.push_back(ClassRateTrace(plan, c));
  const uint64_t n = plan.size();
  XySeries sum = AllClassesRateLine(plan);
  const std::string drawn = DrawnNote(sum.size(), n, kDecimationRule);
  fig.traces.push_back(
      MakeTrace(kAllClassesRateSpec, std::move(sum), n,
                {.criterion = absl::StrCat("All ", FormatCount(n), " planned requests of the ",
                                           plan.classes.size(), " classes."),
                 .appearance = Look(kAllClassesRateSpec, drawn)}));
}

// Chart 0: Time vs RPS (R-PLOT-3).
void AddTimeTraces(const ArrivalSchedule& plan, const ExpectedStats& st, ExpectedPoints& points,
                   RpsFigure& fig) {
  const uint64_t total = st.requests;
  const std::string normal_drawn = DrawnNote(points.normal.size(), st.normal, kDecimationRule);
  fig.traces.push_back(MakeTrace(
      kNormalRpsSpec, std::move(points.normal), st.normal,
      {.criterion =
           absl::StrCat("Δ_i ≥ 1 ms and |Δ_i − 1/λ_i|·λ_i ≤ 0.5 (the second only when β > 0). ",
                        CountOf(st.normal, total)),
       .appearance = Look(kNormalRpsSpec, normal_drawn)}));
  fig.traces.push_back(MakeTrace(
      kTimingOnTimeSpec, std::move(points.timing), st.timing,
      {.criterion = TimingCriterion(st),
       .appearance =
           Look(kTimingOnTimeSpec, DrawnNote(std::min<uint64_t>(st.timing, kMaxAnomalyPoints),
                                             st.timing, kStratifiedRule))}));
  const std::string burst_drawn =
      DrawnNote(points.burstiness.size(), st.burstiness, kStratifiedRule);
  fig.traces.push_back(MakeTrace(
      kBurstinessOnTimeSpec, std::move(points.burstiness), st.burstiness,
      {.criterion =
           absl::StrCat("|Δ_i − e_i|/e_i > 0.5 and not a timing anomaly; none when β = 0. ",
                        CountOf(st.burstiness, total)),
       .appearance = Look(kBurstinessOnTimeSpec, burst_drawn)}));
  fig.traces.push_back(EwmaTrace(st, std::move(points.ewma)));
  if (const std::optional<TheoreticalRate>& line = plan.traffic.description.theoretical) {
    fig.traces.push_back(
        TheoreticalTrace(kTheoreticalSpec, *line, std::move(points.rate_line), plan.size()));
  }
  AddClassRateTraces(plan, fig);
}

// Charts 1 and 2: the RPS and interval histograms with the timing
// anomalies above their bars (R-PLOT-4, R-PLOT-5).
void AddHistogramTraces(const ExpectedStats& st, const ExpectedPoints& points,
                        const PlanHistograms& h, RpsFigure& fig) {
  const uint64_t hist_count = st.normal + st.burstiness;
  const std::string hist_criterion =
      absl::StrCat("Normal ∪ burstiness anomalies: ", CountOf(hist_count, st.requests));
  const std::string above =
      absl::StrCat("; y fixed at ", FormatShort(kAboveBars), " × the highest bar");
  fig.traces.push_back(BarTrace(
      kNormalCountSpec, h.rps, hist_count,
      {.criterion = hist_criterion,
       .appearance = kNormalCountSpec.look,
       .computation = absl::StrCat("Histogram of RPS_i = 1/Δ_i; ", BinsNote(h.rps), ".")}));
  XySeries at_rps;
  const double rps_y = AboveBars(h.rps);
  for (double dt : points.timing_intervals) {
    if (dt > 0) at_rps.Add(1.0 / dt, rps_y);
  }
  fig.traces.push_back(MakeTrace(
      kTimingOnRpsSpec, std::move(at_rps), st.timing,
      {.criterion = TimingCriterion(st),
       .appearance = Look(
           kTimingOnRpsSpec,
           DrawnNote(std::min<uint64_t>(st.timing, kMaxAnomalyPoints), st.timing, kStratifiedRule)),
       .computation = absl::StrCat("x = RPS_i = 1/Δ_i", above, ", above the bars.")}));
  fig.traces.push_back(BarTrace(
      kNormalIntervalsSpec, h.intervals, hist_count,
      {.criterion = hist_criterion,
       .appearance = kNormalIntervalsSpec.look,
       .computation = absl::StrCat("Histogram of Δ_i (s); ", BinsNote(h.intervals), ".")}));
  XySeries at_interval;
  const double interval_y = AboveBars(h.intervals);
  for (double dt : points.timing_intervals) at_interval.Add(dt, interval_y);
  const std::string drawn = DrawnNote(at_interval.size(), st.timing, kStratifiedRule);
  fig.traces.push_back(MakeTrace(kTimingOnIntervalSpec, std::move(at_interval), st.timing,
                                 {.criterion = TimingCriterion(st),
                                  .appearance = Look(kTimingOnIntervalSpec, drawn),
                                  .computation = absl::StrCat("x = Δ_i (near 0)", above, ".")}));
}

}  // namespace

void AddExpectedCharts(const ArrivalSchedule& plan, RpsFigure& fig) {
  ExpectedStats& st = fig.expected;
  CountClasses(plan, st);
  ExpectedPoints points = GatherExpectedPoints(plan, st);
  const PlanHistograms histograms = BuildPlanHistograms(points);
  AddExpectedChartFrames(plan.traffic, histograms.rps_log, fig);
  AddTimeTraces(plan, st, points, fig);
  AddHistogramTraces(st, points, histograms, fig);
}

}  // namespace figure_internal

using figure_internal::AddExpectedCharts;
using figure_internal::ChooseTimeAxis;
using figure_internal::ValidatePlan;

const FigureTrace* RpsFigure::Find(size_t chart, std::string_view name) const {
  for (const FigureTrace& tr : traces) {
    if (tr.chart == chart && tr.name == name) return &tr;
  }
  return nullptr;
}

std::string PageTitle(const ResolvedTraffic& traffic) {
  return absl::StrCat(kPageTitlePrefix, traffic.description.short_title);
}

std::string HtmlPageTitle(const RpsFigure& figure) {
  return absl::StrCat(figure.title, figure.actual.has_value() ? " — actual" : " — expected");
}

std::string GammaChartTitle(double burstiness) {
  return absl::StrCat("Expected: Gamma Distribution (burstiness: ", FormatShort(burstiness), ")");
}

std::string EwmaTraceName(int window) { return absl::StrCat(window, "-point EWMA"); }

absl::StatusOr<RpsFigure> BuildExpectedRpsFigure(const ArrivalSchedule& plan) {
  if (plan.traffic.instant) {
    return absl::FailedPreconditionError(
        "no expected plot in instant mode (target rate < 0.1, R-PLOT-0)");
  }
  if (absl::Status s = ValidatePlan(plan); !s.ok()) return s;
  RpsFigure fig;
  fig.title = PageTitle(plan.traffic);
  AddExpectedCharts(plan, fig);
  ChooseTimeAxis(fig);
  return fig;
}

void AddRunEvents(std::vector<RunEvent> events, RpsFigure& fig) {
  std::erase_if(events, [](const RunEvent& e) { return !std::isfinite(e.at_s); });
  for (FigureChart& c : fig.charts) {
    if (!c.time_axis) continue;
    for (const RunEvent& e : events) {
      c.markers.push_back(
          {.x = e.at_s, .label = e.label, .color = kRunEventColor, .hover = e.text});
    }
  }
  for (RunEvent& e : events) fig.events.push_back(std::move(e));
  std::stable_sort(fig.events.begin(), fig.events.end(),
                   [](const RunEvent& a, const RunEvent& b) { return a.at_s < b.at_s; });
}

void AddShadedBands(std::span<const ShadedBand> bands, RpsFigure& fig) {
  for (FigureChart& c : fig.charts) {
    if (!c.time_axis) continue;
    for (const ShadedBand& b : bands) {
      if (std::isfinite(b.x0_s) && std::isfinite(b.x1_s) && b.x1_s > b.x0_s) c.bands.push_back(b);
    }
  }
}

}  // namespace surge::coordinator
