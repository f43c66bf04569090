// Every traffic kind describes itself (TrafficDescription): the page
// heading, the theoretical line, the log line and the run context rows come
// from the process that plans the traffic; the composed process builds its
// profile and sampler once and plans the same for the same seed every time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "coordinator/config/run_config.h"
#include "coordinator/plan/arrival_process.h"
#include "coordinator/plan/replay_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/plan/traffic_config.h"

namespace surge::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

surge::v1::RunConfig Config(double rate, double beta, uint64_t n) {
  surge::v1::RunConfig c = DefaultRunConfig();
  c.set_request_rate(rate);
  c.mutable_traffic_cfg()->set_burstiness(beta);
  c.set_num_prompts(n);
  return c;
}

std::vector<std::string> Labels(const TrafficDescription& d) {
  std::vector<std::string> out;
  for (const TrafficFact& f : d.context) out.push_back(f.label);
  return out;
}

TEST(TrafficDescriptionTest, ConstantRate) {
  const ResolvedTraffic t = ResolveSeedTraffic(Config(20, 0.5, 100));
  const TrafficDescription& d = t.description;
  EXPECT_EQ(d.title, "20 RPS, 100 requests × Gamma intervals (β = 0.5)");
  EXPECT_EQ(d.short_title, "Target Rate: 20 RPS");
  EXPECT_FALSE(d.theoretical.has_value());
  EXPECT_EQ(d.log_line, "target rate 20 RPS, burstiness 0.5");
  EXPECT_THAT(d.log_intro, IsEmpty());
  EXPECT_THAT(Labels(d), ElementsAre("Request rate", "Burstiness (β)", "Ramp-up"));
  EXPECT_EQ(d.context[0].value, "target 20 RPS (request_rate)");
  EXPECT_EQ(d.context[1].value, "0.5 (bursty Gamma intervals)");
  EXPECT_EQ(d.context[2].value, "none");
}

TEST(TrafficDescriptionTest, ActiveRampDrawsThePlansOwnRates) {
  surge::v1::RunConfig c = Config(0, 0, 50);
  c.mutable_traffic_cfg()->set_ramp_up_strategy(surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL);
  c.mutable_traffic_cfg()->set_ramp_up_start_rps(2);
  c.mutable_traffic_cfg()->set_ramp_up_end_rps(40);
  const TrafficDescription d = ResolveSeedTraffic(c).description;
  EXPECT_EQ(d.short_title, "Target Rate: 40 RPS | Exponential Ramp-up: 2→40 RPS");
  ASSERT_TRUE(d.theoretical.has_value());
  EXPECT_EQ(d.theoretical->name, kTheoreticalRampName);
  EXPECT_THAT(d.theoretical->curve, IsEmpty());
  EXPECT_EQ(d.theoretical->computation,
            "λ_i = λ_s·(λ_e/λ_s)^p_i, p_i = i/(N−1), drawn at x = t_i.");
  EXPECT_EQ(d.log_line, "target rate 40 RPS (Exponential ramp-up 2->40), burstiness 0");
  EXPECT_EQ(d.context[2].value, "Exponential 2 → 40 RPS");
}

TEST(TrafficDescriptionTest, InstantMode) {
  const TrafficDescription d = ResolveSeedTraffic(Config(0, 0, 5)).description;
  EXPECT_EQ(d.title, "Instant mode");
  EXPECT_EQ(d.short_title, "Target Rate: 0 RPS | Instant Mode");
  EXPECT_EQ(d.log_line, "target rate 0 RPS, burstiness 0, instant mode");
  const TrafficDescription inf =
      ResolveSeedTraffic(Config(std::numeric_limits<double>::infinity(), 0, 5)).description;
  EXPECT_EQ(inf.context[0].value,
            "instant mode: request_rate inf (all at once), every request planned at 0 (R-INST)");
}

TEST(TrafficDescriptionTest, TraceReplay) {
  const ResolvedTraffic t = ResolveReplayTraffic({0, 1, 2, 4}, 0.5);
  const TrafficDescription& d = t.description;
  EXPECT_EQ(d.title, "Trace replay");
  EXPECT_EQ(d.short_title, "Target Rate: 0.75 RPS");
  EXPECT_EQ(d.log_intro,
            "trace replay: 4 requests over 4 s (time scale 0.5), mean rate 0.75 RPS, first "
            "request at offset 0");
  EXPECT_EQ(d.context[0].value, "trace replay: the trace's timestamps (mean 0.75 RPS)");
  EXPECT_EQ(d.context[2].value, "none");
}

