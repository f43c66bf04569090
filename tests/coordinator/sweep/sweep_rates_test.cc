// The rates of a sweep's points and the checks of its options.
#include "coordinator/sweep/sweep_rates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace surge::coordinator {
namespace {

using surge::v1::SweepConfig;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

SweepConfig List(const char* rates) {
  SweepConfig s;
  s.set_request_rates(rates);
  return s;
}

SweepConfig Range(double a, double b, uint32_t k, const char* scale = "linear") {
  SweepConfig s;
  s.set_sweep_start(a);
  s.set_sweep_end(b);
  s.set_sweep_steps(k);
  s.set_sweep_scale(scale);
  return s;
}

TEST(SweepRatesTest, ListAsGiven) {
  absl::StatusOr<std::vector<double>> r = SweepRates(List("2, 4,8,16.5"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre(2, 4, 8, 16.5));
}

TEST(SweepRatesTest, LinearAndGeometricRanges) {
  absl::StatusOr<std::vector<double>> lin = SweepRates(Range(2, 12, 6));
  ASSERT_TRUE(lin.ok());
  EXPECT_THAT(*lin, ElementsAre(2, 4, 6, 8, 10, 12));
  absl::StatusOr<std::vector<double>> geo = SweepRates(Range(1, 16, 5, "geometric"));
  ASSERT_TRUE(geo.ok());
  ASSERT_EQ(geo->size(), 5u);
  const double want[] = {1, 2, 4, 8, 16};
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR((*geo)[i], want[i], 1e-12) << i;
  EXPECT_EQ(geo->back(), 16);  // the end exactly
}

TEST(SweepRatesTest, BadListsNameTheFlag) {
  EXPECT_THAT(SweepRates(List("")).status().message(), HasSubstr("--request-rates"));
  EXPECT_THAT(SweepRates(List("4,2")).status().message(), HasSubstr("rates must increase"));
  EXPECT_THAT(SweepRates(List("2,2")).status().message(), HasSubstr("rates must increase"));
  EXPECT_THAT(SweepRates(List("2,x")).status().message(), HasSubstr("'x' is not a number"));
  EXPECT_THAT(SweepRates(List("0.05,1")).status().message(), HasSubstr("below 0.1"));
  EXPECT_THAT(SweepRates(List("1,inf")).status().message(), HasSubstr("not a number"));
}

TEST(SweepRatesTest, BadRangesNameTheFlag) {
  SweepConfig missing;
  missing.set_sweep_start(1);
  missing.set_sweep_end(4);
  EXPECT_THAT(SweepRates(missing).status().message(), HasSubstr("give all three"));
  EXPECT_THAT(SweepRates(Range(4, 2, 3)).status().message(),
              HasSubstr("--sweep-end: 2 must be above --sweep-start 4"));
  SweepConfig both = Range(1, 2, 2);
  both.set_request_rates("1,2");
  EXPECT_THAT(SweepRates(both).status().message(), HasSubstr("not both"));
  EXPECT_THAT(SweepRates(SweepConfig()).status().message(), HasSubstr("a sweep needs its rates"));
}

TEST(SweepRatesTest, SearchNeedsNoList) {
  SweepConfig s;
  s.set_slo_search(true);
  absl::StatusOr<std::vector<double>> r = SweepRates(s);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(RateTextTest, FourDigitsAndWholeThousands) {
  EXPECT_EQ(RateText(25.675676), "25.68");
  EXPECT_EQ(RateText(6.75676), "6.757");
  EXPECT_EQ(RateText(0.5), "0.5");
  EXPECT_EQ(RateText(20000), "20000");
  EXPECT_EQ(RateText(12345.6), "12346");
}

TEST(SearchResolutionTest, ShareOrRate) {
  absl::StatusOr<SearchResolution> share = ParseSearchResolution("5%");
  ASSERT_TRUE(share.ok());
  EXPECT_TRUE(share->relative);
  EXPECT_DOUBLE_EQ(share->GapRps(40), 2);
  absl::StatusOr<SearchResolution> rate = ParseSearchResolution("0.5");
  ASSERT_TRUE(rate.ok());
  EXPECT_FALSE(rate->relative);
  EXPECT_DOUBLE_EQ(rate->GapRps(40), 0.5);
  for (const char* bad : {"", "0", "-1", "100%", "x%", "5 %%"}) {
    EXPECT_THAT(ParseSearchResolution(bad).status().message(), HasSubstr("--search-resolution"))
        << bad;
  }
}

TEST(CheckSweepConfigTest, SearchWithoutGoodputAndEveryProblemAtOnce) {
  SweepConfig s;
  s.set_slo_search(true);
  s.set_search_resolution("5%");
  EXPECT_THAT(CheckSweepConfig(s, false).message(), HasSubstr("--slo-search: needs the objective"));
  EXPECT_TRUE(CheckSweepConfig(s, true).ok());
  s.set_request_rates("3,1");
  s.set_search_resolution("200%");
  const std::string all(CheckSweepConfig(s, false).message());
  EXPECT_THAT(all, HasSubstr("--request-rates"));
  EXPECT_THAT(all, HasSubstr("--search-resolution"));
  EXPECT_THAT(all, HasSubstr("--slo-search"));
}

}  // namespace
}  // namespace surge::coordinator
