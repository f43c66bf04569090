// The over-saturation rule on made-up runs whose answer is known: a queue
// that grows at (rate - capacity), a server that only fills up with long
// answers, a steady one, and a cap that holds the requests in flight.
#include "coordinator/dispatch/saturation_rule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

namespace surge::coordinator {
namespace {

TEST(FitLineTest, ExactLine) {
  const std::optional<LineFit> fit = FitLine({{0, 1}, {1, 3}, {2, 5}, {4, 9}});
  ASSERT_TRUE(fit.has_value());
  EXPECT_DOUBLE_EQ(fit->slope, 2);
  EXPECT_DOUBLE_EQ(fit->intercept, 1);
  EXPECT_DOUBLE_EQ(fit->r2, 1);
  EXPECT_DOUBLE_EQ(fit->At(10), 21);
}

TEST(FitLineTest, FlatAndDegenerate) {
  const std::optional<LineFit> flat = FitLine({{0, 4}, {1, 4}, {2, 4}});
  ASSERT_TRUE(flat.has_value());
  EXPECT_DOUBLE_EQ(flat->slope, 0);
  EXPECT_DOUBLE_EQ(flat->r2, 1);
  EXPECT_FALSE(FitLine({{1, 2}}).has_value());
  EXPECT_FALSE(FitLine({{1, 2}, {1, 3}}).has_value());
}

// A run at `rate` RPS for `seconds`: in flight sampled every 0.25 s from
// inflight(t), one answer per request with ttft(sent); Check once a second.
// Returns the first finding.
template <typename Inflight, typename Ttft>
std::optional<SaturationFinding> Drive(SaturationRule& rule, double rate, double seconds,
                                       Inflight inflight, Ttft ttft) {
  double next_request = 0;
  for (int step = 0; step * 0.25 <= seconds; ++step) {
    const double t = step * 0.25;
    for (; next_request <= t; next_request += 1 / rate) {
      rule.ObserveTtft(next_request, ttft(next_request));
    }
    rule.ObserveInflight(t, inflight(t));
    if (step % 4 == 0) {
      if (std::optional<SaturationFinding> f = rule.Check(t)) return f;
    }
  }
  return std::nullopt;
}

SaturationOptions Options(double plan_rate) {
  SaturationOptions o;
  o.window_s = 10;
  o.plan_rate_rps = plan_rate;
  return o;
}

TEST(SaturationRuleTest, QueueGrowingAtRateMinusCapacityIsFoundOnceTheWindowIsFull) {
  // 54 RPS offered to a server of 27 RPS: the backlog grows by 27 per
  // second and each request waits 1 s longer per second of the run.
  SaturationRule rule(Options(54));
  const std::optional<SaturationFinding> f = Drive(
      rule, 54, 30, [](double t) { return 8 + 27 * t; }, [](double s) { return 0.03 + s; });
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->at_s, 10);  // the first check with a full window
  EXPECT_NEAR(f->inflight_growth_rps, 27, 1e-9);
  EXPECT_NEAR(f->inflight_r2, 1, 1e-12);
  EXPECT_NEAR(f->ttft_baseline_s, 0.03 + (9.5 / 54), 1e-9);  // median of the first 20
  EXPECT_GT(f->ttft_end_s, 9.9);
  EXPECT_NE(f->text.find("grew by 27.0 per second"), std::string::npos) << f->text;
}

TEST(SaturationRuleTest, FillingUpWithLongAnswersIsNotSaturation) {
  // 20 RPS, every answer takes 30 s: in flight grows by 20 per second for
  // 30 s (Little's law filling up), but nobody waits: TTFT stays flat.
  SaturationRule rule(Options(20));
  const std::optional<SaturationFinding> f = Drive(
      rule, 20, 30, [](double t) { return 20 * t; },
      [](double s) { return 0.05 + 0.001 * std::sin(s); });
  EXPECT_FALSE(f.has_value());
}

TEST(SaturationRuleTest, SteadyServerIsNotSaturated) {
  SaturationRule rule(Options(20));
  const std::optional<SaturationFinding> f = Drive(
      rule, 20, 40, [](double t) { return 6 + 2 * std::sin(3 * t); },
      [](double s) { return 0.05 + 0.02 * std::sin(7 * s); });
  EXPECT_FALSE(f.has_value());
}

TEST(SaturationRuleTest, RisingTtftWithFlatInflightIsNotSaturation) {
  // An in-flight cap holds the requests in flight at 16 while the server
  // slows down: the queue is surge's, not the server's.
  SaturationRule rule(Options(54));
  const std::optional<SaturationFinding> f = Drive(
      rule, 54, 30, [](double) { return 16.0; }, [](double s) { return 0.03 + s; });
  EXPECT_FALSE(f.has_value());
}

TEST(SaturationRuleTest, GrowthBelowTheFloorIsIgnored) {
  // 1 RPS plan: 5 % of it is 0.05/s, below the 0.5 requests/s floor.
  SaturationRule rule(Options(1));
  const std::optional<SaturationFinding> f = Drive(
      rule, 1, 40, [](double t) { return 0.3 * t; }, [](double s) { return 0.03 + s; });
  EXPECT_FALSE(f.has_value());
  // The same growth at 1 request/s more is found.
  SaturationRule faster(Options(1));
  EXPECT_TRUE(
      Drive(
          faster, 1, 40, [](double t) { return 0.8 * t; }, [](double s) { return 0.03 + s; })
          .has_value());
}

}  // namespace
}  // namespace surge::coordinator
