// The content of the two RPS distribution pages as plain data:
// which charts, which traces with which (already sampled or decimated)
// points, the "Legend Explanation" rows and the summary numbers. Pure: no
// I/O; plot_pages.h renders an RpsFigure to HTML and JSON.
//
// Units: times are seconds after the run start t0, rates requests/s,
// lateness seconds in the stats (milliseconds on the lateness chart's axis).
#ifndef SURGE_COORDINATOR_REPORT_RPS_FIGURE_H_
#define SURGE_COORDINATOR_REPORT_RPS_FIGURE_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/number_format.h"  // FormatCount
#include "coordinator/report/page_types.h"
#include "coordinator/report/plot_model.h"

namespace surge::coordinator {

// The actual send time of plan request `index`: seconds after t0 on the
// coordinator's clock, first byte handed to the socket (R-ACT-2).
struct ActualSend {
  uint64_t index;
  double sent_offset_s;
};

// Exact trace names (R-PLOT-3..5, R-ACT-3); the EWMA's is "<W>-point EWMA".
inline constexpr char kNormalRpsName[] = "Normal RPS";
inline constexpr char kTimingAnomalyName[] = "Time Interval Caused Anomaly";
inline constexpr char kBurstinessAnomalyName[] = "Burstiness Caused Anomaly";
// The theoretical-rate lines (kTheoreticalRampName, kTheoreticalRateName)
// are named by the traffic's description (coordinator/plan/traffic.h).
// With traffic classes, chart 0 draws a line per class named by the class
// and their sum named so.
inline constexpr char kAllClassesRateName[] = "All classes: intended rate";
inline constexpr char kNormalRequestCountName[] = "Normal Request Count";
inline constexpr char kNormalIntervalsName[] = "Normal Intervals";
inline constexpr char kActualRpsName[] = "Actual RPS: After Excluding Anomalies";
// R-ACT-5 traces (surge's names).
inline constexpr char kSendLatenessName[] = "Send Lateness";
inline constexpr char kAchievedRateName[] = "Achieved Rate";
inline constexpr char kIntendedRateName[] = "Intended Rate";

// Chart titles (R-PLOT-3..5; R-ACT-5 ones are surge's).
inline constexpr char kTimeVsRpsTitle[] = "Time vs RPS - Distribution";
inline constexpr char kRpsHistogramTitle[] = "Expected: RPS vs Request Count - Distribution";
inline constexpr char kLatenessTitle[] = "Actual: Send Lateness Distribution";
inline constexpr char kRateOverTimeTitle[] = "Actual: Achieved vs Intended Rate over Time";

// Full counts of the plan (R-ANOM); never sampled.
struct ExpectedStats {
  uint64_t requests = 0;
  uint64_t normal = 0;
  uint64_t timing = 0;
  uint64_t burstiness = 0;
  int ewma_window = 0;
  // Timing anomalies with Δ_i = 0 (infinite RPS): counted, never drawn.
  uint64_t infinite_rps = 0;
};

// R-ACT-3/5 numbers. NaN where undefined (fewer than two sends).
//
// The actual interval of a sent request is measured from the actual send of
// its planned predecessor: the previous request in plan order that was sent
// (plan order = index order; planned offsets never decrease). In instant
// mode, where every request is planned at 0 and there is no planned order,
// from the previous actual send in time. See docs/PLOTS.md.
struct ActualStats {
  uint64_t sent = 0;
  // Sends that have a predecessor and whose request was normal in the plan
  // (all such sends in instant mode): the candidates of the actual trace.
  uint64_t plan_normal = 0;
  // Of those, how many had a zero difference to the predecessor's send, and
  // how many a negative one (sent before the predecessor); not drawn.
  uint64_t zero_differences = 0;
  uint64_t negative_differences = 0;
  // The same over all sends with a predecessor, whatever their class.
  uint64_t all_zero_differences = 0;
  uint64_t all_negative_differences = 0;
  // plan_normal − zero − negative differences: the actual trace's full count.
  uint64_t actual_points = 0;
  uint64_t drawn_points = 0;
  // Lateness = actual − planned offset, seconds.
  double lateness_p50_s = std::numeric_limits<double>::quiet_NaN();
  double lateness_p90_s = std::numeric_limits<double>::quiet_NaN();
  double lateness_p99_s = std::numeric_limits<double>::quiet_NaN();
  double lateness_max_s = std::numeric_limits<double>::quiet_NaN();
  // Two-sample KS distance, achieved vs planned inter-send intervals of the
  // sent requests (R-MET-2).
  double ks_distance = std::numeric_limits<double>::quiet_NaN();
  // (n − 1)/(last − first actual send) over the n sent requests; NaN when
  // n < 2 or the span is 0 (R-MET-2).
  double achieved_rate_rps = std::numeric_limits<double>::quiet_NaN();
  // (N − 1)/(t_{N−1} − t_0) over the whole plan's N offsets, sent or not:
  // the plan's rate; NaN when N < 2 or the span is 0.
  double intended_rate_rps = std::numeric_limits<double>::quiet_NaN();
  // Rate-over-time bin width, seconds.
  double rate_bin_width_s = std::numeric_limits<double>::quiet_NaN();
};

struct RpsFigure {
  // The R-PLOT-2 chart title (with units: "Target Rate: 20 RPS").
  std::string title;
  // One line shown on the page right above the plot, e.g. "Run interrupted
  // by the user at 4.97 s: ..."; empty = none. Also in the stats JSON.
  std::string note;
  bool instant = false;
  // What was run, where, when, by which surge; shown above the charts.
  PageContext context;
  // What happened during the run (AddRunEvents), in time order; listed above
  // the context and in the stats JSON as "events".
  std::vector<RunEvent> events;
  // Latency from actual vs from planned send (actual page only); a table
  // below the context (#surge-latency) and "latency" in the stats JSON.
  // Empty = none.
  std::vector<LatencyView> latency;
  std::vector<FigureChart> charts;
  std::vector<FigureTrace> traces;  // grouped by chart, in legend order
  ExpectedStats expected;
  std::optional<ActualStats> actual;

