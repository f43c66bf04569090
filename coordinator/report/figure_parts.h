// Internal to the RPS figure builders (rps_figure.cc, actual_figure.cc):
// the trace specs every trace is made from (how it looks, the fixed parts
// of its legend row), the legend-row texts shared by both pages, and the
// pieces of the expected figure the actual one reuses. Pure.
#ifndef SURGE_COORDINATOR_REPORT_FIGURE_PARTS_H_
#define SURGE_COORDINATOR_REPORT_FIGURE_PARTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/report/plot_model.h"
#include "coordinator/report/rps_figure.h"

namespace surge::coordinator::figure_internal {

inline constexpr char kBlue[] = "#1f77b4";
inline constexpr char kRed[] = "#d62728";
inline constexpr char kYellow[] = "#f2c500";
inline constexpr char kPurple[] = "#9467bd";
inline constexpr char kGreen[] = "#2ca02c";
inline constexpr char kOrange[] = "#ff7f0e";
inline constexpr char kBrown[] = "#8c564b";

// The colour of traffic class `c` (its index in ArrivalSchedule::classes):
// the same on both pages and on every chart, none of the colours above.
const char* ClassColor(size_t c);

inline constexpr char kGroupTime[] = "Time vs RPS";
inline constexpr char kGroupRpsHist[] = "RPS vs Request Count";
inline constexpr char kGroupGamma[] = "Gamma Distribution";
inline constexpr char kGroupLateness[] = "Send Lateness";
inline constexpr char kGroupRate[] = "Rate over Time";
inline constexpr char kGroupReuse[] = "Prefix Reuse";

// The charts' indices, in the order the figures add them.
inline constexpr size_t kTimeChart = 0;
inline constexpr size_t kRpsHistChart = 1;
inline constexpr size_t kIntervalChart = 2;
inline constexpr size_t kLatenessChart = 3;
inline constexpr size_t kRateChart = 4;
// Only when the server reported cached tokens (reuse_figure.h).
inline constexpr size_t kReuseChart = 5;
// The legend group of each chart, by index.
inline constexpr const char* kChartGroups[] = {kGroupTime,     kGroupRpsHist, kGroupGamma,
                                               kGroupLateness, kGroupRate,    kGroupReuse};

// How a trace looks and the fixed parts of its legend row: one entry per
// trace the pages draw (the tables below).
struct TraceSpec {
  const char* name;
  size_t chart;
  TraceKind kind;
  const char* color;
  const char* hover;
  const char* meaning = "";
  const char* computation = "";
  // The appearance column, before "; <how many points are drawn>".
  const char* look = "";
  const char* symbol = "";
  double marker_size = 8;
  const char* dash = "solid";
  const char* line_shape = "";
  double line_width = 1.5;
};

// The variable columns of a legend row; an empty meaning or computation
// takes the spec's.
struct RowText {
  std::string criterion;
  std::string appearance;
  std::string computation = "";
  std::string meaning = "";
};

inline constexpr char kStratifiedRule[] = "stratified sampling over time quantiles";
inline constexpr char kDecimationRule[] = "min/max decimation per time bucket";

// "n requests (p% of whole)".
std::string CountOf(uint64_t part, uint64_t whole);
// "all n points drawn", or "d of n points drawn (<rule>)".
std::string DrawnNote(uint64_t drawn, uint64_t full, const std::string& rule);
// The bins of `h` in words (count, width, the rule).
std::string BinsNote(const Histogram& h);
// True when positive values from lo to hi span more than 100 times.
bool WantsLogAxis(double lo, double hi);
// INVALID_ARGUMENT for an empty plan or one whose columns differ in length.
absl::Status ValidatePlan(const ArrivalSchedule& plan);

// A trace of `spec` drawing `points`, which stand for `full_count` values.
FigureTrace MakeTrace(const TraceSpec& spec, XySeries points, uint64_t full_count, RowText text);
// The bars of `h` as a trace of `spec` (x = bin centre, y = count).
FigureTrace BarTrace(const TraceSpec& spec, const Histogram& h, uint64_t full_count, RowText text);
// The step line of `bins` drawn at their `edges` (bins.Edges(), or another
// binner's of the same bins). A rate needs at least two events: one send (or
// one planned request) alone would show 1/bin width, a number nobody asked
// for.
XySeries StepsOf(const RateBinner& bins, uint64_t events, const std::vector<double>& edges);
// "<spec.look>; <note>".
std::string Look(const TraceSpec& spec, const std::string& note);

// Takes the values at the ranks StratifiedSampleRanks picks, one value at a
// time in rank order.
class StratifiedPicker {
 public:
  StratifiedPicker(uint64_t count, size_t max) : ranks_(StratifiedSampleRanks(count, max)) {}
  // True when the next value is one of the picked.
  bool Take() {
    const bool take = next_ < ranks_.size() && ranks_[next_] == rank_;
    next_ += take;
    ++rank_;
    return take;
  }
  bool Done() const { return next_ >= ranks_.size(); }
  size_t size() const { return ranks_.size(); }

 private:
  std::vector<uint64_t> ranks_;
  size_t next_ = 0;
  uint64_t rank_ = 0;
};

// Chart 0 of both pages (R-PLOT-3, R-ACT-3).
FigureChart TimeVsRpsChart();
// Adds charts 0..2 and their traces (R-PLOT-3..5, R-PLOT-8).
void AddExpectedCharts(const ArrivalSchedule& plan, RpsFigure& fig);
// Picks chart 0's initial y axis type from its drawn values.
void ChooseTimeAxis(RpsFigure& fig);

}  // namespace surge::coordinator::figure_internal

#endif  // SURGE_COORDINATOR_REPORT_FIGURE_PARTS_H_
