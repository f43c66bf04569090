// Unit tests of the pure plot math (coordinator/report/plot_model.h):
// EWMA (R-PLOT-3), stratified sampling and decimation (R-PLOT-8, R-ACT-3),
// binning, percentiles and the KS distance (R-ACT-5, R-MET-2).
#include "coordinator/report/plot_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace surge::coordinator {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::Pointwise;

TEST(EwmaTest, MatchesHandComputedValues) {
  // W = 3 → α = 2/(3+1) = 0.5.
  // EWMA_0 = 10; EWMA_1 = 0.5·20 + 0.5·10 = 15; EWMA_2 = 0.5·0 + 0.5·15 = 7.5;
  // EWMA_3 = 0.5·10 + 0.5·7.5 = 8.75.
  const std::vector<double> v = {10, 20, 0, 10};
  EXPECT_THAT(ComputeEwma(v, 3), Pointwise(DoubleNear(1e-12), {10.0, 15.0, 7.5, 8.75}));
}

TEST(EwmaTest, TwentyPointWindow) {
  // W = 20 → α = 2/21. EWMA_1 = (2/21)·42 + (19/21)·0 = 4; EWMA_2 = (19/21)·4.
  const double alpha = 2.0 / 21.0;
  EXPECT_DOUBLE_EQ(EwmaAlpha(20), alpha);
  const std::vector<double> v = {0, 42, 0};
  const std::vector<double> e = ComputeEwma(v, 20);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_DOUBLE_EQ(e[0], 0);
  EXPECT_NEAR(e[1], 4.0, 1e-12);
  EXPECT_NEAR(e[2], 4.0 * 19.0 / 21.0, 1e-12);
}

TEST(EwmaTest, FirstValueIsTheSeriesStart) {
  EwmaSmoother s(200);
  EXPECT_DOUBLE_EQ(s.Add(123.5), 123.5);
  EXPECT_TRUE(ComputeEwma({}, 20).empty());
}

