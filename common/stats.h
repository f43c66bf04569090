// The statistics module: every percentile surge reports (summary JSON/CSV,
// console table, pages) comes from here (R-MET-2).
//
// Exact order statistics use linear interpolation between closest ranks,
// numpy's default ("linear"): pos = p/100·(n−1),
// v[⌊pos⌋] + (pos − ⌊pos⌋)·(v[⌊pos⌋+1] − v[⌊pos⌋]).
//
// StreamingStats keeps a metric in bounded memory: exact values up to a
// limit, then a log-linear histogram (on a Boost.Histogram log axis) whose percentile
// estimates are within kStreamingRelativeError of the exact ones.
#ifndef SURGE_COMMON_STATS_H_
#define SURGE_COMMON_STATS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace surge {

// The exact p-th percentile (p ∈ [0, 100], clamped) of `sorted` (ascending),
// numpy "linear": 1..10 → p50 5.5, p90 9.1. NaN when empty.
double PercentileOfSorted(std::span<const double> sorted, double p);

// The same percentiles of unsorted values, one per entry of `ps`, by
// selection (nth_element) in O(n log k) for k distinct ranks: no full sort.
// Reorders `values`. Each NaN when empty.
std::vector<double> Percentiles(std::span<double> values, std::span<const double> ps);

// The percentiles the outputs show (RunConfig.metric_percentiles,
// --metric-percentiles, vLLM's flag): ascending, without repeats. When the
// user gave none (`given` false): 50, 75, 90, 99, 99.9 — the console and
// the CSV then show what they always did (p50/p99; Median/P75/P90/P99) and
// the JSON adds p99.9.
struct MetricPercentiles {
  std::vector<double> values = {50, 75, 90, 99, 99.9};
  bool given = false;
};
// Parses a comma list of numbers in (0, 100), e.g. "50,90,99,99.9" (spaces
// allowed); "" is the default set. Errors: INVALID_ARGUMENT saying which
// entry is wrong and what is allowed. Pure.
absl::StatusOr<MetricPercentiles> ParseMetricPercentiles(const std::string& text);
// A percentile's name in keys and headers, as vLLM writes it: "99" for a
// whole number, else the shortest decimal that reads back ("99.9"). Pure.
std::string PercentileName(double p);

// Arithmetic mean, summed in order; NaN when empty.
double Mean(std::span<const double> values);

// Relative error bound of StreamingStats' percentile estimates once it holds
// a histogram: values are counted in bins whose edges grow by the factor
// 10^(1/kStreamingBinsPerDecade) ≈ 1.00997, and an estimate is placed
// geometrically inside its bin, so |estimate − exact| ≤ 0.5 % · |exact| for
// |values| in [kStreamingMinMagnitude, kStreamingMaxMagnitude). Smaller
// non-zero magnitudes count as kStreamingMinMagnitude; larger ones as the
// exact max (or min, when negative).
inline constexpr int kStreamingBinsPerDecade = 232;
inline constexpr double kStreamingMinMagnitude = 1e-12;
inline constexpr double kStreamingMaxMagnitude = 1e12;
inline constexpr double kStreamingRelativeError = 0.005;
// Bins of each magnitude histogram: 24 decades of kStreamingBinsPerDecade.
inline constexpr int kStreamingBins = 24 * kStreamingBinsPerDecade;

// The histogram bin (0 ≤ bin < kStreamingBins) StreamingStats counts a
// magnitude (|value|, ≥ 0) in, without a log: the double's exponent and
// top 6 mantissa bits pick a first bin from a table, then at most a few
// comparisons with the bins' lower edges (each the smallest double the log
// axis puts in that bin, found once per process) give the bin — always the
// one StreamingBinByLog gives (tests/common/stats_test.cc checks it over
// 24 decades, at every edge and its neighbours). Magnitudes below
// kStreamingMinMagnitude (0 too) and NaN give bin 0; from
// kStreamingMaxMagnitude on (+inf too) the last bin. Pure.
int StreamingBin(double magnitude);
// The same bin from the log axis itself (Boost.Histogram's regular axis
// with a log transform: ⌊(ln m − ln min)/(ln max − ln min) · bins⌋), with
// the same clamping: the reference StreamingBin is exact against. Pure.
int StreamingBinByLog(double magnitude);

