// Pure math behind the two RPS distribution pages: EWMA and its
// adaptive window (R-PLOT-3), stratified sampling over time quantiles and
// min/max-preserving decimation (R-PLOT-8, R-ACT-3), histogram binning
// (R-PLOT-4/5, R-ACT-5), exact percentiles and the two-sample
// Kolmogorov–Smirnov distance (R-ACT-5, R-MET-2), rate over time (R-ACT-5).
//
// No I/O, no clock, no threads; every function is deterministic (same input
// → same output) and at most O(n log k) for n values. Units are whatever the
// caller passes (seconds, requests/s); the functions never convert.
#ifndef SURGE_COORDINATOR_REPORT_PLOT_MODEL_H_
#define SURGE_COORDINATOR_REPORT_PLOT_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/stats.h"

namespace surge::coordinator {

// At most this many points of one anomaly class are drawn (R-PLOT-8).
inline constexpr size_t kMaxAnomalyPoints = 1000;
// At most this many points of the actual RPS trace are drawn (R-ACT-3).
inline constexpr size_t kMaxActualPoints = 5000;
// At most this many points of any line trace (Normal RPS, EWMA, ramp) are
// drawn; beyond it min/max decimation applies (R-PLOT-8, surge's addition).
inline constexpr size_t kMaxLinePoints = 4000;
// Histogram bin count bounds of the Freedman–Diaconis rule (docs/PLOTS.md).
inline constexpr int kMinHistogramBins = 10;
inline constexpr int kMaxHistogramBins = 100;

// ---------------------------------------------------------------- EWMA ----

// Adaptive EWMA window W of R-PLOT-3 for a series of `points` values:
// 20 when ≤ 1,000, 50 when ≤ 10,000, 100 when ≤ 100,000, else 200.
int EwmaWindow(uint64_t points);

// α = 2/(W+1). `window` must be ≥ 1.
double EwmaAlpha(int window);

// Streaming EWMA: EWMA_0 = v_0, EWMA_j = α·v_j + (1−α)·EWMA_{j−1}.
class EwmaSmoother {
 public:
  explicit EwmaSmoother(int window) : alpha_(EwmaAlpha(window)) {}
  // Adds the next value and returns the current EWMA.
  double Add(double value) {
    value_ = started_ ? alpha_ * value + (1.0 - alpha_) * value_ : value;
    started_ = true;
    return value_;
  }

 private:
  double alpha_;
  double value_ = 0;
  bool started_ = false;
};

// EWMA of a whole series (same length as `values`; empty for empty input).
std::vector<double> ComputeEwma(std::span<const double> values, int window);

// ------------------------------------------------ sampling, decimation ----

// Stratified sampling over time quantiles (R-PLOT-8, R-ACT-3). Given `n`
// points already ordered by time, returns the ranks (0-based positions in
// that order, strictly increasing) of the points to draw: all of them when
// n ≤ max_points, else exactly max_points, one per stratum, where stratum j
// holds ranks [⌊j·n/k⌋, ⌊(j+1)·n/k⌋) (k = max_points, equal-count strata =
// quantiles of time) and the drawn point is its middle one,
// r_j = ⌊(2j+1)·n/(2k)⌋. Any time-quantile range of the input therefore holds
// its proportional share of the drawn points within one point, and the
// drawn points keep the temporal density (the CDF) of the input.
// Requires n·2·max_points < 2^64.
std::vector<uint64_t> StratifiedSampleRanks(uint64_t n, uint64_t max_points);

// A drawable series: x[i], y[i].
struct XySeries {
  std::vector<double> x;
  std::vector<double> y;
  size_t size() const { return x.size(); }
  void Add(double xv, double yv) {
    x.push_back(xv);
    y.push_back(yv);
  }
};

// Min/max-preserving (M4) decimation of a line trace (R-PLOT-8). Points are
// added in x order; x must lie in [x_min, x_max]. When `total_points` (the
// number of points that will be added) is ≤ max_points every point is kept.
// Otherwise [x_min, x_max] is cut into max_points/4 equal-width buckets and
// each bucket keeps its first, last, minimum-y and maximum-y point (in input
// order, duplicates merged), so at most max_points points remain and every
// spike and every dip of the line is still drawn. Points whose x or y is not
// finite are dropped.
class MinMaxDecimator {
 public:
  MinMaxDecimator(double x_min, double x_max, uint64_t total_points, size_t max_points);
  void Add(double x, double y);
  // The kept points in input order. Call once.
  XySeries Finish();

