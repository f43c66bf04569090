// Composed traffic (docs/TRAFFIC.md): every rate profile
// against its closed form (mean rate, Λ(t), Λ^{-1}), every sampler against
// its distribution (counts per window vs ∫λ; Kolmogorov–Smirnov for Gamma(β)
// and MMPP), a hand-computed stage list to the exact offsets, the seed's
// AISBench plans unchanged through the factory (R-RATE … R-ANOM), and the
// config's field-named errors (R-CFG-1). Pure: no clock, no I/O but temp
// config files.
#include "coordinator/plan/arrival_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/math/distributions/exponential.hpp>
#include <boost/math/distributions/gamma.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "coordinator/config/run_config.h"
#include "coordinator/plan/rate_profile.h"
#include "coordinator/plan/traffic.h"
#include "tests/testing/ks_statistic.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kPi = std::numbers::pi;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A config from YAML text through the real reader and validator.
absl::StatusOr<surge::v1::RunConfig> ConfigFromYaml(const std::string& yaml) {
  static int n = 0;
  const fs::path path = fs::path(::testing::TempDir()) / ("traffic_" + std::to_string(getpid()) +
                                                          "_" + std::to_string(n++) + ".yaml");
  std::ofstream(path) << yaml;
  surge::v1::RunConfig config = DefaultRunConfig();
  if (absl::Status s = LoadYamlConfig(path.string(), &config); !s.ok()) return s;
  if (absl::Status s = ValidateRunConfig(config); !s.ok()) return s;
  return config;
}

absl::StatusOr<ArrivalSchedule> PlanFromYaml(const std::string& yaml) {
  auto config = ConfigFromYaml(yaml);
  if (!config.ok()) return config.status();
  auto process = MakeArrivalProcess(*config);
  if (!process.ok()) return process.status();
  return (*process)->Generate(config->seed());
}

using ::surge::testing::kKsCritical;
using ::surge::testing::KsStatistic;

// ---- Profiles against their closed forms ---------------------------------

TEST(RateProfileTest, ConstantMeanCountAndInverse) {
  auto p = MakeConstantProfile(8, 10);
  EXPECT_DOUBLE_EQ(p->MeanRateRps(), 8);
  EXPECT_DOUBLE_EQ(p->TotalCount(), 80);
  EXPECT_DOUBLE_EQ(p->CountAt(2.5), 20);
  EXPECT_DOUBLE_EQ(p->TimeAtCount(20), 2.5);
  EXPECT_DOUBLE_EQ(p->PeakRateRps(), 8);
}

TEST(RateProfileTest, LinearRampClosedForm) {
  // λ = 2 + 8t/10: Λ(t) = 2t + 0.4t², mean (a+b)/2 = 6.
  auto p = MakeRampProfile(false, 2, 10, 10);
  EXPECT_DOUBLE_EQ(p->MeanRateRps(), 6);
  EXPECT_DOUBLE_EQ(p->CountAt(5), 2 * 5 + 0.4 * 25);
  EXPECT_DOUBLE_EQ(p->RateRps(5), 6);
  for (double t : {0.1, 1.0, 3.7, 9.99}) EXPECT_NEAR(p->TimeAtCount(p->CountAt(t)), t, 1e-12);
  // A ramp down (start > end) is a valid time ramp too.
  auto down = MakeRampProfile(false, 10, 2, 10);
  EXPECT_DOUBLE_EQ(down->TotalCount(), 60);
  EXPECT_NEAR(down->TimeAtCount(down->CountAt(4)), 4, 1e-12);
}

TEST(RateProfileTest, ExponentialRampClosedForm) {
  // λ = 1·100^{t/20}: mean (b − a)/ln(b/a) = 99/ln 100.
  auto p = MakeRampProfile(true, 1, 100, 20);
  EXPECT_NEAR(p->MeanRateRps(), 99 / std::log(100.0), 1e-12);
  EXPECT_NEAR(p->RateRps(10), 10, 1e-12);
  EXPECT_NEAR(p->CountAt(10), 20 / std::log(100.0) * 9, 1e-12);
  for (double t : {0.5, 7.0, 19.0}) EXPECT_NEAR(p->TimeAtCount(p->CountAt(t)), t, 1e-10);
}

