// The statistics module (common/stats.h): exact numpy-"linear" percentiles,
// and StreamingStats — exact up to its limit, then a log-linear histogram
// within kStreamingRelativeError, mergeable (R-MET-2).
#include "common/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/random/lognormal_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

namespace surge {
namespace {

constexpr double kPs[] = {0, 1, 10, 25, 50, 75, 90, 99, 99.9, 100};

TEST(PercentileTest, LinearInterpolationLikeNumpy) {
  std::vector<double> v = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};  // 1..10 shuffled
  const double ps[] = {90, 50, 0, 100, 99, 25, 75};
  const std::vector<double> q = Percentiles(v, ps);
  EXPECT_NEAR(q[0], 9.1, 1e-12);
  EXPECT_NEAR(q[1], 5.5, 1e-12);
  EXPECT_DOUBLE_EQ(q[2], 1);
  EXPECT_DOUBLE_EQ(q[3], 10);
  EXPECT_NEAR(q[4], 9.91, 1e-12);
  EXPECT_NEAR(q[5], 3.25, 1e-12);
  EXPECT_NEAR(q[6], 7.75, 1e-12);
  std::vector<double> sorted(10);
  std::iota(sorted.begin(), sorted.end(), 1.0);
  EXPECT_NEAR(PercentileOfSorted(sorted, 50), 5.5, 1e-12);
  EXPECT_NEAR(PercentileOfSorted(sorted, 90), 9.1, 1e-12);
  EXPECT_TRUE(std::isnan(PercentileOfSorted({}, 50)));
}

TEST(PercentileTest, MatchesSortingOnLargeInput) {
  std::vector<double> v(100'001);
  uint64_t s = 88172645463325252ull;  // xorshift, deterministic
  for (double& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<double>(s % 1'000'000) / 7.0;
  }
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const double ps[] = {50, 90, 99, 100, 12.345};
  const std::vector<double> q = Percentiles(v, ps);
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_DOUBLE_EQ(q[i], PercentileOfSorted(sorted, ps[i])) << ps[i];
  }
}

TEST(PercentileTest, SelectionEqualsSortedOnUnsortedValues) {
  std::vector<double> v = {9, -3, 7, 7, 0.5, 12, -8, 4, 4, 1, 30};
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const std::vector<double> q = Percentiles(v, kPs);
  for (size_t i = 0; i < std::size(kPs); ++i) {
    EXPECT_DOUBLE_EQ(q[i], PercentileOfSorted(sorted, kPs[i])) << kPs[i];
  }
  EXPECT_DOUBLE_EQ(Mean(sorted), 63.5 / 11);
}

TEST(StreamingStatsTest, ExactBelowTheLimitEqualsSortedPercentiles) {
  StreamingStats s(100);
  std::vector<double> values;
  for (int i = 0; i < 100; ++i) {
    const double v = std::sin(i * 0.7) * 50 + i * 0.01;  // unsorted, both signs
    s.Add(v);
    values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  ASSERT_TRUE(s.exact());
  EXPECT_EQ(s.count(), 100u);
  for (double p : kPs) EXPECT_DOUBLE_EQ(s.Percentile(p), PercentileOfSorted(values, p)) << p;
  EXPECT_DOUBLE_EQ(s.min(), values.front());
  EXPECT_DOUBLE_EQ(s.max(), values.back());
  // The 101st value passes the limit: estimates from then on.
  s.Add(1.0);
  EXPECT_FALSE(s.exact());
  EXPECT_EQ(s.count(), 101u);
}

TEST(StreamingStatsTest, EmptyIsNaNAndNaNIsIgnored) {
  StreamingStats s;
  EXPECT_TRUE(std::isnan(s.Percentile(50)));
  EXPECT_TRUE(std::isnan(s.mean()));
  EXPECT_TRUE(std::isnan(s.min()));
  s.Add(std::nan(""));
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.ignored_nan(), 1u);
  StreamingStats h(0);
  h.Add(std::nan(""));
  EXPECT_TRUE(std::isnan(h.Percentile(50)));
}

// Compares a histogram-mode StreamingStats with the exact percentiles of the
// same values: every estimate within kStreamingRelativeError of the exact
// value (both neighbouring ranks have the same sign here), min/max/mean exact.
void ExpectWithinBound(const std::vector<double>& values, StreamingStats& s) {
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_FALSE(s.exact());
  ASSERT_EQ(s.count(), values.size());
  EXPECT_EQ(s.min(), sorted.front());
  EXPECT_EQ(s.max(), sorted.back());
  EXPECT_NEAR(s.mean(), Mean(values), 1e-9 * std::fabs(Mean(values)));
  for (double p : kPs) {
    const double exact = PercentileOfSorted(sorted, p);
    const double estimate = s.Percentile(p);
    EXPECT_LE(std::fabs(estimate - exact), kStreamingRelativeError * std::fabs(exact) * 1.0001)
        << "p" << p << " exact " << exact << " estimate " << estimate;
  }
}

TEST(StreamingStatsTest, HistogramEstimatesLogNormalLatenciesWithinBound) {
  // TTFT-like values: log-normal around 50 ms with a long tail, seconds.
  boost::random::mt19937_64 rng(7);
  boost::random::lognormal_distribution<double> dist(std::log(0.05), 0.8);
  StreamingStats s(0);
  std::vector<double> values;
  for (int i = 0; i < 200000; ++i) {
    values.push_back(dist(rng));
    s.Add(values.back());
  }
  ExpectWithinBound(values, s);
}

TEST(StreamingStatsTest, HistogramHandlesNegativeAndZeroValues) {
  // Lateness-like values: mostly tens of µs late, some early (negative) and
  // some exactly on time.
  boost::random::mt19937_64 rng(11);
  boost::random::normal_distribution<double> dist(-2e-5, 1e-5);
  StreamingStats s(0);
  std::vector<double> values;
  for (int i = 0; i < 50000; ++i) {
    const double v = i % 100 == 0 ? 0.0 : -dist(rng);
    values.push_back(v);
    s.Add(v);
  }
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  // Ranks whose neighbours share a sign: the relative bound holds.
  for (double p : {0.01, 0.1, 50.0, 90.0, 99.0}) {
    const double exact = PercentileOfSorted(sorted, p);
    ASSERT_NE(exact, 0);
    EXPECT_LE(std::fabs(s.Percentile(p) - exact),
              kStreamingRelativeError * std::fabs(exact) * 1.0001)
        << p;
  }
  // The zeros land at their exact rank: the share of values ≤ 0.
  const auto nonpositive =
      std::count_if(values.begin(), values.end(), [](double v) { return v <= 0; });
  const double zero_rank_p = 100.0 * (static_cast<double>(nonpositive) - 1) / (values.size() - 1);
  EXPECT_DOUBLE_EQ(s.Percentile(zero_rank_p), 0.0);
}

TEST(StreamingStatsTest, MergeOfPartsEqualsTheWhole) {
  // Per-worker histograms merged = one histogram of all values, bin for bin
  // (so every percentile is identical); exact parts merge exactly.
  boost::random::mt19937_64 rng(3);
  boost::random::lognormal_distribution<double> dist(std::log(0.002), 1.5);
  StreamingStats whole(0), a(0), b(0);
  StreamingStats exact_a(StreamingStats::kUnlimited), exact_b(StreamingStats::kUnlimited);
  std::vector<double> values;
  for (int i = 0; i < 30000; ++i) {
    const double v = dist(rng);
    values.push_back(v);
    whole.Add(v);
    (i % 3 == 0 ? a : b).Add(v);
    (i % 3 == 0 ? exact_a : exact_b).Add(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), whole.count());
  for (double p : kPs) EXPECT_DOUBLE_EQ(a.Percentile(p), whole.Percentile(p)) << p;
  exact_a.Merge(exact_b);
  ASSERT_TRUE(exact_a.exact());
  std::sort(values.begin(), values.end());
  for (double p : kPs) EXPECT_DOUBLE_EQ(exact_a.Percentile(p), PercentileOfSorted(values, p)) << p;
  // An exact part merged into a limited one past its limit spills.
  StreamingStats small(10);
  small.Merge(exact_a);
  EXPECT_FALSE(small.exact());
  EXPECT_EQ(small.count(), values.size());
  EXPECT_EQ(small.max(), values.back());
}

TEST(StreamingStatsTest, ValuesOutsideTheRangeClampToMinAndMax) {
  StreamingStats s(0);
  s.Add(1e-15);  // below kStreamingMinMagnitude
  s.Add(5e13);   // above kStreamingMaxMagnitude
  s.Add(1.0);
  EXPECT_EQ(s.Percentile(0), 1e-15);
  EXPECT_EQ(s.Percentile(100), 5e13);
  EXPECT_NEAR(s.Percentile(50), 1.0, kStreamingRelativeError);
}

// AddNanos (one record's gaps at a time, integer count/min/max/sum) against
// Add of each value as seconds: the same values, so the same percentiles;
// the mean within rounding of the value-by-value sum.
TEST(StreamingStatsTest, AddNanosEqualsAddOfEachValueInSeconds) {
  for (const size_t limit : {StreamingStats::kUnlimited, size_t{1000}, size_t{0}}) {
    StreamingStats by_value(limit), by_span(limit);
    uint64_t s = 12345;
    std::vector<int64_t> gaps;
    for (int record = 0; record < 300; ++record) {
      gaps.clear();
      // 0..127 gaps of ~2 ms with jitter; some negative and zero (a
      // span may cross the exact limit in its middle).
      const int n = record % 128;
      for (int k = 0; k < n; ++k) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        const int64_t gap = record % 50 == 7   ? -static_cast<int64_t>(s % 5000)
                            : record % 50 == 9 ? 0
                                               : 2'000'000 + static_cast<int64_t>(s % 400'000);
        gaps.push_back(gap);
        by_value.Add(static_cast<double>(gap) / 1e9);
      }
      by_span.AddNanos(gaps);
    }
    ASSERT_EQ(by_span.count(), by_value.count());
    EXPECT_EQ(by_span.exact(), by_value.exact()) << limit;
    EXPECT_EQ(by_span.exact(), limit == StreamingStats::kUnlimited);
    EXPECT_EQ(by_span.min(), by_value.min());
    EXPECT_EQ(by_span.max(), by_value.max());
    EXPECT_NEAR(by_span.mean(), by_value.mean(), 1e-15);
    for (double p : kPs) EXPECT_EQ(by_span.Percentile(p), by_value.Percentile(p)) << p;
  }
  // Nothing added by an empty span.
  StreamingStats empty;
  empty.AddNanos({});
  EXPECT_EQ(empty.count(), 0u);
  EXPECT_TRUE(std::isnan(empty.mean()));
  // The sum in integers: ten gaps of 0.1 s sum to exactly 1 s (value by
  // value, 0.1 + 0.1 + … rounds to 0.9999999999999999), mean 0.1.
  StreamingStats tenths, tenths_by_value;
  const std::vector<int64_t> tenth(10, 100'000'000);
  tenths.AddNanos(tenth);
  for (int64_t v : tenth) tenths_by_value.Add(static_cast<double>(v) / 1e9);
  EXPECT_EQ(tenths.mean(), 0.1);
  EXPECT_LT(tenths_by_value.mean(), 0.1);
}

// StreamingBin (exponent bits, a table, edge comparisons) against the log
// axis it replaces in the histogram's fill: the same bin for every value.
// Positive doubles order as their bit patterns.
uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}
double FromBits(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof(v));
  return v;
}