 private:
  struct Kept {
    uint64_t seq;
    double x;
    double y;
  };
  struct Bucket {
    bool used = false;
    Kept first, last, min, max;
  };
  bool passthrough_;
  double x_min_;
  double inv_width_;
  uint64_t seq_ = 0;
  XySeries all_;
  std::vector<Bucket> buckets_;
};

// Convenience: decimates a whole series (x non-decreasing).
XySeries DecimateMinMax(std::span<const double> x, std::span<const double> y, size_t max_points);

// ------------------------------------------------------------ histogram ----

// Equal-width bins: bin k covers [lo + k·width, lo + (k+1)·width); the last
// bin also holds its upper edge. With log10 set, lo and width are in
// log10 units: bin k covers [10^(lo + k·width), 10^(lo + (k+1)·width)).
struct HistogramBins {
  double lo = 0;
  double width = 1;
  int count = 0;
  bool log10 = false;
};

// The binning rule (docs/PLOTS.md): Freedman–Diaconis width
// h = 2·IQR·n^(−1/3), bin count ⌈(max − min)/h⌉ clamped to
// [kMinHistogramBins, kMaxHistogramBins] (IQR = 0 gives the maximum), then
// the width is recomputed as (max − min)/count so the bins tile the range
// exactly. When max == min: one bin centred on the value, width |v|/100
// (1 when v == 0). n == 0: count 0.
HistogramBins FreedmanDiaconisBins(uint64_t n, double min, double max, double iqr);

struct Histogram {
  HistogramBins bins;
  std::vector<uint64_t> counts;  // bins.count entries; sum = number of values
  uint64_t Max() const;
  // Edges of bin k in data units.
  double Lower(int k) const;
  double Upper(int k) const { return Lower(k + 1); }
  // Centre of bin k in data units (geometric centre for log10 bins).
  double Center(int k) const;
  // Width of bin k in data units.
  double Width(int k) const { return Upper(k) - Lower(k); }
};

// Bins finite `values` by FreedmanDiaconisBins over their min, max and
// exact IQR (quartiles as in Percentiles). With log10 (all values > 0
// required) the rule is applied to log10(v), which gives bins of equal width
// on a log axis. O(n): selection, not sorting. Reorders `values`; with
// log10 also replaces each value by its log10.
Histogram BuildHistogram(std::span<double> values, bool log10 = false);

// Counts values into bins: v goes to bin ⌊(v − lo)/width⌋ (v must already be
// log10 for log10 bins), clamped to the first and last bin.
std::vector<uint64_t> CountIntoBins(std::span<const double> values, const HistogramBins& bins);

// Sorts finite values ascending in O(n) (stable LSD radix sort over the
// IEEE-754 bit patterns); the same order as std::sort. `scratch` (optional)
// is reused as the sort's buffer to spare an allocation.
void SortDoubles(std::span<double> values, std::vector<double>* scratch = nullptr);

// ---------------------------------------------------------- percentiles ----

// Percentiles: common/stats.h (PercentileOfSorted, Percentiles), the one
// statistics module.

// Two-sample Kolmogorov–Smirnov statistic sup_x |F_a(x) − F_b(x)| of the
// empirical distribution functions, ties handled exactly; in [0, 1], NaN when
// either sample is empty. The inputs must be sorted ascending.
double KsDistanceSorted(std::span<const double> a, std::span<const double> b);

// ------------------------------------------------------- rate over time ----

// Rounds up to 1, 2 or 5 × 10^k (k any integer). x must be > 0.
double NiceCeil(double x);

// Bin width (seconds) for a rate-over-time chart of `n` events over
// `span_s` seconds: NiceCeil(span_s / target) with target = clamp(n/20, 10,
// 200) bins, so that a bin holds about 20 events on average (docs/PLOTS.md).
// 1 when span_s ≤ 0.
double RateBinWidth(double span_s, uint64_t n);

// Events per second over time. Bin k < bins−1 covers
// [start + k·width, start + (k+1)·width) and shows count/width; the last bin
// covers [start + (bins−1)·width, end] (end included) and shows
// count/(end − its start), so a run whose end does not fall on a bin edge
// shows no spurious drop or spike at the end. Times outside are ignored.
class RateBinner {
 public:
  // width ≤ 0 is taken as 1, bins 0 as 1; an end not after the last bin's
  // start is taken as that start + width.
  RateBinner(double start, double width, size_t bins, double end);
  void Add(double t);
  std::vector<double> Rates() const;
  // Events counted per bin.
  const std::vector<uint64_t>& Counts() const { return counts_; }
  // Bin edges: bins + 1 values, the last one `end`.
  std::vector<double> Edges() const;

 private:
  double start_;
  double width_;
  double inv_width_;
  double end_;
  std::vector<uint64_t> counts_;
};

// Bins for a rate-over-time chart of events in [lo, hi]: start = ⌊lo/width⌋·
// width, bins = max(1, round((hi − start)/width)), end = hi.
RateBinner MakeRateBinner(double lo, double hi, double width);

// Rate over time of events that each belong to one of `groups` groups (the
// traffic classes of a merged plan): one RateBinner over all events and one
// per group, all copies of `bins`, so in every bin the groups' counts add up
// to the total's and group g's binner is the one its events alone would fill.
class GroupedRateBinner {
 public:
  GroupedRateBinner(const RateBinner& bins, size_t groups) : total_(bins), groups_(groups, bins) {}
  // Counts t in the total and, when group < groups(), in that group.
  void Add(double t, size_t group) {
    total_.Add(t);
    if (group < groups_.size()) groups_[group].Add(t);
  }
  const RateBinner& total() const { return total_; }
  const RateBinner& group(size_t g) const { return groups_[g]; }
  size_t groups() const { return groups_.size(); }

 private:
  RateBinner total_;
  std::vector<RateBinner> groups_;
};

// Regular bins (end = start + bins·width) over all `times`.
std::vector<double> RatePerBin(std::span<const double> times, double start, double width,
                               size_t bins);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_PLOT_MODEL_H_