TEST(TrafficDescriptionTest, ComposedTrafficFromItsProfileAndSampler) {
  surge::v1::RunConfig c = Config(0, 0, 1000);
  auto* stage = c.mutable_traffic_cfg()->add_stages();
  stage->set_duration_s(10);
  stage->set_rate_rps(5);
  auto process = MakeArrivalProcess(c);
  ASSERT_TRUE(process.ok()) << process.status();
  const TrafficDescription& d = (*process)->Traffic().description;
  EXPECT_EQ((*process)->Title(), d.title);
  EXPECT_THAT(d.title, HasSubstr(" × fixed intervals"));
  EXPECT_THAT(d.short_title, HasSubstr("Peak Rate: 5 RPS | "));
  ASSERT_TRUE(d.theoretical.has_value());
  EXPECT_EQ(d.theoretical->name, kTheoreticalRateName);
  EXPECT_FALSE(d.theoretical->curve.empty());
  EXPECT_THAT(d.log_line, HasSubstr("(expected 50 requests over 10 s, mean 5 RPS, peak 5 RPS)"));
  EXPECT_THAT(Labels(d), ElementsAre("Request rate", "Interval sampler", "Ramp-up"));
  EXPECT_EQ(d.context[1].value, "fixed intervals");
  // The same description through ResolveTraffic (surge report's path).
  EXPECT_EQ(ResolveTraffic(c).description.log_line, d.log_line);
}

TEST(TrafficDescriptionTest, ComposedProcessPlansTheSameForTheSameSeedAgain) {
  surge::v1::RunConfig c = Config(20, 0, 400);
  c.mutable_traffic_cfg()->set_sampler(surge::v1::SAMPLER_KIND_MMPP);
  for (auto [m, d] : {std::pair{3.0, 2.0}, std::pair{0.5, 8.0}}) {
    auto* s = c.mutable_traffic_cfg()->add_mmpp_states();
    s->set_rate_multiplier(m);
    s->set_mean_dwell_s(d);
  }
  auto process = MakeArrivalProcess(c);
  ASSERT_TRUE(process.ok()) << process.status();
  auto first = (*process)->Generate(7);
  auto other = (*process)->Generate(8);
  auto again = (*process)->Generate(7);
  ASSERT_TRUE(first.ok() && other.ok() && again.ok());
  EXPECT_EQ(first->offset_s, again->offset_s);
  EXPECT_NE(first->offset_s, other->offset_s);
  EXPECT_EQ(first->traffic.profile, again->traffic.profile);  // built once, shared
}

TEST(TrafficWarningsTest, ReplayNamesTheKeysTheTraceOverrides) {
  surge::v1::RunConfig c = Config(5, 2, 10);
  c.mutable_dataset()->set_trace_replay(true);
  EXPECT_THAT(TrafficWarnings(c),
              ElementsAre("trace replay: the trace's timestamps set the schedule, so "
                          "request_rate, traffic_cfg.burstiness (flags --request-rate, "
                          "--burstiness, --ramp-up-*) are ignored"));
  EXPECT_TRUE(CheckTrafficConfig(c).ok());
  EXPECT_FALSE(PlansInstantMode(c));
}

TEST(TrafficWarningsTest, InactiveRampThenInstantMode) {
  surge::v1::RunConfig c = Config(0.05, 0, 10);
  EXPECT_THAT(TrafficWarnings(c),
              ElementsAre("request_rate 0.05 < 0.1: instant mode, all 10 requests are sent at "
                          "once; give --request-rate (>= 0.1) or a ramp-up for paced traffic"));
  EXPECT_TRUE(PlansInstantMode(c));
  c.mutable_traffic_cfg()->set_ramp_up_strategy(surge::v1::RAMP_UP_STRATEGY_LINEAR);
  c.mutable_traffic_cfg()->set_ramp_up_start_rps(50);
  c.mutable_traffic_cfg()->set_ramp_up_end_rps(10);
  EXPECT_THAT(CheckTrafficConfig(c).message(), HasSubstr("ramp-up is inactive because"));
}

TEST(PlanWarningsTest, SmallBetaBurstsAreSaid) {
  auto plan = BuildArrivalSchedule(ResolveSeedTraffic(Config(10, 0.02, 500)), 500, 0);
  ASSERT_TRUE(plan.ok());
  const std::vector<std::string> w = PlanWarnings(*plan);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("burstiness 0.02: "));
  auto calm = BuildArrivalSchedule(ResolveSeedTraffic(Config(10, 0.5, 500)), 500, 0);
  ASSERT_TRUE(calm.ok());
  EXPECT_THAT(PlanWarnings(*calm), IsEmpty());
}

}  // namespace
}  // namespace surge::coordinator