TEST(StreamingBinTest, EqualsTheLogAxisAtEveryEdgeAndItsNeighbours) {
  // Each edge where the log axis itself (its rounding included) starts bin
  // i: found here by the reference alone, searching down and up from the
  // ideal value 1e-12 · 10^(i/232); then the 8 doubles on either side of
  // it, and 40 on either side of the ideal value.
  uint64_t farthest_ulps = 0;
  for (int i = 1; i < kStreamingBins; ++i) {
    const double ideal =
        kStreamingMinMagnitude * std::pow(10.0, i / double{kStreamingBinsPerDecade});
    uint64_t below = Bits(ideal), above = Bits(ideal);
    for (uint64_t step = 1; StreamingBinByLog(FromBits(below)) >= i; step *= 2) below -= step;
    for (uint64_t step = 1; StreamingBinByLog(FromBits(above)) < i; step *= 2) above += step;
    while (above - below > 1) {
      const uint64_t mid = below + (above - below) / 2;
      (StreamingBinByLog(FromBits(mid)) >= i ? above : below) = mid;
    }
    ASSERT_EQ(StreamingBinByLog(FromBits(above)), i);
    ASSERT_EQ(StreamingBinByLog(FromBits(below)), i - 1);
    farthest_ulps =
        std::max(farthest_ulps, above > Bits(ideal) ? above - Bits(ideal) : Bits(ideal) - above);
    for (uint64_t b = above - 8; b <= above + 8; ++b) {
      ASSERT_EQ(StreamingBin(FromBits(b)), StreamingBinByLog(FromBits(b))) << FromBits(b);
    }
    for (uint64_t b = Bits(ideal) - 40; b <= Bits(ideal) + 40; ++b) {
      ASSERT_EQ(StreamingBin(FromBits(b)), StreamingBinByLog(FromBits(b))) << FromBits(b);
    }
  }
  // The axis' edges lie some doubles away from the ideal ones (its log and
  // division round; 113 at most with Debian 12's glibc): a table of ideal
  // edges would put values near them in the wrong bin.
  EXPECT_LT(farthest_ulps, 100000u);
  RecordProperty("farthest_edge_from_ideal_doubles", static_cast<int>(farthest_ulps));
}