TEST(RateProfileTest, SineAndDiurnalClosedForm) {
  // Diurnal 5..45 RPS, period 40 s, peak at 20 s: λ = 25 + 20cos(2π(t−20)/40).
  auto d = MakeCosineProfile(true, 25, 20, 40, 20, 80);
  EXPECT_NEAR(d->MeanRateRps(), 25, 1e-12);  // whole periods
  EXPECT_NEAR(d->RateRps(20), 45, 1e-12);
  EXPECT_NEAR(d->RateRps(0), 5, 1e-12);
  EXPECT_NEAR(d->PeakRateRps(), 45, 1e-12);
  // Λ(10) = 250 + (20·40/2π)(sin(−π/2) − sin(−π)) = 250 − 400/π.
  EXPECT_NEAR(d->CountAt(10), 250 - 400 / kPi, 1e-9);
  for (double t : {0.01, 13.0, 39.5, 71.0}) EXPECT_NEAR(d->TimeAtCount(d->CountAt(t)), t, 1e-9);
  auto s = MakeCosineProfile(false, 10, 4, 12, 3, 36);
  EXPECT_NEAR(s->MeanRateRps(), 10, 1e-12);
}

TEST(RateProfileTest, StagesAndSpikesAddUp) {
  std::vector<std::unique_ptr<RateProfile>> stages;
  stages.push_back(MakeConstantProfile(4, 10));        // 40
  stages.push_back(MakeConstantProfile(0, 5));         // a pause
  stages.push_back(MakeRampProfile(false, 2, 6, 10));  // 40
  auto staged = MakeStagedProfile(std::move(stages));
  EXPECT_DOUBLE_EQ(staged->DurationS(), 25);
  EXPECT_DOUBLE_EQ(staged->TotalCount(), 80);
  EXPECT_EQ(staged->StageAt(0), 0u);
  EXPECT_EQ(staged->StageAt(10), 1u);  // right-continuous
  EXPECT_EQ(staged->StageAt(25), 2u);
  EXPECT_DOUBLE_EQ(staged->RateRps(10), 4);  // left-continuous
  // Count 40 is reached at 10 s, the start of the pause.
  EXPECT_DOUBLE_EQ(staged->TimeAtCount(40), 10);
  // Count 40.5 is 0.5 into the ramp: 2u + 0.2u² = 0.5, u = 1/(2 + √4.4).
  EXPECT_NEAR(staged->TimeAtCount(40.5), 15 + 1 / (2 + std::sqrt(4.4)), 1e-12);
  // ×3 on (2, 4] adds 2·(4·2) = 16; ×0 on (20, 21] removes the ramp's
  // ∫_5^6 (2 + 0.4u) du = 2 + 0.2·(36 − 25) = 4.2.
  auto spiked = MakeSpikeOverlay(std::move(staged), {{2, 2, 3}, {20, 1, 0}});
  EXPECT_NEAR(spiked->TotalCount(), 80 + 16 - 4.2, 1e-12);
  EXPECT_DOUBLE_EQ(spiked->RateRps(3), 12);
  EXPECT_DOUBLE_EQ(spiked->RateRps(20.5), 0);
  for (double t : {1.0, 2.5, 3.99, 16.0, 19.0, 22.0, 24.9}) {
    EXPECT_NEAR(spiked->TimeAtCount(spiked->CountAt(t)), t, 1e-9) << t;
  }
  // Where λ = 0 (the pause, the outage) Λ is flat: Λ⁻¹ gives its start.
  EXPECT_DOUBLE_EQ(spiked->TimeAtCount(spiked->CountAt(12)), 10);
  EXPECT_DOUBLE_EQ(spiked->TimeAtCount(spiked->CountAt(20.7)), 20);
  // The curve draws both sides of each edge.
  const std::vector<RatePoint> curve = spiked->Curve(100);
  int at_two = 0;
  for (const RatePoint& p : curve) at_two += p.t_s == 2;
  EXPECT_GE(at_two, 2);
  EXPECT_THAT(spiked->Title(), HasSubstr("×3 at 2–4 s"));
}

// ---- A stage list to the exact offsets -------------------------------------