  // The trace named `name` on `chart`, or nullptr.
  const FigureTrace* Find(size_t chart, std::string_view name) const;
};

// kPageTitlePrefix and the traffic's short title (R-PLOT-2), e.g.
// "Request Per Second(RPS) Distribution Analysis | Target Rate: <x> RPS"
// plus " | <Linear|Exponential> Ramp-up: <start>→<end> RPS" when the ramp is
// active, or " | Instant Mode" in instant mode.
std::string PageTitle(const ResolvedTraffic& traffic);

// The HTML <title> of a page: PageTitle plus " — expected" (no actual
// stats) or " — actual", so the two pages of a run differ in a tab list.
std::string HtmlPageTitle(const RpsFigure& figure);

// "Expected: Gamma Distribution (burstiness: <β>)" (R-PLOT-5).
std::string GammaChartTitle(double burstiness);

// "<W>-point EWMA" (R-PLOT-3).
std::string EwmaTraceName(int window);

// The expected figure (R-PLOT-2..8). Errors: FAILED_PRECONDITION in instant
// mode (R-PLOT-0); INVALID_ARGUMENT for an empty plan or one whose columns
// differ in length.
absl::StatusOr<RpsFigure> BuildExpectedRpsFigure(const ArrivalSchedule& plan);

// The actual figure (R-ACT-3..5): the expected figure plus the actual trace
// and the R-ACT-5 charts; in instant mode only the actual Time vs RPS chart
// (R-ACT-4). `sends` may be in any order and may cover a subset of the plan
// (interrupted run, R-ACT-1). Errors: INVALID_ARGUMENT for a bad plan (as
// above), a send whose index is outside the plan or repeated, or whose time
// is not finite.
//
// `lateness`: the send lateness percentiles from the run summary (the same
// numbers as the summary JSON and the console), shown in the lateness
// chart's title and legend and in the stats; without it (tests, sample
// pages) they are computed from `sends`.
absl::StatusOr<RpsFigure> BuildActualRpsFigure(
    const ArrivalSchedule& plan, std::span<const ActualSend> sends,
    const std::optional<SendLatenessPercentiles>& lateness = std::nullopt);

// A request the late-send policy acted on (docs/DESIGN.md "Late-send
// policy"), for the actual page's Time vs RPS chart.
struct LateMark {
  enum class Kind {
    kLate,     // released more than late_threshold_ms after its planned send
    kSkipped,  // not sent for it (late_policy skip)
    kDelayed,  // held back by the catch-up spacing (late_policy cap)
  };
  uint64_t index = 0;  // plan request index
  Kind kind = Kind::kLate;
  // Seconds after t0: the planned offset for kSkipped (it has no send), the
  // actual send (else the release) for kLate and kDelayed.
  double at_s = 0;
};

// Trace names of the late marks (surge's names).
inline constexpr char kLateSendName[] = "Late Send";
inline constexpr char kSkippedLateName[] = "Skipped (late)";
inline constexpr char kDelayedCatchUpName[] = "Delayed (catch-up)";

// Adds one marker trace per kind present in `marks` to the Time vs RPS chart
// (chart 0), after the traces already there: x = at_s, y = the plan's
// intended rate λ_i of the request (so each mark sits on the planned rate
// curve where it happened); "Late Send" brown crosses, "Skipped (late)"
// black x's, "Delayed (catch-up)" purple diamonds, each with a legend row
// giving its full count. At most kMaxAnomalyPoints drawn per kind
// (stratified over time); a mark whose λ_i is not a finite rate > 0
// (instant mode) is counted, not drawn; one outside the plan is ignored.
// No marks, no traces: the page is as before.
void AddLateMarks(const ArrivalSchedule& plan, std::span<const LateMark> marks, RpsFigure& fig);

// Adds `events` to `fig`: sorted by time into fig.events, and one marker
// per event (x = at_s, the event's label, kRunEventColor, its text on hover)
// on every chart with time_axis. Events with a non-finite time are dropped.
void AddRunEvents(std::vector<RunEvent> events, RpsFigure& fig);
// Adds each band to every chart whose x is the run's time axis (Time vs
// RPS, Achieved vs Intended Rate); bands with a non-finite or empty extent
// are left out.
void AddShadedBands(std::span<const ShadedBand> bands, RpsFigure& fig);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_RPS_FIGURE_H_