TEST(EwmaTest, WindowAtEachThreshold) {
  EXPECT_EQ(EwmaWindow(0), 20);
  EXPECT_EQ(EwmaWindow(1'000), 20);
  EXPECT_EQ(EwmaWindow(1'001), 50);
  EXPECT_EQ(EwmaWindow(10'000), 50);
  EXPECT_EQ(EwmaWindow(10'001), 100);
  EXPECT_EQ(EwmaWindow(100'000), 100);
  EXPECT_EQ(EwmaWindow(100'001), 200);
  EXPECT_EQ(EwmaWindow(10'000'000), 200);
}

TEST(StratifiedSampleTest, KeepsAllWhenSmall) {
  EXPECT_THAT(StratifiedSampleRanks(5, 1000), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(StratifiedSampleRanks(1000, 1000).size(), 1000u);
  EXPECT_TRUE(StratifiedSampleRanks(0, 1000).empty());
}

// Times with a strongly uneven density (quadratic: sparse early, dense late);
// the sampled points must keep each time quantile's share within one point.
void CheckQuantileShares(uint64_t n, uint64_t k, int quantiles) {
  std::vector<double> times(n);
  for (uint64_t i = 0; i < n; ++i) times[i] = std::sqrt(static_cast<double>(i));
  const std::vector<uint64_t> ranks = StratifiedSampleRanks(n, k);
  ASSERT_EQ(ranks.size(), std::min(n, k));
  ASSERT_TRUE(std::is_sorted(ranks.begin(), ranks.end()));
  ASSERT_TRUE(std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end());
  ASSERT_LT(ranks.back(), n);
  // Quantile q of time covers times in [T(q/Q), T((q+1)/Q)).
  for (int q = 0; q < quantiles; ++q) {
    const double lo = times[static_cast<size_t>(q * n / quantiles)];
    const double hi = q + 1 == quantiles ? std::numeric_limits<double>::infinity()
                                         : times[static_cast<size_t>((q + 1) * n / quantiles)];
    const auto in_input =
        std::count_if(times.begin(), times.end(), [&](double t) { return t >= lo && t < hi; });
    const auto in_sample = std::count_if(
        ranks.begin(), ranks.end(), [&](uint64_t r) { return times[r] >= lo && times[r] < hi; });
    const double proportional =
        static_cast<double>(in_input) * static_cast<double>(ranks.size()) / static_cast<double>(n);
    EXPECT_LE(std::fabs(static_cast<double>(in_sample) - proportional), 1.0)
        << "n=" << n << " k=" << k << " quantile " << q << ": " << in_sample << " vs "
        << proportional;
  }
}

TEST(StratifiedSampleTest, AnomalyCapKeepsTimeQuantileShares) {
  CheckQuantileShares(10'000, kMaxAnomalyPoints, 10);
  CheckQuantileShares(123'457, kMaxAnomalyPoints, 100);
  CheckQuantileShares(1'001, kMaxAnomalyPoints, 7);
}

TEST(StratifiedSampleTest, ActualCapKeepsTimeQuantileShares) {
  CheckQuantileShares(77'777, kMaxActualPoints, 10);
  CheckQuantileShares(5'001, kMaxActualPoints, 13);
}

TEST(StratifiedSampleTest, IsDeterministic) {
  EXPECT_EQ(StratifiedSampleRanks(9'999'991, 1000), StratifiedSampleRanks(9'999'991, 1000));
  const std::vector<uint64_t> r = StratifiedSampleRanks(10'000, 1000);
  EXPECT_EQ(r.front(), 5u);    // middle of stratum [0, 10)
  EXPECT_EQ(r.back(), 9995u);  // middle of stratum [9990, 10000)
}

TEST(DecimateTest, KeepsAllWhenSmall) {
  const std::vector<double> x = {0, 1, 2}, y = {5, 6, 7};
  const XySeries s = DecimateMinMax(x, y, 4000);
  EXPECT_EQ(s.x, x);
  EXPECT_EQ(s.y, y);
}

TEST(DecimateTest, BoundsPointsAndKeepsExtremes) {
  const size_t n = 1'000'000;
  std::vector<double> x(n), y(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<double>(i) * 0.01;
    y[i] = 100 + 10 * std::sin(static_cast<double>(i) * 0.001);
  }
  y[123'456] = 1e6;   // a spike
  y[765'432] = -1e6;  // a dip
  const XySeries s = DecimateMinMax(x, y, kMaxLinePoints);
  EXPECT_LE(s.size(), kMaxLinePoints);
  EXPECT_GE(s.size(), kMaxLinePoints / 2);
  EXPECT_TRUE(std::is_sorted(s.x.begin(), s.x.end()));
  EXPECT_EQ(s.x.front(), x.front());
  EXPECT_EQ(s.x.back(), x.back());
  EXPECT_EQ(*std::max_element(s.y.begin(), s.y.end()), 1e6);
  EXPECT_EQ(*std::min_element(s.y.begin(), s.y.end()), -1e6);
  // Deterministic.
  const XySeries again = DecimateMinMax(x, y, kMaxLinePoints);
  EXPECT_EQ(again.x, s.x);
  EXPECT_EQ(again.y, s.y);
}

TEST(DecimateTest, DropsNonFinitePoints) {
  MinMaxDecimator d(0, 2, 3, 10);
  d.Add(0, 1);
  d.Add(1, std::numeric_limits<double>::infinity());
  d.Add(2, 3);
  const XySeries s = d.Finish();
  EXPECT_THAT(s.x, ElementsAre(0, 2));
}

TEST(BinningTest, FreedmanDiaconisRule) {
  // n = 1000, IQR = 10 → h = 2·10/10 = 2; range 100 → 50 bins of width 2.
  HistogramBins b = FreedmanDiaconisBins(1000, 0, 100, 10);
  EXPECT_EQ(b.count, 50);
  EXPECT_DOUBLE_EQ(b.lo, 0);
  EXPECT_DOUBLE_EQ(b.width, 2);
  // Non-integral: range 99 / h 2 → ceil(49.5) = 50 bins of width 1.98.
  b = FreedmanDiaconisBins(1000, 1, 100, 10);
  EXPECT_EQ(b.count, 50);
  EXPECT_DOUBLE_EQ(b.width, 99.0 / 50);
}

TEST(BinningTest, ClampedToTenAndHundredBins) {
  EXPECT_EQ(FreedmanDiaconisBins(1000, 0, 1, 10).count, kMinHistogramBins);   // 1 bin → 10
  EXPECT_EQ(FreedmanDiaconisBins(1000, 0, 1e6, 1).count, kMaxHistogramBins);  // 500,000 → 100
  EXPECT_EQ(FreedmanDiaconisBins(1000, 0, 1, 0).count, kMaxHistogramBins);    // IQR 0
}

TEST(BinningTest, ConstantAndEmptyValues) {
  HistogramBins b = FreedmanDiaconisBins(7, 0.01, 0.01, 0);
  EXPECT_EQ(b.count, 1);
  EXPECT_NEAR(b.lo + b.width / 2, 0.01, 1e-15);
  EXPECT_EQ(FreedmanDiaconisBins(0, 0, 0, 0).count, 0);
  std::vector<double> same(10, 0.01);
  const Histogram h = BuildHistogram(same);
  ASSERT_EQ(h.counts.size(), 1u);
  EXPECT_EQ(h.counts[0], 10u);
}

TEST(BinningTest, HistogramCountsEveryValue) {
  std::vector<double> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 97) * 0.5;
  const Histogram h = BuildHistogram(v);
  EXPECT_GE(h.bins.count, kMinHistogramBins);
  EXPECT_LE(h.bins.count, kMaxHistogramBins);
  EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), uint64_t{0}), 1000u);
  EXPECT_DOUBLE_EQ(h.bins.lo, 0);
  EXPECT_DOUBLE_EQ(h.bins.lo + h.bins.width * h.bins.count, 48);
  EXPECT_GT(h.counts.back(), 0u);  // the maximum lands in the last bin
}

TEST(BinningTest, Log10BinsAreEqualOnALogAxis) {
  // 1, 10, 100, 1000 each 25 times: log10 values 0..3.
  std::vector<double> v;
  for (double x : {1.0, 10.0, 100.0, 1000.0}) v.insert(v.end(), 25, x);
  const Histogram h = BuildHistogram(v, /*log10=*/true);
  EXPECT_TRUE(h.bins.log10);
  EXPECT_DOUBLE_EQ(h.bins.lo, 0);
  ASSERT_GE(h.bins.count, kMinHistogramBins);
  EXPECT_NEAR(h.Lower(0), 1, 1e-12);
  EXPECT_NEAR(h.Upper(h.bins.count - 1), 1000, 1e-9);
  // Geometric centres; widths grow with x.
  EXPECT_NEAR(h.Center(0), std::pow(10.0, h.bins.width / 2), 1e-12);
  EXPECT_LT(h.Width(0), h.Width(h.bins.count - 1));
  EXPECT_EQ(h.counts.front(), 25u);
  EXPECT_EQ(h.counts.back(), 25u);
  EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), uint64_t{0}), 100u);
}

TEST(SortTest, RadixSortMatchesStdSort) {
  std::vector<double> v(100'000);
  uint64_t s = 2463534242ull;
  for (double& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = (static_cast<double>(s % 2'000'001) - 1e6) * 1e-3 * (s % 5 == 0 ? 1e9 : 1);
  }
  v[7] = -0.0;
  v[8] = 0.0;
  v[9] = std::numeric_limits<double>::min();
  v[10] = -std::numeric_limits<double>::max();
  std::vector<double> expected = v;
  std::sort(expected.begin(), expected.end());
  std::vector<double> scratch;
  SortDoubles(v, &scratch);
  EXPECT_EQ(v, expected);
  std::vector<double> small = {3, -1, 2};
  SortDoubles(small);
  EXPECT_THAT(small, ElementsAre(-1, 2, 3));
}

TEST(KsTest, Distances) {
  const std::vector<double> a = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(KsDistanceSorted(a, a), 0);
  const std::vector<double> far = {10, 11};
  EXPECT_DOUBLE_EQ(KsDistanceSorted(a, far), 1);
  // F_a jumps by 1/4, F_b by 1/2: at x = 2, F_a = 0.5, F_b = 0 (b = {3, 5}) → 0.5;
  // at x = 3, 0.75 vs 0.5; at x = 4, 1 vs 0.5 → 0.5.
  const std::vector<double> b = {3, 5};
  EXPECT_DOUBLE_EQ(KsDistanceSorted(a, b), 0.5);
  // Ties across samples are compared after both steps.
  const std::vector<double> c = {1, 1, 2, 2};
  const std::vector<double> d = {1, 2};
  EXPECT_DOUBLE_EQ(KsDistanceSorted(c, d), 0);
  EXPECT_TRUE(std::isnan(KsDistanceSorted(a, {})));
}

TEST(RateTest, NiceBinsAndRates) {
  EXPECT_DOUBLE_EQ(NiceCeil(0.1), 0.1);
  EXPECT_DOUBLE_EQ(NiceCeil(0.13), 0.2);
  EXPECT_DOUBLE_EQ(NiceCeil(3), 5);
  EXPECT_DOUBLE_EQ(NiceCeil(7), 10);
  // 10,000 events over 100 s: target 200 bins → 0.5 s.
  EXPECT_DOUBLE_EQ(RateBinWidth(100, 10'000), 0.5);
  // 100 events over 100 s: target 10 bins → 10 s.
  EXPECT_DOUBLE_EQ(RateBinWidth(100, 100), 10);
  const std::vector<double> t = {0.1, 0.2, 0.5, 1.5, 2.0};
  const std::vector<double> r = RatePerBin(t, 0, 0.5, 4);
  EXPECT_THAT(r, ElementsAre(4, 2, 0, 4));  // [0,.5): 2; [.5,1): 1; [1.5,2]: 2 incl. edge
}

TEST(RateTest, LastBinRunsToTheEnd) {
  // 10 events per second from 0 to 2.3 s, 1 s bins: bins [0,1), [1,2), and
  // [2, 2.3] (round(2.3) = 2 bins, the last one stretched to the end).
  RateBinner stretched = MakeRateBinner(0, 2.3, 1);
  for (int i = 0; i <= 23; ++i) stretched.Add(i / 10.0);
  EXPECT_THAT(stretched.Edges(), ElementsAre(0, 1, 2.3));
  std::vector<double> r = stretched.Rates();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0], 10);
  EXPECT_NEAR(r[1], 14 / 1.3, 1e-9);  // 1.0 … 2.3: 14 events over 1.3 s
  // 0 … 2.6 s: three bins, the last [2, 2.6] holds 7 events over 0.6 s.
  RateBinner shortened = MakeRateBinner(0, 2.6, 1);
  for (int i = 0; i <= 26; ++i) shortened.Add(i / 10.0);
  r = shortened.Rates();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NEAR(r[2], 7 / 0.6, 1e-9);
}

// Traffic classes on the rate chart: the groups' counts add up to the
// total's in every bin, and each group's binner is exactly the one its own
// events alone fill (the bins being the total's).
TEST(RateTest, GroupedBinsAddUpAndEachGroupIsItsEventsAlone) {
  // Three groups with different paces over 0 … 9.7 s, some events on bin
  // edges, one at the very end, one before the start (ignored by all).
  std::vector<double> times;
  std::vector<size_t> groups;
  for (int i = 0; i < 98; ++i) {
    times.push_back(i / 10.0);
    groups.push_back(i % 7 == 0 ? 2 : i % 2);
  }
  times.push_back(-1);
  groups.push_back(0);
  const RateBinner empty = MakeRateBinner(0, 9.7, 2);
  GroupedRateBinner grouped(empty, 3);
  for (size_t k = 0; k < times.size(); ++k) grouped.Add(times[k], groups[k]);
  ASSERT_EQ(grouped.groups(), 3u);
  const std::vector<uint64_t>& total = grouped.total().Counts();
  ASSERT_EQ(total.size(), 5u);  // [0,2) [2,4) [4,6) [6,8) [8,9.7]
  EXPECT_THAT(total, ElementsAre(20, 20, 20, 20, 18));
  for (size_t b = 0; b < total.size(); ++b) {
    uint64_t sum = 0;
    for (size_t g = 0; g < 3; ++g) sum += grouped.group(g).Counts()[b];
    EXPECT_EQ(sum, total[b]) << "bin " << b;
  }
  for (size_t g = 0; g < 3; ++g) {
    RateBinner alone = MakeRateBinner(0, 9.7, 2);
    uint64_t events = 0;
    for (size_t k = 0; k < times.size(); ++k) {
      if (groups[k] != g) continue;
      alone.Add(times[k]);
      events += times[k] >= 0;
    }
    EXPECT_EQ(grouped.group(g).Counts(), alone.Counts()) << "group " << g;
    EXPECT_EQ(grouped.group(g).Rates(), alone.Rates()) << "group " << g;
    EXPECT_EQ(grouped.group(g).Edges(), grouped.total().Edges());
    uint64_t counted = 0;
    for (uint64_t c : grouped.group(g).Counts()) counted += c;
    EXPECT_EQ(counted, events) << "group " << g;
  }
  // Group 2 is every 7th event: 0, 7, …, 91 → 14 events, bins [0,2) holds
  // 0, 7, 14 (3), [2,4): 21, 28, 35 (3), [4,6): 42, 49, 56 (3), [6,8): 63,
  // 70, 77 (3), [8,9.7]: 84, 91 (2).
  EXPECT_THAT(grouped.group(2).Counts(), ElementsAre(3, 3, 3, 3, 2));
  // A group past the groups counts in the total only (a plan without classes).
  GroupedRateBinner none(empty, 0);
  none.Add(1, 0);
  EXPECT_THAT(none.total().Counts(), ElementsAre(1, 0, 0, 0, 0));
}

}  // namespace
}  // namespace surge::coordinator
