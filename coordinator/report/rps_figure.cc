#include "coordinator/report/rps_figure.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/plan/number_format.h"
#include "coordinator/report/radix_sort.h"

namespace surge::coordinator {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Anomaly triangles on the histograms sit this far above the highest bar.
constexpr double kAboveBars = 1.12;
// A chart starts on a log axis when its drawn values span more than this
// factor (Time vs RPS: y; RPS histogram: x).
constexpr double kLogAxisRatio = 100;
// The lateness bars cover p1…p99 instead of min…max when max − min exceeds
// this many times p99 − p1.
constexpr double kLatenessTailFactor = 4;

constexpr char kBlue[] = "#1f77b4";
constexpr char kRed[] = "#d62728";
constexpr char kYellow[] = "#f2c500";
constexpr char kPurple[] = "#9467bd";
constexpr char kGreen[] = "#2ca02c";
constexpr char kOrange[] = "#ff7f0e";
constexpr char kBrown[] = "#8c564b";

constexpr char kGroupTime[] = "Time vs RPS";
constexpr char kGroupRpsHist[] = "RPS vs Request Count";
constexpr char kGroupGamma[] = "Gamma Distribution";
constexpr char kGroupLateness[] = "Send Lateness";
constexpr char kGroupRate[] = "Rate over Time";

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  return absl::StrFormat("%.3g%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// "n requests (p%)".
std::string CountOf(uint64_t part, uint64_t whole) {
  return absl::StrCat(FormatCount(part), part == 1 ? " request (" : " requests (",
                      Percent(part, whole), " of ", FormatCount(whole), ")");
}

std::string DrawnNote(uint64_t drawn, uint64_t full, const std::string& rule) {
  if (drawn == full) return absl::StrCat("all ", FormatCount(full), " points drawn");
  return absl::StrCat(FormatCount(drawn), " of ", FormatCount(full), " points drawn (", rule, ")");
}

const char kStratifiedRule[] = "stratified sampling over time quantiles";
const char kDecimationRule[] = "min/max decimation per time bucket";

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

// Bars of a histogram as a trace.
void FillBars(const Histogram& h, FigureTrace& trace) {
  trace.kind = TraceKind::kBars;
  for (int k = 0; k < h.bins.count; ++k) {
    trace.points.Add(h.Center(k), static_cast<double>(h.counts[static_cast<size_t>(k)]));
    trace.bar_widths.push_back(h.Width(k));
  }
}

double AboveBars(const Histogram& h) {
  const uint64_t max = h.Max();
  return max == 0 ? 1.0 : kAboveBars * static_cast<double>(max);
}

// Adds charts 0..2 and their traces (R-PLOT-3..5, R-PLOT-8).
void AddExpectedCharts(const ArrivalSchedule& plan, RpsFigure& fig) {
  const ResolvedTraffic& traffic = plan.traffic;
  const size_t n = plan.size();
  ExpectedStats& st = fig.expected;
  st.requests = n;
  size_t first_normal = n;
  size_t last_normal = 0;
  for (size_t i = 0; i < n; ++i) {
    switch (plan.anomaly[i]) {
      case Anomaly::kNormal:
        ++st.normal;
        if (first_normal == n) first_normal = i;
        last_normal = i;
        break;
      case Anomaly::kTiming:
        ++st.timing;
        break;
      case Anomaly::kBurstiness:
        ++st.burstiness;
        break;
      case Anomaly::kInstant:
        break;
    }
  }
  st.ewma_window = EwmaWindow(st.normal);

  const double x_lo = first_normal < n ? plan.offset_s[first_normal] : 0;
  const double x_hi = first_normal < n ? plan.offset_s[last_normal] : 0;
  MinMaxDecimator normal_dec(x_lo, x_hi, st.normal, kMaxLinePoints);
  MinMaxDecimator ewma_dec(x_lo, x_hi, st.normal, kMaxLinePoints);
  // The plan's own λ_i, when the traffic's theoretical line is drawn from it.
  const bool rate_line = traffic.description.theoretical.has_value() &&
                         traffic.description.theoretical->curve.empty();
  MinMaxDecimator rate_dec(plan.offset_s.front(), plan.offset_s.back(), rate_line ? n : 0,
                           kMaxLinePoints);
  EwmaSmoother ewma(st.ewma_window);

  const std::vector<uint64_t> t_ranks = StratifiedSampleRanks(st.timing, kMaxAnomalyPoints);
  const std::vector<uint64_t> b_ranks = StratifiedSampleRanks(st.burstiness, kMaxAnomalyPoints);
  size_t t_next = 0, b_next = 0;
  uint64_t t_rank = 0, b_rank = 0;
  XySeries t_time, b_time;
  std::vector<double> t_intervals;  // Δ_i of the drawn timing anomalies
  std::vector<double> hist;         // Δ_i of normal ∪ B (R-PLOT-4/5)
  hist.reserve(st.normal + st.burstiness);

  for (size_t i = 0; i < n; ++i) {
    const double t = plan.offset_s[i];
    const double dt = plan.interval_s[i];
    if (rate_line) rate_dec.Add(t, plan.rate_rps[i]);
    switch (plan.anomaly[i]) {
      case Anomaly::kNormal: {
        const double rps = 1.0 / dt;
        normal_dec.Add(t, rps);
        ewma_dec.Add(t, ewma.Add(rps));
        hist.push_back(dt);
        break;
      }
      case Anomaly::kBurstiness:
        hist.push_back(dt);
        if (b_next < b_ranks.size() && b_ranks[b_next] == b_rank) {
          b_time.Add(t, 1.0 / dt);
          ++b_next;
        }
        ++b_rank;
        break;
      case Anomaly::kTiming:
        if (!(dt > 0)) ++st.infinite_rps;
        if (t_next < t_ranks.size() && t_ranks[t_next] == t_rank) {
          if (dt > 0) t_time.Add(t, 1.0 / dt);
          t_intervals.push_back(dt);
          ++t_next;
        }
        ++t_rank;
        break;
      case Anomaly::kInstant:
        break;
    }
  }

  // R-PLOT-5 histogram of Δ, then (in the same buffer) R-PLOT-4 histogram
  // of 1/Δ. The RPS chart uses a log axis, and bins equal on it, when its
  // values, the drawn timing anomalies included, span more than
  // kLogAxisRatio.
  const Histogram interval_hist = BuildHistogram(hist);
  double rps_lo = std::numeric_limits<double>::infinity();
  double rps_hi = 0;
  for (double& v : hist) {
    v = 1.0 / v;
    rps_lo = std::min(rps_lo, v);
    rps_hi = std::max(rps_hi, v);
  }
  for (double dt : t_intervals) {
    if (dt > 0) rps_hi = std::max(rps_hi, 1.0 / dt);
  }
  const bool rps_log = WantsLogAxis(rps_lo, rps_hi);
  const Histogram rps_hist = BuildHistogram(hist, rps_log);
  std::vector<double>().swap(hist);

  // Charts.
  fig.charts.push_back({.title = kTimeVsRpsTitle,
                        .legend_title = kGroupTime,
                        .x_title = "Time (s)",
                        .y_title = "RPS (requests/s)",
                        .y_log_toggle = true,
                        .time_axis = true});
  fig.charts.push_back({.title = kRpsHistogramTitle,
                        .legend_title = kGroupRpsHist,
                        .x_title = rps_log ? "RPS (requests/s, log scale)" : "RPS (requests/s)",
                        .y_title = "Request Count",
                        .x_log = rps_log});
  fig.charts.push_back({.title = GammaChartTitle(traffic.burstiness),
                        .legend_title = kGroupGamma,
                        .x_title = "Interval (s)",
                        .y_title = "Request Count"});

  const uint64_t total = n;
  const std::string t_criterion = absl::StrCat(
      "Δ_i < 1 ms; takes priority over the burstiness class. ", CountOf(st.timing, total),
      st.infinite_rps > 0 ? absl::StrCat("; ", FormatCount(st.infinite_rps),
                                         " with Δ_i = 0 (infinite RPS) not drawn")
                          : "");

  // Chart 0: Time vs RPS.
  {
    FigureTrace tr;
    tr.name = kNormalRpsName;
    tr.chart = 0;
    tr.kind = TraceKind::kLine;
    tr.color = kBlue;
    tr.hover = "t = %{x:.4f} s<br>RPS = %{y:.4g}";
    tr.points = normal_dec.Finish();
    tr.full_count = st.normal;
    tr.row = {kGroupTime,
              tr.name,
              "Planned send rate of the requests with no anomaly.",
              "RPS_i = 1/Δ_i drawn at x = t_i (planned offset, s after t0).",
              absl::StrCat("Δ_i ≥ 1 ms and |Δ_i − 1/λ_i|·λ_i ≤ 0.5 (the second only when β > 0). ",
                           CountOf(st.normal, total)),
              absl::StrCat("Blue line; ", DrawnNote(tr.points.size(), st.normal, kDecimationRule))};
    fig.traces.push_back(std::move(tr));
  }
  {
    FigureTrace tr;
    tr.name = kTimingAnomalyName;
    tr.chart = 0;
    tr.kind = TraceKind::kMarkers;
    tr.color = kRed;
    tr.symbol = "triangle-up";
    tr.hover = "t = %{x:.4f} s<br>RPS = %{y:.4g}";
    tr.points = std::move(t_time);
    tr.full_count = st.timing;
    tr.row = {
        kGroupTime,
        tr.name,
        "Planned interval too short to be sent reliably; the request is still sent as "
        "planned.",
        "RPS_i = 1/Δ_i drawn at x = t_i.",
        t_criterion,
        absl::StrCat("Red triangles; ", DrawnNote(std::min<uint64_t>(st.timing, kMaxAnomalyPoints),
                                                  st.timing, kStratifiedRule))};
    fig.traces.push_back(std::move(tr));
  }
  {
    FigureTrace tr;
    tr.name = kBurstinessAnomalyName;
    tr.chart = 0;
    tr.kind = TraceKind::kMarkers;
    tr.color = kYellow;
    tr.symbol = "square";
    tr.marker_size = 7;
    tr.hover = "t = %{x:.4f} s<br>RPS = %{y:.4g}";
    tr.points = std::move(b_time);
    tr.full_count = st.burstiness;
    tr.row = {kGroupTime,
              tr.name,
              "The Gamma-distributed interval deviates strongly from the expected interval; the "
              "request is still sent as planned.",
              "RPS_i = 1/Δ_i drawn at x = t_i; expected interval e_i = 1/λ_i.",
              absl::StrCat("|Δ_i − e_i|/e_i > 0.5 and not a timing anomaly; none when β = 0. ",
                           CountOf(st.burstiness, total)),
              absl::StrCat("Yellow squares; ",
                           DrawnNote(tr.points.size(), st.burstiness, kStratifiedRule))};
    fig.traces.push_back(std::move(tr));
  }
  {
    FigureTrace tr;
    tr.name = EwmaTraceName(st.ewma_window);
    tr.chart = 0;
    tr.kind = TraceKind::kLine;
    tr.color = kPurple;
    tr.line_width = 2;
    tr.hover = "t = %{x:.4f} s<br>EWMA = %{y:.4g}";
    tr.points = ewma_dec.Finish();
    // A trend needs at least two points; one point smoothed is itself.
    const bool too_few = st.normal < 2;
    if (too_few) tr.points = XySeries();
    tr.full_count = st.normal;
    tr.row = {
        kGroupTime,
        tr.name,
        "Smoothed trend of Normal RPS (noise removed).",
        absl::StrCat("EWMA_0 = RPS_0, EWMA_j = α·RPS_j + (1−α)·EWMA_{j−1} over the Normal RPS "
                     "series in time order, α = 2/(W+1) = ",
                     absl::StrFormat("%.4g", EwmaAlpha(st.ewma_window)), ", W = ", st.ewma_window,
                     "."),
        absl::StrCat("W from the length of the Normal RPS series (", FormatCount(st.normal),
                     " points): 20 when ≤ 1,000, 50 when ≤ 10,000, 100 when ≤ 100,000, else 200."),
        too_few ? absl::StrCat("Not drawn: not enough points (", FormatCount(st.normal),
                               st.normal == 1 ? " normal request" : " normal requests",
                               "; an EWMA needs at least 2)")
                : absl::StrCat("Purple line; ",
                               DrawnNote(tr.points.size(), st.normal, kDecimationRule))};
    fig.traces.push_back(std::move(tr));
  }
  if (const std::optional<TheoreticalRate>& line = traffic.description.theoretical) {
    FigureTrace tr;
    tr.name = line->name;
    tr.chart = 0;
    tr.kind = TraceKind::kLine;
    tr.color = kGreen;
    tr.dash = "dash";
    tr.line_width = 2;
    tr.hover = line->hover;
    std::string appearance = "Green dashed line";
    if (line->curve.empty()) {
      tr.points = rate_dec.Finish();
      tr.full_count = n;
      absl::StrAppend(&appearance, "; ", DrawnNote(tr.points.size(), n, kDecimationRule));
    } else {
      for (const RatePoint& p : line->curve) tr.points.Add(p.t_s, p.rate_rps);
      tr.full_count = line->curve.size();
    }
    tr.row = {kGroupTime,       tr.name,         line->meaning, line->computation,
              line->criterion, std::move(appearance)};
    fig.traces.push_back(std::move(tr));
  }

  // Chart 1: RPS histogram.
  {
    FigureTrace tr;
    tr.name = kNormalRequestCountName;
    tr.chart = 1;
    tr.color = kGreen;
    tr.hover = "RPS ≈ %{x:.4g}<br>count = %{y}";
    FillBars(rps_hist, tr);
    tr.full_count = st.normal + st.burstiness;
    tr.row = {
        kGroupRpsHist,
        tr.name,
        "How many requests are planned at each rate (burstiness anomalies count as normal "
        "here, to show β's effect).",
        absl::StrCat("Histogram of RPS_i = 1/Δ_i; ", BinsNote(rps_hist), "."),
        absl::StrCat("Normal ∪ burstiness anomalies: ", CountOf(st.normal + st.burstiness, total)),
        "Green bars (pre-binned)"};
    fig.traces.push_back(std::move(tr));
  }
  {
    FigureTrace tr;
    tr.name = kTimingAnomalyName;
    tr.chart = 1;
    tr.kind = TraceKind::kMarkers;
    tr.color = kRed;
    tr.symbol = "triangle-up";
    tr.hover = "RPS = %{x:.4g}";
    const double y = AboveBars(rps_hist);
    for (double dt : t_intervals) {
      if (dt > 0) tr.points.Add(1.0 / dt, y);
    }
    tr.full_count = st.timing;
    tr.row = {kGroupRpsHist,
              tr.name,
              "Requests whose planned interval is too short; they sit at very high RPS.",
              absl::StrCat("x = RPS_i = 1/Δ_i; y fixed at ", FormatShort(kAboveBars),
                           " × the highest bar, above the bars."),
              t_criterion,
              absl::StrCat("Red triangles above the bars; ",
                           DrawnNote(std::min<uint64_t>(st.timing, kMaxAnomalyPoints), st.timing,
                                     kStratifiedRule))};
    fig.traces.push_back(std::move(tr));
  }

  // Chart 2: interval histogram.
  {
    FigureTrace tr;
    tr.name = kNormalIntervalsName;
    tr.chart = 2;
    tr.color = kPurple;
    tr.hover = "Δ ≈ %{x:.4g} s<br>count = %{y}";
    FillBars(interval_hist, tr);
    tr.full_count = st.normal + st.burstiness;
    tr.row = {
        kGroupGamma,
        tr.name,
        "Distribution of the planned intervals; Gamma-shaped when β > 0 (burstiness "
        "anomalies count as normal here).",
        absl::StrCat("Histogram of Δ_i (s); ", BinsNote(interval_hist), "."),
        absl::StrCat("Normal ∪ burstiness anomalies: ", CountOf(st.normal + st.burstiness, total)),
        "Purple bars (pre-binned)"};
    fig.traces.push_back(std::move(tr));
  }
  {
    FigureTrace tr;
    tr.name = kTimingAnomalyName;
    tr.chart = 2;
    tr.kind = TraceKind::kMarkers;
    tr.color = kRed;
    tr.symbol = "triangle-up";
    tr.hover = "Δ = %{x:.3g} s";
    const double y = AboveBars(interval_hist);
    for (double dt : t_intervals) tr.points.Add(dt, y);
    tr.full_count = st.timing;
    tr.row = {kGroupGamma,
              tr.name,
              "Requests whose planned interval is under 1 ms.",
              absl::StrCat("x = Δ_i (near 0); y fixed at ", FormatShort(kAboveBars),
                           " × the highest bar."),
              t_criterion,
              absl::StrCat("Red triangles near x = 0; ",
                           DrawnNote(tr.points.size(), st.timing, kStratifiedRule))};
    fig.traces.push_back(std::move(tr));
  }
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

struct TimedSend {
  double t;
  uint64_t index;
  // Actual send time minus that of the predecessor (ActualStats): the
  // previous sent request in plan order, or in time order in instant mode.
  // NaN for the first send.
  double gap = kNaN;
};

// The actual trace (R-ACT-3) into chart 0. `sorted` is in (time, index)
// order with gaps filled in.
void AddActualTrace(const ArrivalSchedule& plan, std::span<const TimedSend> sorted, RpsFigure& fig,
                    ActualStats& st) {
  const bool instant = plan.traffic.instant;
  auto eligible = [&](uint64_t index) {
    const Anomaly a = plan.anomaly[index];
    return instant || a == Anomaly::kNormal || a == Anomaly::kInstant;
  };
  for (const TimedSend& s : sorted) {
    if (std::isnan(s.gap)) continue;  // no predecessor
    const bool zero = s.gap == 0;
    const bool negative = s.gap < 0;
    st.all_zero_differences += zero;
    st.all_negative_differences += negative;
    if (!eligible(s.index)) continue;
    ++st.plan_normal;
    st.zero_differences += zero;
    st.negative_differences += negative;
  }
  st.actual_points = st.plan_normal - st.zero_differences - st.negative_differences;
  const std::vector<uint64_t> ranks = StratifiedSampleRanks(st.actual_points, kMaxActualPoints);
  FigureTrace tr;
  tr.name = kActualRpsName;
  tr.chart = 0;
  tr.kind = TraceKind::kLine;
  tr.color = kOrange;
  tr.hover = "sent at %{x:.4f} s<br>actual RPS = %{y:.4g}";
  tr.points.x.reserve(ranks.size());
  tr.points.y.reserve(ranks.size());
  size_t next = 0;
  uint64_t rank = 0;
  for (size_t k = 0; k < sorted.size() && next < ranks.size(); ++k) {
    const TimedSend& s = sorted[k];
    if (!(s.gap > 0) || !eligible(s.index)) continue;
    if (ranks[next] == rank) {
      tr.points.Add(s.t, 1.0 / s.gap);
      ++next;
    }
    ++rank;
  }
  st.drawn_points = tr.points.size();
  tr.full_count = st.actual_points;
  const std::string not_drawn = absl::StrCat(
      FormatCount(st.zero_differences), " zero and ", FormatCount(st.negative_differences),
      " negative differences not drawn (", FormatCount(st.all_zero_differences), " and ",
      FormatCount(st.all_negative_differences), " over all sends)");
  tr.row = {
      kGroupTime,
      tr.name,
      instant ? "The rate the requests were actually sent at (instant mode: how fast the burst "
                "went out)."
              : "The rate the requests were actually sent at, to compare with the planned rate "
                "(Normal RPS) point by point.",
      instant
          ? "Sort all actual send times s (first byte handed to the socket, s after t0); actual "
            "RPS_k = 1/(s_k − s_{k−1}) drawn at x = s_k (every request is planned at 0, so the "
            "previous send in time is the only predecessor)."
          : "actual RPS_i = 1/(s_i − s_p) drawn at x = s_i, where s is the actual send time (first "
            "byte handed to the socket, s after t0) and p is request i's planned predecessor: the "
            "previous request in plan order that was sent (i − 1 unless it was not sent). Like "
            "with like: RPS_i compares with the planned 1/Δ_i = 1/(t_i − t_{i−1}). This deviates "
            "from sorting all sends and taking the previous one in time (the seed's wording): "
            "there, a neighbour that overtakes by microseconds (e.g. a timing anomaly sent by "
            "another worker) turns a well-paced request into a spike of 10^5 RPS or more that "
            "never happened.",
      st.sent < 2
          ? absl::StrCat("Not enough points: ", FormatCount(st.sent),
                         st.sent == 1 ? " send" : " sends",
                         "; a rate needs at least 2 sends, so nothing is drawn.")
          : absl::StrCat(instant ? "Instant mode: every sent request (the plan has no classes)"
                                 : "Only requests that were normal in the plan",
                         "; a zero or negative difference (sent at the same time as, or before, "
                         "the predecessor) is not drawn. ",
                         FormatCount(st.actual_points), " points of ", FormatCount(st.sent),
                         " sends; ", not_drawn, "; the first send has no predecessor."),
      absl::StrCat("Orange line; ", DrawnNote(st.drawn_points, st.actual_points, kStratifiedRule))};
  // Keep chart 0's traces together: insert after the last chart-0 trace.
  auto pos = std::find_if(fig.traces.begin(), fig.traces.end(),
                          [](const FigureTrace& t) { return t.chart != 0; });
  fig.traces.insert(pos, std::move(tr));
}

// R-ACT-5: lateness histogram, rate over time, KS distance.
// `planned` holds the planned offsets of the sent requests, sorted.
void AddActualExtras(const ArrivalSchedule& plan, std::span<const TimedSend> sorted,
                     std::span<const double> planned, RpsFigure& fig, ActualStats& st) {
  const size_t m = sorted.size();
  // Two m-sized buffers serve lateness, then both interval samples; `scratch`
  // is the radix sort's buffer.
  std::vector<double> a(m), b, scratch;
  // Lateness (ms on the chart): exact percentiles (R-MET-2), and the
  // histogram's min, quartiles and max, from one selection pass.
  for (size_t k = 0; k < m; ++k) a[k] = (sorted[k].t - plan.offset_s[sorted[k].index]) * 1e3;
  const double ps[] = {0, 1, 25, 50, 75, 90, 99, 100};
  const std::vector<double> pq = Percentiles(a, ps);
  const double q[] = {pq[3], pq[5], pq[6], pq[7]};  // p50, p90, p99, max
  st.lateness_p50_s = q[0] / 1e3;
  st.lateness_p90_s = q[1] / 1e3;
  st.lateness_p99_s = q[2] / 1e3;
  st.lateness_max_s = q[3] / 1e3;
  // Bars over [min, max], or over [p1, p99] when the tails would stretch the
  // axis more than kLatenessTailFactor times: one stalled send must not
  // squeeze every other one into a single bar. Values outside are counted.
  Histogram lateness_hist;
  double hist_lo = pq[0], hist_hi = pq[7];
  const bool clipped =
      m > 0 && pq[6] > pq[1] && pq[7] - pq[0] > kLatenessTailFactor * (pq[6] - pq[1]);
  if (clipped) {
    hist_lo = pq[1];
    hist_hi = pq[6];
  }
  uint64_t below = 0, above = 0;
  if (m > 0) {
    lateness_hist.bins = FreedmanDiaconisBins(m, hist_lo, hist_hi, pq[4] - pq[2]);
    lateness_hist.counts.assign(static_cast<size_t>(lateness_hist.bins.count), 0);
    const double inv = 1.0 / lateness_hist.bins.width;
    const size_t last = lateness_hist.counts.size() - 1;
    for (double v : a) {
      if (v < hist_lo) {
        ++below;
      } else if (v > hist_hi) {
        ++above;
      } else {
        const double pos = (v - lateness_hist.bins.lo) * inv;
        ++lateness_hist.counts[pos > 0 ? std::min(static_cast<size_t>(pos), last) : 0];
      }
    }
  }

  // Intended rate: the whole plan's, (N − 1)/(t_{N−1} − t_0), requests never
  // sent included: what the run was asked to do (R-MET-2, read as the plan).
  const auto [plan_lo, plan_hi] = std::minmax_element(plan.offset_s.begin(), plan.offset_s.end());
  if (plan.size() >= 2 && *plan_hi > *plan_lo) {
    st.intended_rate_rps = static_cast<double>(plan.size() - 1) / (*plan_hi - *plan_lo);
  }
  // Inter-send intervals on both sides (R-MET-2).
  if (m >= 2) {
    const double actual_span = sorted[m - 1].t - sorted[0].t;
    const double gaps = static_cast<double>(m - 1);
    st.achieved_rate_rps = actual_span > 0 ? gaps / actual_span : kNaN;
    a.resize(m - 1);
    b.resize(m - 1);
    for (size_t k = 1; k < m; ++k) {
      a[k - 1] = sorted[k].t - sorted[k - 1].t;
      b[k - 1] = planned[k] - planned[k - 1];
    }
    SortDoubles(a, &scratch);
    SortDoubles(b, &scratch);
    st.ks_distance = KsDistanceSorted(a, b);
  }
  std::vector<double>().swap(a);
  std::vector<double>().swap(b);
  std::vector<double>().swap(scratch);

  // Rate over time: actual sends vs the whole plan's offsets, same bins.
  double lo = std::min(0.0, *plan_lo);
  double hi = *plan_hi;
  if (m > 0) {
    lo = std::min(lo, sorted.front().t);
    hi = std::max(hi, sorted.back().t);
  }
  const double width = RateBinWidth(hi - lo, std::max<uint64_t>(m, plan.size()));
  st.rate_bin_width_s = width;
  RateBinner achieved_bins = MakeRateBinner(lo, hi, width);
  RateBinner intended_bins = MakeRateBinner(lo, hi, width);
  for (const TimedSend& s : sorted) achieved_bins.Add(s.t);
  for (double t : plan.offset_s) intended_bins.Add(t);
  const std::vector<double> achieved = achieved_bins.Rates();
  const std::vector<double> intended = intended_bins.Rates();
  const std::vector<double> edges = achieved_bins.Edges();

  const std::string width_text = FormatShort(width);
  auto ms = [](double s) { return absl::StrFormat("%.4g ms", s * 1e3); };
  fig.charts.push_back(
      {.title = m == 0 ? std::string(kLatenessTitle)
                       : absl::StrCat(kLatenessTitle, " (p50 ", ms(st.lateness_p50_s), ", p90 ",
                                      ms(st.lateness_p90_s), ", p99 ", ms(st.lateness_p99_s),
                                      ", max ", ms(st.lateness_max_s), ")"),
       .legend_title = kGroupLateness,
       .x_title = "Lateness = actual − planned send time (ms)",
       .y_title = "Requests"});
  if (m > 0) {
    const char* labels[] = {"p50 ", "p90 ", "p99 ", "max "};
    for (int i = 0; i < 4; ++i) {
      // Lines outside the bars' range would stretch the axis again.
      if (q[i] >= hist_lo && q[i] <= hist_hi) {
        fig.charts.back().markers.push_back({q[i], labels[i] + ms(q[i] / 1e3)});
      }
    }
  }
  fig.charts.push_back(
      {.title = absl::StrCat(kRateOverTimeTitle, " (KS distance of intervals: ",
                             std::isnan(st.ks_distance) ? std::string("n/a")
                                                        : absl::StrFormat("%.4f", st.ks_distance),
                             ")"),
       .legend_title = kGroupRate,
       .x_title = "Time (s)",
       .y_title = "Rate (requests/s)",
       .time_axis = true});
  const size_t lateness_chart = fig.charts.size() - 2;
  const size_t rate_chart = fig.charts.size() - 1;
  {
    FigureTrace tr;
    tr.name = kSendLatenessName;
    tr.chart = lateness_chart;
    tr.color = kBrown;
    tr.hover = "lateness ≈ %{x:.4g} ms<br>count = %{y}";
    FillBars(lateness_hist, tr);
    tr.full_count = m;
    tr.row = {
        kGroupLateness,
        tr.name,
        "How late each request left compared with its planned send time (a concurrency cap "
        "or an overloaded sender shows here).",
        absl::StrCat("lateness = actual send time − planned offset t_i, in ms; ",
                     BinsNote(lateness_hist), "."),
        absl::StrCat("All ", FormatCount(m),
                     " sent requests; percentiles exact over all of them (linear interpolation "
                     "between closest ranks): p50 ",
                     ms(st.lateness_p50_s), ", p90 ", ms(st.lateness_p90_s), ", p99 ",
                     ms(st.lateness_p99_s), ", max ", ms(st.lateness_max_s), ".",
                     clipped ? absl::StrCat(" The tails are long: the bars cover p1…p99; ",
                                            FormatCount(below), " sends below and ",
                                            FormatCount(above), " above are not in the bars.")
                             : std::string()),
        absl::StrCat("Brown bars (pre-binned); dotted vertical lines at p50, p90, p99 "
                     "and max",
                     clipped ? " where they fall within the bars" : "")};
    fig.traces.push_back(std::move(tr));
  }
  // A rate needs at least two events: one send (or one planned request)
  // alone would show 1/bin width, a number nobody asked for.
  auto step_series = [&](const std::vector<double>& rate, uint64_t events) {
    XySeries s;
    if (events < 2) return s;
    for (size_t k = 0; k < rate.size(); ++k) s.Add(edges[k], rate[k]);
    s.Add(edges.back(), rate.back());
    return s;
  };
  {
    FigureTrace tr;
    tr.name = kAchievedRateName;
    tr.chart = rate_chart;
    tr.color = kOrange;
    tr.line_shape = "hv";
    tr.line_width = 2;
    tr.hover = "from %{x:.4g} s<br>achieved %{y:.4g} req/s";
    tr.points = step_series(achieved, m);
    tr.full_count = m;
    tr.row = {kGroupRate,
              tr.name,
              "How many requests per second were actually sent over time.",
              absl::StrCat("Actual sends per ", width_text,
                           " s bin ÷ bin width (bin width = 1, 2 or 5 × 10^k s, about 20 sends per "
                           "bin, 10–200 bins; the last bin runs to the end and is divided by its "
                           "own length)."),
              absl::StrCat("All ", FormatCount(m), " sent requests; overall achieved rate ",
                           std::isnan(st.achieved_rate_rps)
                               ? std::string("n/a")
                               : absl::StrFormat("%.4g", st.achieved_rate_rps),
                           " req/s = (n − 1)/(last send − first send); KS distance between "
                           "achieved and planned inter-send intervals ",
                           std::isnan(st.ks_distance) ? std::string("n/a")
                                                      : absl::StrFormat("%.4f", st.ks_distance),
                           "."),
              m < 2 ? absl::StrCat("Not drawn: not enough points (", FormatCount(m),
                                   m == 1 ? " send" : " sends", "; a rate needs at least 2)")
                    : std::string("Orange step line")};
    fig.traces.push_back(std::move(tr));
  }
  {
    FigureTrace tr;
    tr.name = kIntendedRateName;
    tr.chart = rate_chart;
    tr.color = kGreen;
    tr.dash = "dash";
    tr.line_shape = "hv";
    tr.line_width = 2;
    tr.hover = "from %{x:.4g} s<br>intended %{y:.4g} req/s";
    tr.points = step_series(intended, plan.size());
    tr.full_count = plan.size();
    tr.row = {kGroupRate,
              tr.name,
              "How many requests per second the plan intended over time.",
              absl::StrCat("Planned offsets t_i of all ", FormatCount(plan.size()),
                           " planned requests per ", width_text, " s bin ÷ bin width."),
              absl::StrCat("The whole plan (requests never sent included); intended rate ",
                           std::isnan(st.intended_rate_rps)
                               ? std::string("n/a")
                               : absl::StrFormat("%.4g", st.intended_rate_rps),
                           " req/s = (N − 1)/(t_{N−1} − t_0) over all ", FormatCount(plan.size()),
                           " planned offsets."),
              plan.size() < 2 ? std::string("Not drawn: not enough points (1 planned request; a "
                                            "rate needs at least 2)")
                              : std::string("Green dashed step line")};
    fig.traces.push_back(std::move(tr));
  }
}

}  // namespace

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

absl::StatusOr<RpsFigure> BuildActualRpsFigure(const ArrivalSchedule& plan,
                                               std::span<const ActualSend> sends) {
  if (absl::Status s = ValidatePlan(plan); !s.ok()) return s;
  const size_t n = plan.size();
  // Sends in index (= plan) order first: each one's gap to its planned
  // predecessor, the previous sent request in plan order (ActualStats), and
  // the planned offsets of the sent requests (sorted: plan offsets never
  // decrease; checked). Then a stable radix sort by time gives (time, index)
  // order, so the input order never matters.
  std::vector<TimedSend> sorted;
  std::vector<double> planned;
  {
    std::vector<bool> seen(n, false);
    sorted.reserve(sends.size());
    for (const ActualSend& s : sends) {
      if (s.index >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat("send of request ", s.index, " outside the plan of ", n, " requests"));
      }
      if (!std::isfinite(s.sent_offset_s)) {
        return absl::InvalidArgumentError(
            absl::StrCat("send of request ", s.index, " has a non-finite time"));
      }
      if (seen[s.index]) {
        return absl::InvalidArgumentError(
            absl::StrCat("request ", s.index, " appears more than once among the sends"));
      }
      seen[s.index] = true;
    }
    bool in_order = true;
    for (const ActualSend& s : sends) {
      in_order = in_order && (sorted.empty() || sorted.back().index < s.index);
      sorted.push_back({s.sent_offset_s, s.index});
    }
    if (!in_order) {  // indices < 2^53: exact as double keys
      std::vector<TimedSend> scratch;
      radix_internal::RadixSortByKey(
          std::span<TimedSend>(sorted),
          [](const TimedSend& s) { return static_cast<double>(s.index); }, scratch);
    }
    planned.reserve(sorted.size());
    for (size_t k = 0; k < sorted.size(); ++k) {
      planned.push_back(plan.offset_s[sorted[k].index]);
      if (k > 0 && !plan.traffic.instant) sorted[k].gap = sorted[k].t - sorted[k - 1].t;
    }
  }
  {
    std::vector<TimedSend> scratch;
    radix_internal::RadixSortByKey(
        std::span<TimedSend>(sorted), [](const TimedSend& s) { return s.t; }, scratch);
  }
  // Instant mode: every request is planned at 0, there is no planned order;
  // the predecessor is the previous send in time (R-ACT-4).
  if (plan.traffic.instant) {
    for (size_t k = 1; k < sorted.size(); ++k) sorted[k].gap = sorted[k].t - sorted[k - 1].t;
  }
  if (!std::is_sorted(planned.begin(), planned.end())) SortDoubles(planned);

  RpsFigure fig;
  fig.title = PageTitle(plan.traffic);
  fig.instant = plan.traffic.instant;
  ActualStats st;
  st.sent = sorted.size();
  if (fig.instant) {
    fig.expected.requests = n;
    fig.charts.push_back({.title = kTimeVsRpsTitle,
                          .legend_title = kGroupTime,
                          .x_title = "Time (s)",
                          .y_title = "RPS (requests/s)",
                          .y_log_toggle = true,
                          .time_axis = true});
  } else {
    AddExpectedCharts(plan, fig);
  }
  AddActualTrace(plan, sorted, fig, st);
  if (!fig.instant) AddActualExtras(plan, sorted, planned, fig, st);
  ChooseTimeAxis(fig);
  fig.actual = st;
  return fig;
}

void AddLateMarks(const ArrivalSchedule& plan, std::span<const LateMark> marks, RpsFigure& fig) {
  struct Style {
    LateMark::Kind kind;
    const char* name;
    const char* color;
    const char* symbol;
    const char* meaning;
    const char* computation;
    const char* appearance;
  };
  static const Style kStyles[] = {
      {LateMark::Kind::kLate, kLateSendName, kBrown, "cross",
       "Released more than late_threshold_ms after its planned send (any late policy).",
       "x = actual send time (s after t0), y = the plan's intended rate λ_i of the request.",
       "Brown crosses"},
      {LateMark::Kind::kSkipped, kSkippedLateName, "#000000", "x",
       "Not sent: the pacer reached it more than late_threshold_ms after its planned send "
       "(late_policy skip); its record has status skipped.",
       "x = planned offset t_i (it has no send), y = the plan's intended rate λ_i.", "Black x's"},
      {LateMark::Kind::kDelayed, kDelayedCatchUpName, kPurple, "diamond",
       "Late, and held back by the catch-up spacing (late_policy cap): released at least "
       "1/catch_up_rps after the release before it.",
       "x = actual send time (s after t0), y = the plan's intended rate λ_i.", "Purple diamonds"},
  };
  const size_t n = plan.offset_s.size();
  for (const Style& style : kStyles) {
    std::vector<std::pair<double, double>> points;  // (x, y), drawable ones
    uint64_t full = 0;
    for (const LateMark& m : marks) {
      if (m.kind != style.kind || m.index >= n || m.index >= plan.rate_rps.size()) continue;
      ++full;
      const double y = plan.rate_rps[m.index];
      if (std::isfinite(m.at_s) && std::isfinite(y) && y > 0) points.emplace_back(m.at_s, y);
    }
    if (full == 0) continue;
    std::sort(points.begin(), points.end());
    const std::vector<uint64_t> ranks = StratifiedSampleRanks(points.size(), kMaxAnomalyPoints);
    FigureTrace tr;
    tr.name = style.name;
    tr.chart = 0;
    tr.kind = TraceKind::kMarkers;
    tr.color = style.color;
    tr.symbol = style.symbol;
    tr.hover = "t = %{x:.4f} s<br>intended RPS = %{y:.4g}";
    for (uint64_t r : ranks) tr.points.Add(points[r].first, points[r].second);
    tr.full_count = full;
    tr.row = {
        kGroupTime,
        tr.name,
        style.meaning,
        style.computation,
        CountOf(full, n),
        absl::StrCat(style.appearance, "; ", DrawnNote(tr.points.size(), full, kStratifiedRule))};
    // After the other traces of chart 0 (grouped by chart, in legend order).
    auto at = std::find_if(fig.traces.begin(), fig.traces.end(),
                           [](const FigureTrace& t) { return t.chart > 0; });
    fig.traces.insert(at, std::move(tr));
  }
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

}  // namespace surge::coordinator