// One metric's values, streamed in with Add, mergeable (per worker, per
// window), in bounded memory.
//
// Up to `exact_limit` values are kept as they are and every statistic is
// exact (numpy "linear" percentiles). Past the limit the values move into a
// log-linear histogram (two of them: positive and negative magnitudes, plus
// a zero count; ≈ 5,600 bins each, 90 KB in all) and percentiles become
// estimates within kStreamingRelativeError; count, min, max and mean stay
// exact (the mean is the in-order sum / count either way). exact_limit = 0
// means histogram from the first value; kUnlimited keeps every value.
//
// Not thread-safe. NaN values are ignored (counted in ignored_nan()).
class StreamingStats {
 public:
  static constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();
  // Values kept exactly before the histogram takes over (8 bytes each).
  static constexpr size_t kDefaultExactLimit = 1'000'000;

  explicit StreamingStats(size_t exact_limit = kDefaultExactLimit);
  ~StreamingStats();
  StreamingStats(StreamingStats&&) noexcept;
  StreamingStats& operator=(StreamingStats&&) noexcept;
  StreamingStats(const StreamingStats&) = delete;
  StreamingStats& operator=(const StreamingStats&) = delete;

  void Add(double value);
  // Adds each of `ns` (nanoseconds) as seconds, NanosToSeconds(ns[i]) —
  // the values, percentiles, count, min and max those Adds would give —
  // with the count, min, max and sum taken over the whole span in integers
  // first (one record's inter-token gaps in one call): the sum then adds
  // Σns/1e9 once, rounding once where value-by-value adds round each time.
  void AddNanos(std::span<const int64_t> ns);
  // Adds every value `other` holds (its exact values, or its histogram:
  // once either side is a histogram, so is the result).
  void Merge(const StreamingStats& other);

  size_t count() const { return count_; }
  uint64_t ignored_nan() const { return ignored_nan_; }
  // NaN when empty.
  double min() const;
  double max() const;
  double mean() const;
  // True while every value is kept: percentiles are exact.
  bool exact() const { return histogram_ == nullptr; }

  // The p-th percentile (p ∈ [0, 100], clamped): exact (numpy "linear")
  // while exact(), else the histogram's estimate at the same rank position
  // p/100·(n−1), clamped to [min, max]. p = 0 and 100 are always the exact
  // min and max. NaN when empty. Sorts the kept values the first time after
  // an Add (hence not const).
  double Percentile(double p);

 private:
  struct Histogram;
  void SpillToHistogram();
  // The value at 0-based rank r (0 ≤ r < count_) estimated from the histogram.
  double HistogramValueAtRank(uint64_t rank) const;

  size_t exact_limit_;
  size_t count_ = 0;
  uint64_t ignored_nan_ = 0;
  double sum_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
  std::vector<double> values_;
  bool sorted_ = true;
  std::unique_ptr<Histogram> histogram_;
};

// Counts of values at or below each of a few fixed upper bounds, plus the
// count and sum of all: a Prometheus histogram's `_bucket{le=...}`, `_count`
// and `_sum` (the live metrics, docs/METRICS.md). A value lands in the first
// bucket whose bound is >= it (`le`, "less or equal"); values above the last
// bound only in the count (the "+Inf" bucket). Counts are not cumulative
// here; Cumulative() makes them so. Not thread-safe. NaN is ignored.
class BucketCounts {
 public:
  // `upper_bounds`: strictly increasing, finite.
  explicit BucketCounts(std::vector<double> upper_bounds);
  void Add(double value);
  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Values <= upper_bounds()[i] for each i (Prometheus' `le` buckets).
  std::vector<uint64_t> Cumulative() const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace surge

#endif  // SURGE_COMMON_STATS_H_