TEST(StreamingBinTest, EqualsTheLogAxisOnLogUniformValues) {
  // 2,000,000 values spread evenly in log space over 28 decades (past both
  // ends of the axis' 24).
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int n = 0; n < 2'000'000; ++n) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const double u = static_cast<double>(s >> 11) * 0x1p-53;  // [0, 1)
    const double v = std::pow(10.0, -14 + 28 * u);
    ASSERT_EQ(StreamingBin(v), StreamingBinByLog(v)) << v;
  }
}

TEST(StreamingBinTest, EdgeCasesZeroOnePowersOfTwoAndTheEnds) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int last = kStreamingBins - 1;
  // Below the range, 0, NaN: the first bin; the top of the range and
  // beyond: the last.
  for (double v : {0.0, -0.0, std::numeric_limits<double>::denorm_min(), 1e-300, 1e-13, nan,
                   kStreamingMinMagnitude}) {
    EXPECT_EQ(StreamingBin(v), 0) << v;
    EXPECT_EQ(StreamingBinByLog(v), 0) << v;
  }
  for (double v : {std::nextafter(kStreamingMaxMagnitude, 0.0), kStreamingMaxMagnitude, 1e13,
                   std::numeric_limits<double>::max(), inf}) {
    EXPECT_EQ(StreamingBin(v), last) << v;
    EXPECT_EQ(StreamingBinByLog(v), last) << v;
  }
  // 1: twelve decades up, at the edge of bin 12 · 232 (either side of it,
  // as the log's rounding falls; both functions agree).
  EXPECT_EQ(StreamingBin(1.0), StreamingBinByLog(1.0));
  EXPECT_GE(StreamingBin(1.0), 12 * kStreamingBinsPerDecade - 1);
  EXPECT_LE(StreamingBin(1.0), 12 * kStreamingBinsPerDecade);
  // Every power of two in range, and the doubles next to it (a power of
  // two starts a new exponent: the table's slot boundary).
  for (int e = -39; e <= 39; ++e) {
    const double p = std::ldexp(1.0, e);
    for (double v : {std::nextafter(p, 0.0), p, std::nextafter(p, inf)}) {
      EXPECT_EQ(StreamingBin(v), StreamingBinByLog(v)) << "2^" << e << " ~ " << v;
    }
  }
  // A bin's geometric middle lies in that bin (independent of the
  // reference): bin i holds [1e-12 · 10^(i/232), 1e-12 · 10^((i+1)/232)).
  for (int i = 0; i < kStreamingBins; i += 7) {
    const double middle =
        kStreamingMinMagnitude * std::pow(10.0, (i + 0.5) / double{kStreamingBinsPerDecade});
    EXPECT_EQ(StreamingBin(middle), i) << middle;
  }
  // Monotone over a sweep: the bin never goes down as the value grows.
  int previous = 0;
  for (double v = 1e-13; v < 1e13; v *= 1.0001) {
    const int bin = StreamingBin(v);
    ASSERT_GE(bin, previous) << v;
    previous = bin;
  }
  EXPECT_EQ(previous, last);
}

// Prometheus-style buckets for the live metrics: a value
// counts in the first bucket whose bound is >= it ("le").
TEST(BucketCountsTest, LessOrEqualBucketsCumulativeCountAndSum) {
  BucketCounts b({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 1.0, 2.0, 20.0, -1.0}) b.Add(v);
  b.Add(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(b.Cumulative(), (std::vector<uint64_t>{3, 5, 6}));
  EXPECT_EQ(b.count(), 7u);
  EXPECT_DOUBLE_EQ(b.sum(), 0.05 + 0.1 + 0.5 + 1.0 + 2.0 + 20.0 - 1.0);
  EXPECT_EQ(b.upper_bounds(), (std::vector<double>{0.1, 1, 10}));
}

}  // namespace
}  // namespace surge
