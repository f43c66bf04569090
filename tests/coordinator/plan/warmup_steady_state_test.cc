// Warm-up offsets and the steady-state window (docs/DATASETS.md "Warm-up
// and steady state"): pure functions, exact values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "coordinator/plan/steady_state.h"
#include "coordinator/plan/warmup.h"

namespace surge::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(WarmupOffsetsTest, AtThePlansFirstRateEndingOneGapBeforeT0) {
  EXPECT_THAT(WarmupOffsetsNs(4, 10.0),
              ElementsAre(-400000000, -300000000, -200000000, -100000000));
  EXPECT_THAT(WarmupOffsetsNs(2, 0.5), ElementsAre(-4000000000, -2000000000));
  EXPECT_DOUBLE_EQ(WarmupSpacingS(4, 10.0), 0.1);
}

TEST(WarmupOffsetsTest, InstantModeSpreadsThemOverTheSecondBeforeT0) {
  EXPECT_THAT(WarmupOffsetsNs(4, 0.0), ElementsAre(-1000000000, -750000000, -500000000, -250000000));
  EXPECT_THAT(WarmupOffsetsNs(3, std::numeric_limits<double>::infinity()),
              ElementsAre(-1000000000, -666666667, -333333333));
  EXPECT_THAT(WarmupOffsetsNs(2, 0.05), ElementsAre(-1000000000, -500000000));
  EXPECT_THAT(WarmupOffsetsNs(2, std::nan("")), ElementsAre(-1000000000, -500000000));
}

TEST(WarmupOffsetsTest, NoneAndTheirOwnSeed) {
  EXPECT_TRUE(WarmupOffsetsNs(0, 10.0).empty());
  EXPECT_EQ(WarmupSpacingS(0, 10.0), 0);
  EXPECT_NE(WarmupPayloadSeed(42), 42u);
  EXPECT_NE(WarmupPayloadSeed(42), WarmupPayloadSeed(43));
  EXPECT_EQ(WarmupPayloadSeed(42), WarmupPayloadSeed(42));
}

TEST(SteadyStateParseTest, EmptyIsTheWholeRun) {
  auto spec = ParseSteadyState("");
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(spec->has_value());
}

TEST(SteadyStateParseTest, SecondsOrFractions) {
  auto seconds = ParseSteadyState("10:50");
  ASSERT_TRUE(seconds.ok() && seconds->has_value());
  EXPECT_EQ((*seconds)->a, 10);
  EXPECT_EQ((*seconds)->b, 50);
  EXPECT_FALSE((*seconds)->fractions);
  auto fractions = ParseSteadyState("0.1:0.9");
  ASSERT_TRUE(fractions.ok() && fractions->has_value());
  EXPECT_DOUBLE_EQ((*fractions)->a, 0.1);
  EXPECT_DOUBLE_EQ((*fractions)->b, 0.9);
  EXPECT_TRUE((*fractions)->fractions);
  // Both need a decimal point and both must be <= 1 to be fractions.
  EXPECT_FALSE((**ParseSteadyState("0:1")).fractions);
  EXPECT_FALSE((**ParseSteadyState("0.5:1")).fractions);
  EXPECT_FALSE((**ParseSteadyState("0.5:2.0")).fractions);
  EXPECT_TRUE((**ParseSteadyState("0.0:1.0")).fractions);
}

TEST(SteadyStateParseTest, RefusesWhatIsNotAWindow) {
  for (const char* bad : {"0.9:0.1", "5:5", "-1:2", "a:b", "1", "1:2:3", ":2", "1:inf", "nan:1"}) {
    auto spec = ParseSteadyState(bad);
    EXPECT_FALSE(spec.ok()) << bad;
    EXPECT_THAT(spec.status().message(), HasSubstr("must be A:B")) << bad;
  }
  EXPECT_THAT(ParseSteadyState("0.9:0.1").status().message(), HasSubstr("must be below B"));
  EXPECT_THAT(ParseSteadyState("-1:2").status().message(), HasSubstr("negative"));
  EXPECT_THAT(ParseSteadyState("x:2").status().message(), HasSubstr("not a number"));
}

// Ten requests planned at 1, 2, ..., 10 s.
std::vector<double> TenSeconds() {
  std::vector<double> offsets;
  for (int i = 1; i <= 10; ++i) offsets.push_back(i);
  return offsets;
}

TEST(SteadyStateResolveTest, SecondsCountTheRequestsInsideHalfOpen) {
  auto w = ResolveSteadyState(**ParseSteadyState("2:5"), "2:5", TenSeconds());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->start_s, 2);
  EXPECT_EQ(w->end_s, 5);
  EXPECT_EQ(w->requests, 3u);  // 2, 3, 4
  EXPECT_TRUE(w->Contains(2));
  EXPECT_FALSE(w->Contains(5));
  EXPECT_EQ(w->spec, "2:5");
}

TEST(SteadyStateResolveTest, FractionsOfTheSpanAndTheEndIncluded) {
  auto w = ResolveSteadyState(**ParseSteadyState("0.2:0.8"), "0.2:0.8", TenSeconds());
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->start_s, 2);
  EXPECT_DOUBLE_EQ(w->end_s, 8);
  EXPECT_EQ(w->requests, 6u);  // 2..7
  auto all = ResolveSteadyState(**ParseSteadyState("0.0:1.0"), "0.0:1.0", TenSeconds());
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->includes_end);
  EXPECT_EQ(all->requests, 10u);
  EXPECT_TRUE(all->Contains(10));
}

TEST(SteadyStateResolveTest, AWindowOutsideThePlanIsRefused) {
  auto w = ResolveSteadyState(**ParseSteadyState("20:30"), "20:30", TenSeconds());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("holds no planned request"));
  EXPECT_THAT(w.status().message(), HasSubstr("from 0 to 10 s"));
  EXPECT_FALSE(ResolveSteadyState(**ParseSteadyState("0.1:0.9"), "0.1:0.9", {}).ok());
}

}  // namespace
}  // namespace surge::coordinator
