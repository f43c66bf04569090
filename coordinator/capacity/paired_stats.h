// The paired comparison's math (docs/COMPARE.md): requests of two runs of
// one plan joined by index, and per metric each side's median and p99, the
// median of the per-request differences B − A with a percentile-bootstrap
// 95 % interval, and the share of pairs where B was faster. Pure: no I/O,
// no clock; the bootstrap is seeded, so the same inputs give the same
// numbers.
#ifndef SURGE_COORDINATOR_CAPACITY_PAIRED_STATS_H_
#define SURGE_COORDINATOR_CAPACITY_PAIRED_STATS_H_

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace surge::coordinator {

// The metrics compared, in display order, by their names in compare.json.
inline constexpr const char* kComparedMetrics[] = {"ttft_ms", "tpot_ms", "e2el_ms"};
inline constexpr int kComparedMetricCount = 3;

// One request of a run as the comparison needs it (from its details line).
struct RequestTimes {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  uint64_t index = 0;
  // Planned send, s after t0.
  double planned_offset_s = kNaN;
  // The request succeeded (status ok).
  bool ok = false;
  // TTFT, TPOT ((e2el − ttft) / (output tokens − 1), NaN for fewer than 2
  // output tokens) and E2EL, ms, in kComparedMetrics order; NaN unless ok.
  double ms[kComparedMetricCount] = {kNaN, kNaN, kNaN};
};

// The requests ok in both runs, joined by index, ascending.
struct PairedRequests {
  std::vector<uint64_t> index;
  // A's planned offset of each pair (the plans are the same), s.
  std::vector<double> planned_offset_s;
  // Per metric (kComparedMetrics order): each pair's value in A and in B,
  // ms (NaN where that side did not measure it, e.g. TPOT of a one-token
  // answer).
  std::vector<double> a_ms[kComparedMetricCount];
  std::vector<double> b_ms[kComparedMetricCount];
  // Requests ok in A, ok in B, and indexes found in only one of the runs.
  uint64_t a_ok = 0, b_ok = 0, only_in_a = 0, only_in_b = 0;
};

// Joins `a` and `b` (any order; a repeated index keeps its last entry) by
// index, keeping the pairs ok on both sides.
PairedRequests PairByIndex(std::span<const RequestTimes> a, std::span<const RequestTimes> b);

// The percentile bootstrap's settings: resamples of the pairs (with
// replacement, each the size of the sample) and the seed of its
// std::mt19937_64.
struct BootstrapSettings {
  uint32_t resamples = 2000;
  uint64_t seed = 0;
};

// A closed interval; NaN ends when there is no data.
struct Interval {
  double low = std::numeric_limits<double>::quiet_NaN();
  double high = std::numeric_limits<double>::quiet_NaN();
};

// The 95 % percentile-bootstrap interval of the median of `d`: the 2.5th
// and 97.5th percentiles (common/stats.h's linear interpolation) of the
// medians of `resamples` resamples. The same d, resamples and seed give
// the same interval.
Interval BootstrapMedianInterval(std::span<const double> d, const BootstrapSettings& settings);

// One metric of the comparison; NaN numbers when there are no pairs.
struct PairedMetric {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string metric;  // "ttft_ms"
  // Pairs with the metric measured on both sides.
  uint64_t pairs = 0;
  // Each side's median and p99 over those pairs, ms.
  double a_median_ms = kNaN, a_p99_ms = kNaN, b_median_ms = kNaN, b_p99_ms = kNaN;
  // Median of d = B − A, ms, and its 95 % bootstrap interval.
  double median_diff_ms = kNaN;
  Interval ci_ms;
  // Share (0..1) of the pairs with d < 0 (B faster).
  double share_b_faster = kNaN;
};

// The metric `metric` of paired values `a_ms`, `b_ms` (same length; pairs
// with a NaN on either side are left out).
PairedMetric ComparePairs(const std::string& metric, std::span<const double> a_ms,
                          std::span<const double> b_ms, const BootstrapSettings& settings);

// What a metric's numbers say: "B faster" when the whole interval is below
// 0, "B slower" when above 0, else "no clear difference"; "" without pairs.
std::string MetricVerdict(const PairedMetric& m);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CAPACITY_PAIRED_STATS_H_