TEST(StageListTest, HandComputedScheduleExactly) {
  // 10 s at 2 RPS, 5 s at 4 RPS, then 4 requests on a linear ramp 1→3 RPS
  // (D = 2·4/(1+3) = 2 s, Λ(u) = u + u²/2, so u_k = √(1+2k) − 1), fixed
  // intervals: t_i = Λ^{-1}(i+1).
  auto plan = PlanFromYaml(R"(
num_prompts: 100
traffic_cfg:
  stages:
    - {duration_s: 10, rate_rps: 2}
    - {duration_s: 5, rate_rps: 4}
    - {num_requests: 4, ramp_up_strategy: linear, ramp_up_start_rps: 1, ramp_up_end_rps: 3}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<double> expected;
  for (int k = 1; k <= 20; ++k) expected.push_back(0.5 * k);
  for (int k = 1; k <= 20; ++k) expected.push_back(10 + 0.25 * k);
  for (int k = 1; k <= 4; ++k) expected.push_back(15 + std::sqrt(1.0 + 2 * k) - 1);
  ASSERT_EQ(plan->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_DOUBLE_EQ(plan->offset_s[i], expected[i]) << i;
  }
  // λ_i left-continuous: the 20th request closes stage 1 at its rate.
  EXPECT_DOUBLE_EQ(plan->rate_rps[19], 2);
  EXPECT_DOUBLE_EQ(plan->rate_rps[20], 4);
  EXPECT_DOUBLE_EQ(plan->rate_rps[43], 3);
  EXPECT_DOUBLE_EQ(plan->interval_s[20], 0.25);
  EXPECT_EQ(plan->Count(Anomaly::kNormal), plan->size());
  EXPECT_EQ(plan->traffic.profile->DurationS(), 17);
}

// ---- Samplers against their distributions --------------------------------

std::unique_ptr<RateProfile> DiurnalWithSpike() {
  std::vector<std::unique_ptr<RateProfile>> stages;
  stages.push_back(MakeCosineProfile(true, 60, 40, 200, 100, 400));
  return MakeSpikeOverlay(MakeStagedProfile(std::move(stages)), {{150, 10, 3}});
}

TEST(SamplerTest, FixedCountsPerWindowFollowTheIntegral) {
  auto profile = DiurnalWithSpike();
  auto sampler = MakeRenewalSampler({0});
  auto arrivals = SampleArrivals(*profile, *sampler, 1000000, 0);
  ASSERT_TRUE(arrivals.ok());
  EXPECT_EQ(arrivals->size(), static_cast<size_t>(std::floor(profile->TotalCount() + 1e-9)));
  // Arrival k sits at Λ^{-1}(k): any window holds ∫λ over it, ± 1.
  size_t i = 0;
  for (double a = 0; a < 400; a += 1) {
    size_t count = 0;
    while (i < arrivals->size() && (*arrivals)[i].offset_s <= a + 1) ++count, ++i;
    EXPECT_NEAR(static_cast<double>(count), profile->CountAt(a + 1) - profile->CountAt(a), 1.0)
        << "window " << a;
  }
}

class GammaSamplerTest : public ::testing::TestWithParam<double> {};

// R-INT on a time-varying profile: the gaps in Λ are Gamma(β, 1/β) (KS),
// and counts over 20 s windows are ∫λ within 5σ, σ² ≈ ∫λ/β (a renewal
// process's count variance ≈ mean·CV²).
TEST_P(GammaSamplerTest, RescaledGapsAreGammaAndCountsFollowTheIntegral) {
  const double beta = GetParam();
  auto profile = DiurnalWithSpike();
  auto sampler = MakeRenewalSampler({beta});
  auto arrivals = SampleArrivals(*profile, *sampler, 1000000, 7);
  ASSERT_TRUE(arrivals.ok());
  std::vector<double> gaps;
  double previous = 0;
  for (const SampledArrival& a : *arrivals) {
    const double s = profile->CountAt(a.offset_s);
    gaps.push_back(s - previous);
    previous = s;
    EXPECT_EQ(a.burstiness, beta);
  }
  const boost::math::gamma_distribution<double> gamma(beta, 1 / beta);
  const double d = KsStatistic(gaps, [&](double x) { return boost::math::cdf(gamma, x); });
  EXPECT_LT(d * std::sqrt(gaps.size()), kKsCritical) << "D_n = " << d;
  size_t i = 0;
  for (double a = 0; a < 400; a += 20) {
    double count = 0;
    while (i < arrivals->size() && (*arrivals)[i].offset_s <= a + 20) ++count, ++i;
    const double expected = profile->CountAt(a + 20) - profile->CountAt(a);
    EXPECT_NEAR(count, expected, 5 * std::sqrt(expected / beta) + 1) << "window " << a;
  }
}

INSTANTIATE_TEST_SUITE_P(Burstiness, GammaSamplerTest, ::testing::Values(0.5, 1.0, 4.0));

TEST(SamplerTest, PerStageBurstinessIsUsedInItsStage) {
  auto plan = PlanFromYaml(R"(
num_prompts: 5000
traffic_cfg:
  burstiness: 1
  stages:
    - {duration_s: 100, rate_rps: 10}
    - {duration_s: 100, rate_rps: 10, burstiness: 0}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Stage 2 has fixed intervals: every interval after the first arrival in
  // it is exactly 0.1 s (to rounding).
  size_t fixed = 0, in_stage2 = 0;
  for (size_t i = 1; i < plan->size(); ++i) {
    if (plan->offset_s[i - 1] < 100) continue;
    ++in_stage2;
    fixed += std::fabs(plan->interval_s[i] - 0.1) < 1e-9;
  }
  EXPECT_GT(in_stage2, 900u);
  EXPECT_EQ(fixed, in_stage2);
}

// MMPP: long-run mean rate λ (the multipliers are normalised), count
// variance from the 2-state MMPP's index of dispersion
// IDC = 1 + 2(λ1−λ2)²r1r2/((r1+r2)³λ̄) (r = 1/dwell), and inside one visit
// of state k the gaps are Exp(m_k·λ + 1/d_k): an arrival gap X ~ Exp(m_k λ)
// conditioned on X < the visit's rest S ~ Exp(1/d_k) (KS per state).
TEST(SamplerTest, MmppMeanRateAndWithinVisitGapsMatchClosedForm) {
  const double rate = 10, duration = 20000;
  auto profile = MakeConstantProfile(rate, duration);
  // Dwell-weighted mean multiplier (3·2 + 0.5·8)/10 = 1: λ1 = 30, λ2 = 5.
  auto sampler = MakeMmppSampler({{3, 2}, {0.5, 8}});
  auto arrivals = SampleArrivals(*profile, *sampler, 10000000, 3);
  ASSERT_TRUE(arrivals.ok());
  const double n = static_cast<double>(arrivals->size());
  const double r1 = 0.5, r2 = 0.125, l1 = 30, l2 = 5;
  const double idc = 1 + 2 * (l1 - l2) * (l1 - l2) * r1 * r2 / (std::pow(r1 + r2, 3) * rate);
  EXPECT_NEAR(n, rate * duration, 5 * std::sqrt(idc * rate * duration));
  std::vector<double> gaps[2];
  for (size_t i = 1; i < arrivals->size(); ++i) {
    const SampledArrival& a = (*arrivals)[i];
    const SampledArrival& b = (*arrivals)[i - 1];
    if (a.dwell == b.dwell) gaps[a.state].push_back(a.offset_s - b.offset_s);
    EXPECT_DOUBLE_EQ(a.rate_rps, a.state == 0 ? 30 : 5);
  }
  const double mu[2] = {l1 + r1, l2 + r2};
  for (int k = 0; k < 2; ++k) {
    ASSERT_GT(gaps[k].size(), 10000u);
    const boost::math::exponential_distribution<double> e(mu[k]);
    const double d = KsStatistic(gaps[k], [&](double x) { return boost::math::cdf(e, x); });
    EXPECT_LT(d * std::sqrt(gaps[k].size()), kKsCritical) << "state " << k << " D_n = " << d;
  }
}

// ---- The AISBench keys keep the seed's plan ------------------------------

TEST(FactoryTest, SharedPlanCasesAreUnchangedBitForBit) {
  const nlohmann::json cases = nlohmann::json::parse(
      ReadFile(fs::path(SURGE_SOURCE_DIR) / "tests/testdata/traffic_cases.json"));
  ASSERT_GT(cases["plan_cases"].size(), 0u);
  for (const auto& c : cases["plan_cases"]) {
    SCOPED_TRACE(c["id"].get<std::string>());
    auto config = ConfigFromYaml(c["config"].dump());
    ASSERT_TRUE(config.ok()) << config.status();
    config->set_num_prompts(c["num_requests"].get<uint64_t>());
    for (uint64_t seed : {0, 1, 42}) {
      auto process = MakeArrivalProcess(*config);
      ASSERT_TRUE(process.ok());
      auto plan = (*process)->Generate(seed);
      auto seed_plan = BuildArrivalSchedule(ResolveTraffic(*config), config->num_prompts(), seed);
      ASSERT_TRUE(plan.ok() && seed_plan.ok());
      EXPECT_EQ(plan->offset_s, seed_plan->offset_s);
      EXPECT_EQ(plan->interval_s, seed_plan->interval_s);
      EXPECT_EQ(plan->rate_rps, seed_plan->rate_rps);
      EXPECT_EQ(plan->anomaly, seed_plan->anomaly);
      EXPECT_EQ(plan->traffic.profile, nullptr);
    }
  }
}

TEST(FactoryTest, ReplayOffsetsGoThroughTheFactory) {
  const std::vector<double> offsets = {0, 0.5, 2};
  auto process = MakeArrivalProcess(DefaultRunConfig(), &offsets);
  ASSERT_TRUE(process.ok());
  auto plan = (*process)->Generate(0);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->offset_s, offsets);
  EXPECT_TRUE(plan->traffic.trace_replay);
}

TEST(FactoryTest, SpikesOverTheAisbenchRate) {
  // No stages: one stage of num_prompts at request_rate (100 s), ×2 on (10, 20].
  auto plan = PlanFromYaml(R"(
request_rate: 10
num_prompts: 1000
traffic_cfg:
  spikes: [{at_s: 10, duration_s: 10, rate_multiplier: 2}]
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->size(), 1100u);
  EXPECT_DOUBLE_EQ(plan->offset_s.back(), 100);
  EXPECT_DOUBLE_EQ(plan->rate_rps[150], 20);
}

TEST(FactoryTest, SavedConfigRebuildsTheSamePlan) {
  auto config = ConfigFromYaml(R"(
num_prompts: 5000
seed: 4
traffic_cfg:
  burstiness: 0.5
  stages:
    - {duration_s: 20, profile: diurnal, min_rps: 5, max_rps: 50, period_s: 20}
    - {num_requests: 100, rate_rps: 10, burstiness: 2}
  spikes: [{at_s: 5, duration_s: 2, rate_multiplier: 3}]
)");
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string saved = SavedConfigJson(*config, nullptr);
  EXPECT_THAT(saved, HasSubstr("\"stages\""));
  EXPECT_THAT(saved, Not(HasSubstr("request_rate")));
  auto again = ConfigFromYaml(saved);
  ASSERT_TRUE(again.ok()) << again.status();
  auto a = (*MakeArrivalProcess(*config))->Generate(4);
  auto b = (*MakeArrivalProcess(*again))->Generate(4);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->offset_s, b->offset_s);
  EXPECT_TRUE(PlanDefiningDifferences(*config, *again).empty());
}

