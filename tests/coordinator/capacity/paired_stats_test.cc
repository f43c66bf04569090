#include "coordinator/capacity/paired_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/stats.h"
namespace surge::coordinator {
namespace {

RequestTimes Ok(uint64_t index, double ttft_ms, double tpot_ms, double e2el_ms) {
  RequestTimes r;
  r.index = index;
  r.planned_offset_s = 0.02 * static_cast<double>(index);
  r.ok = true;
  r.ms[0] = ttft_ms;
  r.ms[1] = tpot_ms;
  r.ms[2] = e2el_ms;
  return r;
}

RequestTimes Failed(uint64_t index) {
  RequestTimes r;
  r.index = index;
  r.planned_offset_s = 0.02 * static_cast<double>(index);
  return r;
}

TEST(PairByIndexTest, JoinsOkInBothByIndexInAnyOrder) {
  const std::vector<RequestTimes> a = {Ok(2, 10, 1, 20), Ok(0, 11, 1, 21), Failed(1),
                                       Ok(3, 12, 1, 22)};
  const std::vector<RequestTimes> b = {Ok(0, 50, 2, 60), Ok(1, 51, 2, 61), Ok(2, 52, 2, 62),
                                       Ok(4, 53, 2, 63)};
  const PairedRequests p = PairByIndex(a, b);
  EXPECT_EQ(p.index, (std::vector<uint64_t>{0, 2}));
  EXPECT_EQ(p.planned_offset_s, (std::vector<double>{0.0, 0.04}));
  EXPECT_EQ(p.a_ms[0], (std::vector<double>{11, 10}));
  EXPECT_EQ(p.b_ms[0], (std::vector<double>{50, 52}));
  EXPECT_EQ(p.b_ms[2], (std::vector<double>{60, 62}));
  EXPECT_EQ(p.a_ok, 3u);
  EXPECT_EQ(p.b_ok, 4u);
  EXPECT_EQ(p.only_in_a, 1u);  // 3
  EXPECT_EQ(p.only_in_b, 1u);  // 4
}

TEST(PairByIndexTest, RepeatedIndexKeepsTheLastEntry) {
  const std::vector<RequestTimes> a = {Failed(0), Ok(0, 10, 1, 20)};
  const std::vector<RequestTimes> b = {Ok(0, 30, 1, 40)};
  const PairedRequests p = PairByIndex(a, b);
  ASSERT_EQ(p.index.size(), 1u);
  EXPECT_EQ(p.a_ms[0][0], 10);
}

TEST(ComparePairsTest, ConstantShiftGivesExactlyTheShiftAndAPointInterval) {
  std::vector<double> a, b;
  for (int k = 0; k < 200; ++k) {
    a.push_back(20 + 0.37 * k);
    b.push_back(a.back() + 40);
  }
  const PairedMetric m = ComparePairs("ttft_ms", a, b, {2000, 0});
  EXPECT_EQ(m.pairs, 200u);
  EXPECT_EQ(m.median_diff_ms, 40);
  EXPECT_EQ(m.ci_ms.low, 40);
  EXPECT_EQ(m.ci_ms.high, 40);
  EXPECT_EQ(m.share_b_faster, 0);
  // Median of 20 + 0.37·k, k = 0..199: (20 + 0.37·99.5) = 56.815.
  EXPECT_DOUBLE_EQ(m.a_median_ms, 56.815);
  EXPECT_DOUBLE_EQ(m.b_median_ms, 96.815);
  // p99: pos 0.99·199 = 197.01 → 20 + 0.37·197.01.
  EXPECT_DOUBLE_EQ(m.a_p99_ms, 20 + 0.37 * 197.01);
  EXPECT_EQ(MetricVerdict(m), "B slower");
}

TEST(ComparePairsTest, NoisyShiftIntervalContainsTheTrueShiftAndIsSeeded) {
  std::mt19937_64 noise(7);
  std::normal_distribution<double> jitter(0, 5);
  std::vector<double> a, b;
  for (int k = 0; k < 500; ++k) {
    a.push_back(50 + jitter(noise));
    b.push_back(a.back() - 12 + jitter(noise));
  }
  const PairedMetric m = ComparePairs("e2el_ms", a, b, {2000, 3});
  EXPECT_LT(m.ci_ms.low, -12);
  EXPECT_GT(m.ci_ms.high, -12);
  EXPECT_LT(m.ci_ms.high - m.ci_ms.low, 3.0);  // σ of d ≈ 7 ms, 500 pairs
  EXPECT_GT(m.share_b_faster, 0.85);
  EXPECT_EQ(MetricVerdict(m), "B faster");
  // The same seed gives the same interval, another seed another one.
  const PairedMetric again = ComparePairs("e2el_ms", a, b, {2000, 3});
  EXPECT_EQ(again.ci_ms.low, m.ci_ms.low);
  EXPECT_EQ(again.ci_ms.high, m.ci_ms.high);
  const PairedMetric other = ComparePairs("e2el_ms", a, b, {2000, 4});
  EXPECT_NE(other.ci_ms.low, m.ci_ms.low);
}

TEST(ComparePairsTest, NanOnEitherSideIsLeftOut) {
  const double nan = std::nan("");
  const std::vector<double> a = {1, nan, 3, 4};
  const std::vector<double> b = {2, 5, nan, 1};
  const PairedMetric m = ComparePairs("tpot_ms", a, b, {100, 0});
  EXPECT_EQ(m.pairs, 2u);
  EXPECT_EQ(m.median_diff_ms, -1);  // d = {1, −3}
  EXPECT_EQ(m.share_b_faster, 0.5);
}

TEST(ComparePairsTest, NoPairsGivesNanAndNoVerdict) {
  const PairedMetric m = ComparePairs("ttft_ms", {}, {}, {100, 0});
  EXPECT_EQ(m.pairs, 0u);
  EXPECT_TRUE(std::isnan(m.median_diff_ms));
  EXPECT_TRUE(std::isnan(m.ci_ms.low));
  EXPECT_EQ(MetricVerdict(m), "");
}

TEST(BootstrapTest, IntervalIsPercentilesOfResampledMedians) {
  // Two values: every resample's median is 0, 0.5 or 1 (both ends appear
  // with 1000 resamples of 2: P(all 0) = 1/4).
  const std::vector<double> d = {0, 1};
  const Interval ci = BootstrapMedianInterval(d, {1000, 0});
  EXPECT_EQ(ci.low, 0);
  EXPECT_EQ(ci.high, 1);
}

// The bootstrap as docs/COMPARE.md describes it, written out plainly: each
// resample draws n values of the sorted sample with the seeded generator,
// its median by common/stats.h, then the 2.5th and 97.5th percentiles of
// the medians. The library's count-based medians must give the very same
// numbers, for an odd and an even sample size.
Interval PlainBootstrap(std::vector<double> d, uint32_t resamples, uint64_t seed) {
  std::sort(d.begin(), d.end());
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<size_t> pick(0, d.size() - 1);
  std::vector<double> medians;
  for (uint32_t r = 0; r < resamples; ++r) {
    std::vector<double> resample;
    for (size_t k = 0; k < d.size(); ++k) resample.push_back(d[pick(engine)]);
    std::sort(resample.begin(), resample.end());
    medians.push_back(PercentileOfSorted(resample, 50));
  }
  std::sort(medians.begin(), medians.end());
  return {PercentileOfSorted(medians, 2.5), PercentileOfSorted(medians, 97.5)};
}

TEST(BootstrapTest, SameAsThePlainAlgorithm) {
  std::mt19937_64 noise(11);
  std::exponential_distribution<double> skewed(0.1);
  for (size_t n : {31, 32}) {
    std::vector<double> d;
    for (size_t k = 0; k < n; ++k) d.push_back(skewed(noise) - 5);
    const Interval plain = PlainBootstrap(d, 500, 9);
    const Interval ci = BootstrapMedianInterval(d, {500, 9});
    EXPECT_EQ(ci.low, plain.low) << n;
    EXPECT_EQ(ci.high, plain.high) << n;
    EXPECT_LT(ci.low, ci.high) << n;
  }
}

TEST(BootstrapTest, StraddlingZeroIsNoClearDifference) {
  PairedMetric m;
  m.pairs = 10;
  m.ci_ms = {-1, 2};
  EXPECT_EQ(MetricVerdict(m), "no clear difference");
}

}  // namespace
}  // namespace surge::coordinator
