// The SLO search against servers whose limit is known: it brackets,
// bisects to the resolution, and stops at an invalid point or a
// non-monotone answer.
#include "coordinator/sweep/slo_search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;

SearchResolution Share(double s) { return {.relative = true, .value = s}; }

// Runs the search against "passes below `limit`"; returns the rates tried.
std::vector<double> Drive(SloSearch& search, double limit) {
  std::vector<double> tried;
  while (std::optional<double> r = search.Next()) {
    tried.push_back(*r);
    search.Report(*r, *r <= limit ? PointOutcome::kPass : PointOutcome::kFail);
  }
  return tried;
}

TEST(SloSearchTest, BracketsByDoublingThenBisectsToTheResolution) {
  SloSearch search(1, Share(0.05), 30);
  const std::vector<double> tried = Drive(search, 27.03);
  // 1, 2, 4, 8, 16, 32 (fails), then halves of [16, 32].
  ASSERT_GE(tried.size(), 6u);
  EXPECT_EQ(tried[5], 32);
  EXPECT_EQ(tried[6], 24);
  const SearchAnswer& a = search.answer();
  ASSERT_TRUE(a.complete);
  ASSERT_TRUE(a.max_rate_rps && a.min_failing_rps);
  EXPECT_LE(*a.max_rate_rps, 27.03);
  EXPECT_GT(*a.min_failing_rps, 27.03);
  EXPECT_LE(*a.min_failing_rps - *a.max_rate_rps, 0.05 * *a.max_rate_rps);
  EXPECT_GT(*a.min_failing_rps - *a.max_rate_rps, 0.05 * *a.max_rate_rps / 2);
  EXPECT_EQ(search.points(), tried.size());
}

TEST(SloSearchTest, StartAboveTheLimitHalvesDown) {
  SloSearch search(100, Share(0.1), 30);
  const std::vector<double> tried = Drive(search, 20);
  EXPECT_EQ(tried[0], 100);
  EXPECT_EQ(tried[1], 50);
  EXPECT_EQ(tried[2], 25);
  EXPECT_EQ(tried[3], 12.5);
  ASSERT_TRUE(search.answer().complete);
  EXPECT_LE(*search.answer().max_rate_rps, 20);
  EXPECT_GT(*search.answer().min_failing_rps, 20);
}

TEST(SloSearchTest, NothingPassesDownToTheLowestRate) {
  SloSearch search(1, Share(0.05), 30);
  Drive(search, 0.01);
  const SearchAnswer& a = search.answer();
  EXPECT_TRUE(a.complete);
  EXPECT_FALSE(a.max_rate_rps.has_value());
  EXPECT_LT(*a.min_failing_rps, 0.2);
}

TEST(SloSearchTest, AnInvalidPointEndsTheSearchWithALowerBound) {
  SloSearch search(10, Share(0.05), 30);
  ASSERT_EQ(search.Next(), 10);
  search.Report(10, PointOutcome::kPass);
  ASSERT_EQ(search.Next(), 20);
  search.Report(20, PointOutcome::kInvalid, "workers_over_cpus: more workers than CPUs");
  EXPECT_FALSE(search.Next().has_value());
  const SearchAnswer& a = search.answer();
  EXPECT_FALSE(a.complete);
  EXPECT_EQ(a.max_rate_rps, 10);
  EXPECT_FALSE(a.min_failing_rps.has_value());
  EXPECT_THAT(a.incomplete_reason, HasSubstr("could not keep the point at 20 RPS"));
  EXPECT_THAT(a.incomplete_reason, HasSubstr("workers_over_cpus"));
}

TEST(SloSearchTest, PointsLimitAndNonMonotoneAnswers) {
  SloSearch few(1, Share(0.01), 3);
  Drive(few, 1000);
  EXPECT_EQ(few.points(), 3u);
  EXPECT_FALSE(few.answer().complete);
  EXPECT_THAT(few.answer().incomplete_reason, HasSubstr("--search-max-points"));

  SloSearch noisy(10, Share(0.05), 30);
  noisy.Report(10, PointOutcome::kFail);
  noisy.Report(5, PointOutcome::kPass);
  noisy.Report(7.5, PointOutcome::kFail);
  noisy.Report(12, PointOutcome::kPass);  // passes above a failure
  EXPECT_FALSE(noisy.Next().has_value());
  EXPECT_THAT(noisy.answer().incomplete_reason, HasSubstr("does not fall with the rate"));
}

}  // namespace
}  // namespace surge::coordinator