// ---- Field-named errors ---------------------------------------------------

struct ErrorCase {
  const char* yaml;
  const char* line;  // expected "  <field> = <value>: ..." start
};

class TrafficErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(TrafficErrorTest, NamesFieldValueAndWhatIsAllowed) {
  auto config = ConfigFromYaml(GetParam().yaml);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(GetParam().line));
}

INSTANTIATE_TEST_SUITE_P(
    Config, TrafficErrorTest,
    ::testing::Values(
        ErrorCase{"traffic_cfg: {stages: [{duration_s: -1, rate_rps: 2}]}",
                  "  traffic_cfg.stages[0].duration_s = -1: must be a number of seconds > 0"},
        ErrorCase{"traffic_cfg: {stages: [{duration_s: 1, num_requests: 3, rate_rps: 2}]}",
                  "  traffic_cfg.stages[0] = (duration_s and num_requests): give exactly one"},
        ErrorCase{"traffic_cfg: {stages: [{duration_s: 1}]}",
                  "  traffic_cfg.stages[0] = (no rate): give exactly one of rate_rps"},
        ErrorCase{
            "traffic_cfg: {stages: [{duration_s: 1, rate_rsp: 2}]}",
            "  traffic_cfg.stages[0].rate_rsp = \"2\": unknown key; did you mean `rate_rps`?"},
        ErrorCase{"traffic_cfg: {stages: [{duration_s: 1, profile: sine, mean_rps: 2, "
                  "amplitude_rps: 3, period_s: 1}]}",
                  "  traffic_cfg.stages[0].amplitude_rps = 3: must be between 0 and mean_rps (2)"},
        ErrorCase{"traffic_cfg: {stages: [{duration_s: 1, profile: weekly}]}",
                  "  traffic_cfg.stages[0].profile = \"weekly\": must be \"sine\" or \"diurnal\""},
        ErrorCase{"traffic_cfg: {stages: [{duration_s: 9, profile: diurnal, max_rps: 5}]}",
                  "  traffic_cfg.stages[0].min_rps = (not set): must be a rate >= 0"},
        ErrorCase{"traffic_cfg: {stages: [{duration_s: 9, ramp_up_strategy: exponential, "
                  "ramp_up_start_rps: 0, ramp_up_end_rps: 5}]}",
                  "  traffic_cfg.stages[0].ramp_up_start_rps = 0: must be a rate > 0"},
        ErrorCase{"traffic_cfg: {stages: {duration_s: 9}}",
                  "  traffic_cfg.stages = a mapping: must be a list of mappings"},
        ErrorCase{"request_rate: 5\ntraffic_cfg: {stages: [{duration_s: 9, rate_rps: 1}]}",
                  "  request_rate = 5: is not used with traffic_cfg.stages"},
        ErrorCase{"num_prompts: 10\ntraffic_cfg: {stages: [{num_requests: 9, rate_rps: 1}, "
                  "{num_requests: 2, rate_rps: 1}]}",
                  "  num_prompts = 10: is less than the stages' num_requests total (11)"},
        ErrorCase{"traffic_cfg: {stages: [{duration_s: 9, rate_rps: 1}], spikes: [{at_s: 1, "
                  "duration_s: 3, rate_multiplier: 2}, {at_s: 2, duration_s: 1, "
                  "rate_multiplier: 2}]}",
                  "  traffic_cfg.spikes[1].at_s = 2: overlaps traffic_cfg.spikes[0] (1–4 s)"},
        ErrorCase{"traffic_cfg: {stages: [{duration_s: 9, rate_rps: 1}], spikes: [{at_s: 12, "
                  "duration_s: 3, rate_multiplier: 2}]}",
                  "  traffic_cfg.spikes[0].at_s = 12: must be before the profile ends (9 s)"},
        ErrorCase{"traffic_cfg: {burstiness: 0.5, sampler: fixed, stages: [{duration_s: 9, "
                  "rate_rps: 1}]}",
                  "  traffic_cfg.sampler = \"fixed\": contradicts a burstiness > 0"},
        ErrorCase{"traffic_cfg: {sampler: mmpp, mmpp_states: [{rate_multiplier: 2, "
                  "mean_dwell_s: 1}], stages: [{duration_s: 9, rate_rps: 1}]}",
                  "  traffic_cfg.mmpp_states = (1 states): sampler mmpp needs two or more"},
        ErrorCase{"traffic_cfg: {sampler: mmpp, mmpp_states: [{rate_multiplier: 2, "
                  "mean_dwell_s: 1}, {rate_multiplier: 1, mean_dwell_s: 0}], stages: "
                  "[{duration_s: 9, rate_rps: 1}]}",
                  "  traffic_cfg.mmpp_states[1].mean_dwell_s = 0: must be a number of seconds > 0"},
        ErrorCase{"traffic_cfg: {sampler: poisson}",
                  "  traffic_cfg.sampler = \"poisson\": must be \"fixed\", \"gamma\" or \"mmpp\""},
        ErrorCase{"traffic_cfg: {spikes: [{at_s: 1, duration_s: 1, rate_multiplier: 2}]}",
                  "  request_rate = 0: spikes and the mmpp sampler need paced traffic"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) {
      return "Case" + std::to_string(info.index);
    });

TEST(FactoryTest, MoreRequestsThanNumPromptsIsRefusedNamingIt) {
  auto config = ConfigFromYaml(R"(
num_prompts: 50
traffic_cfg:
  stages: [{duration_s: 10, rate_rps: 10}]
)");
  ASSERT_TRUE(config.ok()) << config.status();
  auto plan = (*MakeArrivalProcess(*config))->Generate(0);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("  num_prompts = 50: the traffic profile (10 RPS for 10 s, about 100 "
                        "requests expected) plans more requests than num_prompts"));
}

}  // namespace
}  // namespace surge::coordinator
