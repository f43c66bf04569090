// The actual figure (R-ACT-3..5): the expected figure plus the actual
// trace, the lateness and rate-over-time charts, and the late-send marks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/plan/number_format.h"
#include "coordinator/report/figure_parts.h"
#include "coordinator/report/radix_sort.h"
#include "coordinator/report/rps_figure.h"

namespace surge::coordinator {
namespace {

using figure_internal::AddExpectedCharts;
using figure_internal::BarTrace;
using figure_internal::BinsNote;
using figure_internal::ChooseTimeAxis;
using figure_internal::ClassColor;
using figure_internal::CountOf;
using figure_internal::DrawnNote;
using figure_internal::kBrown;
using figure_internal::kGreen;
using figure_internal::kGroupLateness;
using figure_internal::kGroupRate;
using figure_internal::kLatenessChart;
using figure_internal::kOrange;
using figure_internal::kPurple;
using figure_internal::kRateChart;
using figure_internal::kStratifiedRule;
using figure_internal::kTimeChart;
using figure_internal::Look;
using figure_internal::MakeTrace;
using figure_internal::RowText;
using figure_internal::StratifiedPicker;
using figure_internal::TimeVsRpsChart;
using figure_internal::StepsOf;
using figure_internal::TraceSpec;
using figure_internal::ValidatePlan;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The lateness bars cover p1…p99 instead of min…max when max − min exceeds
// this many times p99 − p1.
constexpr double kLatenessTailFactor = 4;

constexpr TraceSpec kActualRpsSpec = {.name = kActualRpsName,
                                      .chart = kTimeChart,
                                      .kind = TraceKind::kLine,
                                      .color = kOrange,
                                      .hover = "sent at %{x:.4f} s<br>actual RPS = %{y:.4g}",
                                      .look = "Orange line"};
constexpr TraceSpec kLatenessSpec = {
    .name = kSendLatenessName,
    .chart = kLatenessChart,
    .kind = TraceKind::kBars,
    .color = kBrown,
    .hover = "lateness ≈ %{x:.4g} ms<br>count = %{y}",
    .meaning =
        "How late each request left compared with its planned send time (a concurrency "
        "cap or an overloaded sender shows here)."};
constexpr TraceSpec kAchievedSpec = {
    .name = kAchievedRateName,
    .chart = kRateChart,
    .kind = TraceKind::kLine,
    .color = kOrange,
    .hover = "from %{x:.4g} s<br>achieved %{y:.4g} req/s",
    .meaning = "How many requests per second were actually sent over time.",
    .look = "Orange step line",
    .line_shape = "hv",
    .line_width = 2};
constexpr TraceSpec kIntendedSpec = {
    .name = kIntendedRateName,
    .chart = kRateChart,
    .kind = TraceKind::kLine,
    .color = kGreen,
    .hover = "from %{x:.4g} s<br>intended %{y:.4g} req/s",
    .meaning = "How many requests per second the plan intended over time.",
    .look = "Green dashed step line",
    .dash = "dash",
    .line_shape = "hv",
    .line_width = 2};

// The actual trace draws the requests that were normal in the plan (every
// request in instant mode).
bool ActualEligible(const ArrivalSchedule& plan, bool instant, uint64_t index) {
  const Anomaly a = plan.anomaly[index];
  return instant || a == Anomaly::kNormal || a == Anomaly::kInstant;
}

struct TimedSend {
  double t;
  uint64_t index;
  // Actual send time minus that of the predecessor (ActualStats): the
  // previous sent request in plan order, or in time order in instant mode.
  // NaN for the first send.
  double gap = kNaN;
};

// Counts the sends the actual trace stands for and those it leaves out.
void CountActualPoints(const ArrivalSchedule& plan, std::span<const TimedSend> sorted,
                       ActualStats& st) {
  const bool instant = plan.traffic.instant;
  for (const TimedSend& s : sorted) {
    if (std::isnan(s.gap)) continue;  // no predecessor
    const bool zero = s.gap == 0;
    const bool negative = s.gap < 0;
    st.all_zero_differences += zero;
    st.all_negative_differences += negative;
    if (!ActualEligible(plan, instant, s.index)) continue;
    ++st.plan_normal;
    st.zero_differences += zero;
    st.negative_differences += negative;
  }
  st.actual_points = st.plan_normal - st.zero_differences - st.negative_differences;
}

constexpr char kActualPlannedComputation[] =
    "actual RPS_i = 1/(s_i − s_p) drawn at x = s_i, where s is the actual send time (first byte "
    "handed to the socket, s after t0) and p is request i's planned predecessor: the previous "
    "request in plan order that was sent (i − 1 unless it was not sent). Like with like: RPS_i "
    "compares with the planned 1/Δ_i = 1/(t_i − t_{i−1}). This deviates from sorting all sends "
    "and taking the previous one in time (the seed's wording): there, a neighbour that overtakes "
    "by microseconds (e.g. a timing anomaly sent by another worker) turns a well-paced request "
    "into a spike of 10^5 RPS or more that never happened.";
constexpr char kActualInstantComputation[] =
    "Sort all actual send times s (first byte handed to the socket, s after t0); actual RPS_k = "
    "1/(s_k − s_{k−1}) drawn at x = s_k (every request is planned at 0, so the previous send in "
    "time is the only predecessor).";

std::string ActualCriterion(bool instant, const ActualStats& st) {
  if (st.sent < 2) {
    return absl::StrCat("Not enough points: ", FormatCount(st.sent),
                        st.sent == 1 ? " send" : " sends",
                        "; a rate needs at least 2 sends, so nothing is drawn.");
  }
  const std::string not_drawn = absl::StrCat(
      FormatCount(st.zero_differences), " zero and ", FormatCount(st.negative_differences),
      " negative differences not drawn (", FormatCount(st.all_zero_differences), " and ",
      FormatCount(st.all_negative_differences), " over all sends)");
  return absl::StrCat(instant ? "Instant mode: every sent request (the plan has no classes)"
                              : "Only requests that were normal in the plan",
                      "; a zero or negative difference (sent at the same time as, or before, "
                      "the predecessor) is not drawn. ",
                      FormatCount(st.actual_points), " points of ", FormatCount(st.sent),
                      " sends; ", not_drawn, "; the first send has no predecessor.");
}

// The actual trace (R-ACT-3) into chart 0. `sorted` is in (time, index)
// order with gaps filled in.
void AddActualTrace(const ArrivalSchedule& plan, std::span<const TimedSend> sorted, RpsFigure& fig,
                    ActualStats& st) {
  const bool instant = plan.traffic.instant;
  CountActualPoints(plan, sorted, st);
  StratifiedPicker picker(st.actual_points, kMaxActualPoints);
  XySeries points;
  points.x.reserve(picker.size());
  points.y.reserve(picker.size());
  for (size_t k = 0; k < sorted.size() && !picker.Done(); ++k) {
    const TimedSend& s = sorted[k];
    if (!(s.gap > 0) || !ActualEligible(plan, instant, s.index)) continue;
    if (picker.Take()) points.Add(s.t, 1.0 / s.gap);
  }
  st.drawn_points = points.size();
  FigureTrace tr = MakeTrace(
      kActualRpsSpec, std::move(points), st.actual_points,
      {.criterion = ActualCriterion(instant, st),
       .appearance =
           Look(kActualRpsSpec, DrawnNote(st.drawn_points, st.actual_points, kStratifiedRule)),
       .computation = instant ? kActualInstantComputation : kActualPlannedComputation,
       .meaning = instant ? "The rate the requests were actually sent at (instant mode: how fast "
                            "the burst went out)."
                          : "The rate the requests were actually sent at, to compare with the "
                            "planned rate (Normal RPS) point by point."});
  // Keep chart 0's traces together: insert after the last chart-0 trace.
  auto pos = std::find_if(fig.traces.begin(), fig.traces.end(),
                          [](const FigureTrace& t) { return t.chart != 0; });
  fig.traces.insert(pos, std::move(tr));
}

// ---- The actual extras (R-ACT-5) -------------------------------------------

// Lateness of the sent requests, ms: exact percentiles and the histogram.
struct LatenessFacts {
  // p50, p90, p99, max, ms.
  double q[4] = {kNaN, kNaN, kNaN, kNaN};
  Histogram hist;
  double lo = 0, hi = 0;  // the bars' range
  bool clipped = false;   // the bars cover p1…p99 only
  uint64_t below = 0, above = 0;
};

// Percentiles (R-MET-2) and the histogram's min, quartiles and max from one
// selection pass over `lateness_ms`. The bars cover [min, max], or [p1, p99]
// when the tails would stretch the axis more than kLatenessTailFactor times:
// one stalled send must not squeeze every other one into a single bar.
// Values outside are counted.
LatenessFacts MeasureLateness(std::vector<double>& lateness_ms) {
  const size_t m = lateness_ms.size();
  const double ps[] = {0, 1, 25, 50, 75, 90, 99, 100};
  const std::vector<double> pq = Percentiles(lateness_ms, ps);
  LatenessFacts f;
  f.q[0] = pq[3];
  f.q[1] = pq[5];
  f.q[2] = pq[6];
  f.q[3] = pq[7];
  f.lo = pq[0];
  f.hi = pq[7];
  f.clipped = m > 0 && pq[6] > pq[1] && pq[7] - pq[0] > kLatenessTailFactor * (pq[6] - pq[1]);
  if (f.clipped) {
    f.lo = pq[1];
    f.hi = pq[6];
  }
  if (m == 0) return f;
  f.hist.bins = FreedmanDiaconisBins(m, f.lo, f.hi, pq[4] - pq[2]);
  f.hist.counts.assign(static_cast<size_t>(f.hist.bins.count), 0);
  const double inv = 1.0 / f.hist.bins.width;
  const size_t last = f.hist.counts.size() - 1;
  for (double v : lateness_ms) {
    if (v < f.lo) {
      ++f.below;
    } else if (v > f.hi) {
      ++f.above;
    } else {
      const double pos = (v - f.hist.bins.lo) * inv;
      ++f.hist.counts[pos > 0 ? std::min(static_cast<size_t>(pos), last) : 0];
    }
  }
  return f;
}

// Intended rate: the whole plan's, (N − 1)/(t_{N−1} − t_0), requests never
// sent included (R-MET-2, read as the plan). Achieved rate and the KS
// distance of the inter-send intervals on both sides. `buffer` is reused.
void MeasureIntervals(const ArrivalSchedule& plan, std::span<const TimedSend> sorted,
                      std::span<const double> planned, std::vector<double>& buffer,
                      ActualStats& st) {
  const auto [plan_lo, plan_hi] = std::minmax_element(plan.offset_s.begin(), plan.offset_s.end());
  if (plan.size() >= 2 && *plan_hi > *plan_lo) {
    st.intended_rate_rps = static_cast<double>(plan.size() - 1) / (*plan_hi - *plan_lo);
  }
  const size_t m = sorted.size();
  if (m < 2) return;
  const double actual_span = sorted[m - 1].t - sorted[0].t;
  st.achieved_rate_rps = actual_span > 0 ? static_cast<double>(m - 1) / actual_span : kNaN;
  std::vector<double>& a = buffer;
  std::vector<double> b(m - 1), scratch;
  a.resize(m - 1);
  for (size_t k = 1; k < m; ++k) {
    a[k - 1] = sorted[k].t - sorted[k - 1].t;
    b[k - 1] = planned[k] - planned[k - 1];
  }
  SortDoubles(a, &scratch);
  SortDoubles(b, &scratch);
  st.ks_distance = KsDistanceSorted(a, b);
}

// Rate over time of a set of requests: their actual sends and their planned
// offsets, in the rate chart's bins.
struct RateSteps {
  XySeries achieved;
  XySeries intended;
  uint64_t sent = 0;     // sends of the set
  uint64_t planned = 0;  // planned requests of the set, sent or not
};

// The whole run's steps and, with traffic classes, each class's (in class
// order), all in the same bins.
struct RateChartSteps {
  RateSteps total;
  std::vector<RateSteps> classes;
};

// The traffic class of plan request `index`; past the classes without any.
size_t ClassOf(const ArrivalSchedule& plan, uint64_t index) {
  return plan.classes.empty() ? std::numeric_limits<size_t>::max() : plan.class_index[index];
}

RateChartSteps MeasureRates(const ArrivalSchedule& plan, std::span<const TimedSend> sorted,
                            ActualStats& st) {
  const size_t m = sorted.size();
  const auto [plan_lo, plan_hi] = std::minmax_element(plan.offset_s.begin(), plan.offset_s.end());
  double lo = std::min(0.0, *plan_lo);
  double hi = *plan_hi;
  if (m > 0) {
    lo = std::min(lo, sorted.front().t);
    hi = std::max(hi, sorted.back().t);
  }
  const double width = RateBinWidth(hi - lo, std::max<uint64_t>(m, plan.size()));
  st.rate_bin_width_s = width;
  const size_t classes = plan.classes.size();
  GroupedRateBinner achieved(MakeRateBinner(lo, hi, width), classes);
  GroupedRateBinner intended(MakeRateBinner(lo, hi, width), classes);
  std::vector<uint64_t> sent(classes, 0), planned(classes, 0);
  for (const TimedSend& s : sorted) {
    const size_t c = ClassOf(plan, s.index);
    achieved.Add(s.t, c);
    if (c < classes) ++sent[c];
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    const size_t c = ClassOf(plan, i);
    intended.Add(plan.offset_s[i], c);
    if (c < classes) ++planned[c];
  }
  const std::vector<double> edges = achieved.total().Edges();
  auto steps = [&](const RateBinner& a, uint64_t a_events, const RateBinner& b,
                   uint64_t b_events) -> RateSteps {
    return {StepsOf(a, a_events, edges), StepsOf(b, b_events, edges), a_events, b_events};
  };
  RateChartSteps out;
  out.total = steps(achieved.total(), m, intended.total(), plan.size());
  for (size_t c = 0; c < classes; ++c) {
    out.classes.push_back(steps(achieved.group(c), sent[c], intended.group(c), planned[c]));
  }
  return out;
}

std::string Ms(double s) { return absl::StrFormat("%.4g ms", s * 1e3); }
std::string Ks(double d) { return std::isnan(d) ? std::string("n/a") : absl::StrFormat("%.4f", d); }
std::string ReqPerS(double r) {
  return std::isnan(r) ? std::string("n/a") : absl::StrFormat("%.4g", r);
}

// The lateness and rate charts, with the percentile lines where they fall
// within the bars (lines outside would stretch the axis again).
void AddActualChartFrames(const LatenessFacts& f, const ActualStats& st, size_t m, RpsFigure& fig) {
  FigureChart lateness = {
      .title = m == 0 ? std::string(kLatenessTitle)
                      : absl::StrCat(kLatenessTitle, " (p50 ", Ms(st.lateness_p50_s), ", p90 ",
                                     Ms(st.lateness_p90_s), ", p99 ", Ms(st.lateness_p99_s),
                                     ", max ", Ms(st.lateness_max_s), ")"),
      .legend_title = kGroupLateness,
      .x_title = "Lateness = actual − planned send time (ms)",
      .y_title = "Requests"};
  if (m > 0) {
    const char* labels[] = {"p50 ", "p90 ", "p99 ", "max "};
    for (int i = 0; i < 4; ++i) {
      if (f.q[i] >= f.lo && f.q[i] <= f.hi) {
        lateness.markers.push_back({f.q[i], labels[i] + Ms(f.q[i] / 1e3)});
      }
    }
  }
  fig.charts.push_back(std::move(lateness));
  fig.charts.push_back({.title = absl::StrCat(kRateOverTimeTitle, " (KS distance of intervals: ",
                                              Ks(st.ks_distance), ")"),
                        .legend_title = kGroupRate,
                        .x_title = "Time (s)",
                        .y_title = "Rate (requests/s)",
                        .time_axis = true});
}

FigureTrace LatenessTrace(const LatenessFacts& f, const ActualStats& st, size_t m) {
  return BarTrace(
      kLatenessSpec, f.hist, m,
      {.criterion = absl::StrCat(
           "All ", FormatCount(m),
           " sent requests; percentiles exact over all of them (linear interpolation between "
           "closest ranks): p50 ",
           Ms(st.lateness_p50_s), ", p90 ", Ms(st.lateness_p90_s), ", p99 ", Ms(st.lateness_p99_s),
           ", max ", Ms(st.lateness_max_s), ".",
           f.clipped ? absl::StrCat(" The tails are long: the bars cover p1…p99; ",
                                    FormatCount(f.below), " sends below and ", FormatCount(f.above),
                                    " above are not in the bars.")
                     : std::string()),
       .appearance =
           absl::StrCat("Brown bars (pre-binned); dotted vertical lines at p50, p90, p99 and max",
                        f.clipped ? " where they fall within the bars" : ""),
       .computation = absl::StrCat("lateness = actual send time − planned offset t_i, in ms; ",
                                   BinsNote(f.hist), ".")});
}

// "Not drawn: not enough points (<n> <what>; a rate needs at least 2)".
std::string NotEnoughForRate(uint64_t n, const char* one, const char* many) {
  return absl::StrCat("Not drawn: not enough points (", FormatCount(n), " ", n == 1 ? one : many,
                      "; a rate needs at least 2)");
}

// The variable texts of one achieved/intended pair (the total's or a class's).
struct RatePairText {
  std::string achieved_criterion;
  std::string achieved_computation;
  std::string intended_criterion;
  std::string intended_computation;
  std::string achieved_meaning = "";
  std::string intended_meaning = "";
};

// The achieved and the intended step line of one set of requests.
void AddRatePair(const TraceSpec& achieved, const TraceSpec& intended, RateSteps steps,
                 RatePairText text, RpsFigure& fig) {
  const uint64_t m = steps.sent;
  const uint64_t n = steps.planned;
  fig.traces.push_back(MakeTrace(
      achieved, std::move(steps.achieved), m,
      {.criterion = std::move(text.achieved_criterion),
       .appearance = m < 2 ? NotEnoughForRate(m, "send", "sends") : std::string(achieved.look),
       .computation = std::move(text.achieved_computation),
       .meaning = std::move(text.achieved_meaning)}));
  fig.traces.push_back(
      MakeTrace(intended, std::move(steps.intended), n,
                {.criterion = std::move(text.intended_criterion),
                 .appearance = n < 2 ? NotEnoughForRate(n, "planned request", "planned requests")
                                     : std::string(intended.look),
                 .computation = std::move(text.intended_computation),
                 .meaning = std::move(text.intended_meaning)}));
}

// Class c's pair: named by the class, in its colour, in the total's bins.
void AddClassRatePair(const ArrivalSchedule& plan, size_t c, RateSteps steps,
                      const std::string& width_text, RpsFigure& fig) {
  const std::string& name = plan.classes[c].name;
  const std::string achieved_name = absl::StrCat(name, ": achieved");
  const std::string intended_name = absl::StrCat(name, ": intended");
  TraceSpec achieved = kAchievedSpec;
  achieved.name = achieved_name.c_str();
  achieved.color = ClassColor(c);
  achieved.look = "Solid step line in the class's colour (the same on both pages)";
  TraceSpec intended = kIntendedSpec;
  intended.name = intended_name.c_str();
  intended.color = achieved.color;
  intended.look = "Dashed step line in the class's colour";
  const std::string bins = absl::StrCat(" per ", width_text, " s bin ÷ bin width (the bins of ",
                                        kAchievedRateName, ").");
  const std::string sent = FormatCount(steps.sent);
  const std::string planned = FormatCount(steps.planned);
  AddRatePair(
      achieved, intended, std::move(steps),
      {.achieved_criterion = absl::StrCat("Class ", name, ": its ", sent,
                                          " sent requests; in every bin the classes' achieved "
                                          "rates add up to the Achieved Rate."),
       .achieved_computation = absl::StrCat("Actual sends of class ", name, bins),
       .intended_criterion = absl::StrCat("Class ", name, ": its ", planned,
                                          " planned requests (requests never sent included)."),
       .intended_computation = absl::StrCat("Planned offsets t_i of class ", name, bins),
       .achieved_meaning = absl::StrCat("How many requests of class ", name,
                                        " per second were actually sent over time."),
       .intended_meaning =
           absl::StrCat("How many requests of class ", name, " per second the plan intended.")},
      fig);
}

void AddRateTraces(RateChartSteps rates, const ArrivalSchedule& plan, const ActualStats& st,
                   RpsFigure& fig) {
  const std::string width_text = FormatShort(st.rate_bin_width_s);
  const std::string m = FormatCount(rates.total.sent);
  const std::string n = FormatCount(rates.total.planned);
  AddRatePair(
      kAchievedSpec, kIntendedSpec, std::move(rates.total),
      {.achieved_criterion = absl::StrCat(
           "All ", m, " sent requests; overall achieved rate ", ReqPerS(st.achieved_rate_rps),
           " req/s = (n − 1)/(last send − first send); KS distance between achieved and planned "
           "inter-send intervals ",
           Ks(st.ks_distance), "."),
       .achieved_computation = absl::StrCat(
           "Actual sends per ", width_text,
           " s bin ÷ bin width (bin width = 1, 2 or 5 × 10^k s, about 20 sends per bin, 10–200 "
           "bins; the last bin runs to the end and is divided by its own length)."),
       .intended_criterion =
           absl::StrCat("The whole plan (requests never sent included); intended rate ",
                        ReqPerS(st.intended_rate_rps), " req/s = (N − 1)/(t_{N−1} − t_0) over all ",
                        n, " planned offsets."),
       .intended_computation =
           absl::StrCat("Planned offsets t_i of all ", n, " planned requests per ", width_text,
                        " s bin ÷ bin width.")},
      fig);
  for (size_t c = 0; c < rates.classes.size(); ++c) {
    AddClassRatePair(plan, c, std::move(rates.classes[c]), width_text, fig);
  }
}

// R-ACT-5: lateness histogram, rate over time, KS distance.
// `planned` holds the planned offsets of the sent requests, sorted.
// `summary_lateness`: the summary's percentiles, used instead of the computed
// ones when given.
void AddActualExtras(const ArrivalSchedule& plan, std::span<const TimedSend> sorted,
                     std::span<const double> planned,
                     const std::optional<SendLatenessPercentiles>& summary_lateness, RpsFigure& fig,
                     ActualStats& st) {
  const size_t m = sorted.size();
  // One m-sized buffer serves the lateness, then the actual intervals.
  std::vector<double> buffer(m);
  for (size_t k = 0; k < m; ++k) {
    buffer[k] = (sorted[k].t - plan.offset_s[sorted[k].index]) * 1e3;
  }
  const LatenessFacts lateness = MeasureLateness(buffer);
  st.lateness_p50_s = lateness.q[0] / 1e3;
  st.lateness_p90_s = lateness.q[1] / 1e3;
  st.lateness_p99_s = lateness.q[2] / 1e3;
  st.lateness_max_s = lateness.q[3] / 1e3;
  if (summary_lateness.has_value()) {
    st.lateness_p50_s = summary_lateness->p50_s;
    st.lateness_p90_s = summary_lateness->p90_s;
    st.lateness_p99_s = summary_lateness->p99_s;
    st.lateness_max_s = summary_lateness->max_s;
  }
  MeasureIntervals(plan, sorted, planned, buffer, st);
  std::vector<double>().swap(buffer);
  RateChartSteps rates = MeasureRates(plan, sorted, st);
  AddActualChartFrames(lateness, st, m, fig);
  fig.traces.push_back(LatenessTrace(lateness, st, m));
  AddRateTraces(std::move(rates), plan, st, fig);
}

// ---- Sends -----------------------------------------------------------------

absl::Status CheckSends(const ArrivalSchedule& plan, std::span<const ActualSend> sends) {
  const size_t n = plan.size();
  std::vector<bool> seen(n, false);
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
  return absl::OkStatus();
}

// The sends in (time, index) order with their gaps, and the planned offsets
// of the sent requests, sorted.
struct SortedSends {
  std::vector<TimedSend> sends;
  std::vector<double> planned;
};

// Sends in index (= plan) order first: each one's gap to its planned
// predecessor, the previous sent request in plan order (ActualStats), and
// the planned offsets of the sent requests (sorted: plan offsets never
// decrease; checked). Then a stable radix sort by time gives (time, index)
// order, so the input order never matters. In instant mode every request is
// planned at 0 and there is no planned order: the predecessor is the
// previous send in time (R-ACT-4).
SortedSends SortSends(const ArrivalSchedule& plan, std::span<const ActualSend> sends) {
  SortedSends out;
  std::vector<TimedSend>& sorted = out.sends;
  sorted.reserve(sends.size());
  bool in_order = true;
  for (const ActualSend& s : sends) {
    in_order = in_order && (sorted.empty() || sorted.back().index < s.index);
    sorted.push_back({s.sent_offset_s, s.index});
  }
  std::vector<TimedSend> scratch;
  if (!in_order) {  // indices < 2^53: exact as double keys
    radix_internal::RadixSortByKey(
        std::span<TimedSend>(sorted),
        [](const TimedSend& s) { return static_cast<double>(s.index); }, scratch);
  }
  const bool instant = plan.traffic.instant;
  out.planned.reserve(sorted.size());
  for (size_t k = 0; k < sorted.size(); ++k) {
    out.planned.push_back(plan.offset_s[sorted[k].index]);
    if (k > 0 && !instant) sorted[k].gap = sorted[k].t - sorted[k - 1].t;
  }
  radix_internal::RadixSortByKey(
      std::span<TimedSend>(sorted), [](const TimedSend& s) { return s.t; }, scratch);
  if (instant) {
    for (size_t k = 1; k < sorted.size(); ++k) sorted[k].gap = sorted[k].t - sorted[k - 1].t;
  }
  if (!std::is_sorted(out.planned.begin(), out.planned.end())) SortDoubles(out.planned);
  return out;
}

// ---- Late marks --------------------------------------------------------------

constexpr char kLateMarkHover[] = "t = %{x:.4f} s<br>intended RPS = %{y:.4g}";

struct LateMarkSpec {
  LateMark::Kind kind;
  TraceSpec spec;
};

constexpr LateMarkSpec kLateMarkSpecs[] = {
    {LateMark::Kind::kLate,
     {.name = kLateSendName,
      .chart = kTimeChart,
      .kind = TraceKind::kMarkers,
      .color = kBrown,
      .hover = kLateMarkHover,
      .meaning = "Released more than late_threshold_ms after its planned send (any late policy).",
      .computation = "x = actual send time (s after t0), y = the plan's intended rate λ_i of the "
                     "request.",
      .look = "Brown crosses",
      .symbol = "cross"}},
    {LateMark::Kind::kSkipped,
     {.name = kSkippedLateName,
      .chart = kTimeChart,
      .kind = TraceKind::kMarkers,
      .color = "#000000",
      .hover = kLateMarkHover,
      .meaning = "Not sent: the pacer reached it more than late_threshold_ms after its planned "
                 "send (late_policy skip); its record has status skipped.",
      .computation = "x = planned offset t_i (it has no send), y = the plan's intended rate λ_i.",
      .look = "Black x's",
      .symbol = "x"}},
    {LateMark::Kind::kDelayed,
     {.name = kDelayedCatchUpName,
      .chart = kTimeChart,
      .kind = TraceKind::kMarkers,
      .color = kPurple,
      .hover = kLateMarkHover,
      .meaning = "Late, and held back by the catch-up spacing (late_policy cap): released at "
                 "least 1/catch_up_rps after the release before it.",
      .computation = "x = actual send time (s after t0), y = the plan's intended rate λ_i.",
      .look = "Purple diamonds",
      .symbol = "diamond"}},
};

}  // namespace

absl::StatusOr<RpsFigure> BuildActualRpsFigure(
    const ArrivalSchedule& plan, std::span<const ActualSend> sends,
    const std::optional<SendLatenessPercentiles>& lateness) {
  if (absl::Status s = ValidatePlan(plan); !s.ok()) return s;
  if (absl::Status s = CheckSends(plan, sends); !s.ok()) return s;
  const SortedSends sorted = SortSends(plan, sends);
  RpsFigure fig;
  fig.title = PageTitle(plan.traffic);
  fig.instant = plan.traffic.instant;
  ActualStats st;
  st.sent = sorted.sends.size();
  if (fig.instant) {
    fig.expected.requests = plan.size();
    fig.charts.push_back(TimeVsRpsChart());
  } else {
    AddExpectedCharts(plan, fig);
  }
  AddActualTrace(plan, sorted.sends, fig, st);
  if (!fig.instant) AddActualExtras(plan, sorted.sends, sorted.planned, lateness, fig, st);
  ChooseTimeAxis(fig);
  fig.actual = st;
  return fig;
}

void AddLateMarks(const ArrivalSchedule& plan, std::span<const LateMark> marks, RpsFigure& fig) {
  const size_t n = plan.offset_s.size();
  for (const LateMarkSpec& style : kLateMarkSpecs) {
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
    XySeries drawn;
    for (uint64_t r : StratifiedSampleRanks(points.size(), kMaxAnomalyPoints)) {
      drawn.Add(points[r].first, points[r].second);
    }
    const std::string note = DrawnNote(drawn.size(), full, kStratifiedRule);
    FigureTrace tr =
        MakeTrace(style.spec, std::move(drawn), full,
                  {.criterion = CountOf(full, n), .appearance = Look(style.spec, note)});
    // After the other traces of chart 0 (grouped by chart, in legend order).
    auto at = std::find_if(fig.traces.begin(), fig.traces.end(),
                           [](const FigureTrace& t) { return t.chart > 0; });
    fig.traces.insert(at, std::move(tr));
  }
}

}  // namespace surge::coordinator
