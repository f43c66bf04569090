// Schedule engine tests: the shared plan cases with exact expected
// values, the Gamma interval statistics (R-INT), normalization (R-NORM),
// anomaly classes (R-ANOM) and determinism (R-RNG).
#include "coordinator/plan/arrival_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "coordinator/config/run_config.h"
#include "coordinator/plan/arrival_process.h"  // ResolveTraffic
#include "coordinator/plan/traffic.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const nlohmann::json& Cases() {
  static const nlohmann::json* cases = new nlohmann::json(nlohmann::json::parse(
      ReadFile(fs::path(SURGE_SOURCE_DIR) / "tests/testdata/traffic_cases.json")));
  return *cases;
}

// Loads a case's "config" object through the real YAML reader (JSON is YAML).
absl::Status LoadCaseConfig(const nlohmann::json& c, surge::v1::RunConfig* config) {
  *config = DefaultRunConfig();
  const fs::path path =
      fs::path(::testing::TempDir()) / (c["id"].get<std::string>() + "_config.yaml");
  std::ofstream(path) << c["config"].dump();
  if (absl::Status s = LoadYamlConfig(path.string(), config); !s.ok()) return s;
  config->set_num_prompts(c["num_requests"].get<uint64_t>());
  return ValidateRunConfig(*config);
}

void ExpectClose(double actual, double expected, const std::string& what) {
  const double tolerance = 1e-9 * std::max(1.0, std::fabs(expected));
  EXPECT_NEAR(actual, expected, tolerance) << what;
}

class PlanCaseTest : public ::testing::TestWithParam<size_t> {};

TEST_P(PlanCaseTest, MatchesSharedCaseExactly) {
  const nlohmann::json& c = Cases()["plan_cases"][GetParam()];
  SCOPED_TRACE(c["id"].get<std::string>());
  surge::v1::RunConfig config;
  ASSERT_TRUE(LoadCaseConfig(c, &config).ok());
  const ResolvedTraffic traffic = ResolveTraffic(config);
  auto plan = BuildArrivalSchedule(traffic, config.num_prompts(), /*seed=*/0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const nlohmann::json& e = c["expected"];
  EXPECT_EQ(traffic.instant, e["instant"].get<bool>());
  if (e.contains("ramp_active")) {
    EXPECT_EQ(traffic.ramp_active, e["ramp_active"].get<bool>());
  }
  if (e.contains("target_rate")) {
    ExpectClose(traffic.target_rate_rps, e["target_rate"].get<double>(), "target_rate");
  }
  ASSERT_EQ(plan->size(), e["offset_s"].size());
  for (size_t i = 0; i < plan->size(); ++i) {
    const std::string at = "request " + std::to_string(i);
    ExpectClose(plan->offset_s[i], e["offset_s"][i].get<double>(), "offset_s " + at);
    ExpectClose(plan->rate_rps[i], e["rate_rps"][i].get<double>(), "rate_rps " + at);
    ExpectClose(plan->interval_s[i], e["interval_s"][i].get<double>(), "interval_s " + at);
    EXPECT_EQ(AnomalyName(plan->anomaly[i]), e["anomaly"][i].get<std::string>()) << at;
  }
}

INSTANTIATE_TEST_SUITE_P(SharedCases, PlanCaseTest,
                         ::testing::Range<size_t>(0, Cases()["plan_cases"].size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return Cases()["plan_cases"][info.param]["id"].get<std::string>();
                         });

class ErrorCaseTest : public ::testing::TestWithParam<size_t> {};

TEST_P(ErrorCaseTest, NamesTheField) {
  const nlohmann::json& c = Cases()["error_cases"][GetParam()];
  surge::v1::RunConfig config;
  const absl::Status s = LoadCaseConfig(c, &config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const std::string field = c["expected"]["error_field"].get<std::string>();
  // "  <field> = <value>: ..." — the field path starts its own line.
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("  " + field + " = ")) << s;
}

INSTANTIATE_TEST_SUITE_P(SharedCases, ErrorCaseTest,
                         ::testing::Range<size_t>(0, Cases()["error_cases"].size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return Cases()["error_cases"][info.param]["id"].get<std::string>();
                         });

TEST(SharedCasesCopyTest, RepoCopiesEqualSharedFolder) {
  const fs::path shared = fs::path(SURGE_SOURCE_DIR) / ".." / "shared";
  if (!fs::exists(shared / "cases")) GTEST_SKIP() << "no ../shared beside the repo";
  EXPECT_EQ(ReadFile(fs::path(SURGE_SOURCE_DIR) / "tests/testdata/traffic_cases.json"),
            ReadFile(shared / "cases/traffic_cases.json"));
  EXPECT_EQ(ReadFile(fs::path(SURGE_SOURCE_DIR) / "data/README.md"),
            ReadFile(shared / "data/README.md"));
  EXPECT_EQ(ReadFile(fs::path(SURGE_SOURCE_DIR) / "data/traces/mooncake_conversation_trace.jsonl"),
            ReadFile(shared / "data/traces/mooncake_conversation_trace.jsonl"));
}

ResolvedTraffic ConstantRamp(double rate_rps, double burstiness) {
  // A ramp from λ to λ is active (end >= start) and disables R-NORM, so the
  // raw Gamma intervals can be inspected.
  ResolvedTraffic t;
  t.burstiness = burstiness;
  t.strategy = RampStrategy::kLinear;
  t.ramp_active = true;
  t.ramp_start_rps = t.ramp_end_rps = t.target_rate_rps = rate_rps;
  return t;
}

class GammaIntervalTest : public ::testing::TestWithParam<double> {};

// R-INT: E[Δ] = 1/λ and CV = 1/√β. Tolerances are 5 standard errors for N
// samples: SE(mean) = σ/√N; SE(CV) ≈ CV·√((2 + 6/β)/N)/2 (Gamma excess
// kurtosis 6/β) plus the mean's share.
TEST_P(GammaIntervalTest, MeanAndCoefficientOfVariation) {
  const double beta = GetParam();
  const double rate = 10;
  const size_t n = 200000;
  auto plan = BuildArrivalSchedule(ConstantRamp(rate, beta), n, /*seed=*/42);
  ASSERT_TRUE(plan.ok());
  double sum = 0, sum_sq = 0;
  for (double d : plan->interval_s) {
    sum += d;
    sum_sq += d * d;
  }
  const double mean = sum / n;
  const double sd = std::sqrt(sum_sq / n - mean * mean);
  const double cv = sd / mean;
  const double expected_mean = 1 / rate;
  const double expected_cv = 1 / std::sqrt(beta);
  EXPECT_NEAR(mean, expected_mean, 5 * expected_mean * expected_cv / std::sqrt(n));
  const double se_cv =
      expected_cv * std::sqrt((2 + 6 / beta) / n) / 2 + expected_cv * expected_cv / std::sqrt(n);
  EXPECT_NEAR(cv, expected_cv, 5 * se_cv);
  // Offsets are the running sum of the intervals (R-CUM).
  EXPECT_NEAR(plan->offset_s.back(), sum, 1e-9 * sum);
}

INSTANTIATE_TEST_SUITE_P(Burstiness, GammaIntervalTest,
                         ::testing::Values(0.25, 0.5, 1.0, 2.0, 8.0));

TEST(ArrivalScheduleTest, NormalizationMakesTheRunLastNOverRate) {
  ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = 50;
  t.burstiness = 0.5;
  auto plan = BuildArrivalSchedule(t, 2000, 7);
  ASSERT_TRUE(plan.ok());
  EXPECT_DOUBLE_EQ(plan->offset_s.back(), 2000.0 / 50.0);  // R-NORM
  double previous = 0;
  for (size_t i = 0; i < plan->size(); ++i) {
    EXPECT_NEAR(plan->interval_s[i], plan->offset_s[i] - previous, 1e-12) << i;
    EXPECT_GE(plan->offset_s[i], previous) << i;
    previous = plan->offset_s[i];
    EXPECT_EQ(plan->anomaly[i],
              ClassifyInterval(plan->interval_s[i], plan->rate_rps[i], t.burstiness));
  }
}

TEST(ArrivalScheduleTest, SameSeedSamePlanOtherSeedOtherPlan) {
  ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = 5;
  t.burstiness = 0.7;
  auto a = BuildArrivalSchedule(t, 100, 3);
  auto b = BuildArrivalSchedule(t, 100, 3);
  auto c = BuildArrivalSchedule(t, 100, 4);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->offset_s, b->offset_s);
  EXPECT_NE(a->offset_s, c->offset_s);
}

// R-RNG golden values: Boost.Random's mt19937_64 + gamma_distribution give
// this stream on every platform; a change here changes every user's plan.
TEST(ArrivalScheduleTest, GammaStreamIsPinned) {
  auto plan = BuildArrivalSchedule(ConstantRamp(1.0, 1.0), 3, /*seed=*/0);
  ASSERT_TRUE(plan.ok());
  EXPECT_NEAR(plan->interval_s[0], 0.43665336392617249, 1e-15);
  EXPECT_NEAR(plan->interval_s[1], 1.5241111031603012, 1e-15);
  EXPECT_NEAR(plan->interval_s[2], 0.040545900929760889, 1e-15);
}

TEST(ArrivalScheduleTest, ExponentialRampFollowsClosedForm) {
  ResolvedTraffic t = ConstantRamp(1, 0);
  t.strategy = RampStrategy::kExponential;
  t.ramp_start_rps = 2;
  t.ramp_end_rps = t.target_rate_rps = 200;
  auto plan = BuildArrivalSchedule(t, 101, 0);
  ASSERT_TRUE(plan.ok());
  for (size_t i = 0; i <= 100; ++i) {
    EXPECT_NEAR(plan->rate_rps[i], 2 * std::pow(100.0, i / 100.0), 1e-9 * plan->rate_rps[i]);
    EXPECT_DOUBLE_EQ(plan->interval_s[i], 1 / plan->rate_rps[i]);
  }
}

TEST(AnomalyTest, ClassesFollowRAnom) {
  // e = 1/10 s; the burstiness threshold is a relative deviation above 0.5.
  EXPECT_EQ(ClassifyInterval(0.16, 10, 0.5), Anomaly::kBurstiness);
  EXPECT_EQ(ClassifyInterval(0.15, 10, 0.5), Anomaly::kNormal);
  EXPECT_EQ(ClassifyInterval(0.04, 10, 0.5), Anomaly::kBurstiness);
  EXPECT_EQ(ClassifyInterval(0.0009, 10, 0.5), Anomaly::kTiming);
  // β = 0: no burstiness class, but timing anomalies remain.
  EXPECT_EQ(ClassifyInterval(0.3, 10, 0), Anomaly::kNormal);
  EXPECT_EQ(ClassifyInterval(0.0005, 2000, 0), Anomaly::kTiming);
}

TEST(AnomalyTest, ExactlyOneThousandRpsFixedIsNotATimingAnomaly) {
  ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = 1000;
  auto plan = BuildArrivalSchedule(t, 5000, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->Count(Anomaly::kNormal), 5000u);
  EXPECT_DOUBLE_EQ(plan->offset_s.back(), 5.0);
}

TEST(RampTest, InactiveRampWarnsOnceAndNamesTheCondition) {
  surge::v1::RunConfig config = DefaultRunConfig();
  config.set_request_rate(5);
  config.mutable_traffic_cfg()->set_ramp_up_strategy(surge::v1::RAMP_UP_STRATEGY_LINEAR);
  config.mutable_traffic_cfg()->set_ramp_up_start_rps(0);
  config.mutable_traffic_cfg()->set_ramp_up_end_rps(10);
  ResolvedTraffic t = ResolveTraffic(config);
  EXPECT_FALSE(t.ramp_active);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_THAT(t.warnings[0], ::testing::HasSubstr("ramp_up_start_rps must be > 0"));
  config.mutable_traffic_cfg()->set_ramp_up_start_rps(1);
  config.mutable_traffic_cfg()->set_ramp_up_end_rps(0.1);
  t = ResolveTraffic(config);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_THAT(t.warnings[0], ::testing::HasSubstr("ramp_up_end_rps must be > 0.1"));
  EXPECT_DOUBLE_EQ(t.target_rate_rps, 5);
}

// Issue 8 item 4: a ramp the user asked for that R-RAMP makes inactive must
// not fall back to instant mode (all requests at once) silently.
TEST(RampTest, InactiveRampFallingBackToInstantModeIsRefused) {
  surge::v1::RunConfig config = DefaultRunConfig();  // request_rate not given: 0
  config.set_num_prompts(200);
  config.mutable_traffic_cfg()->set_ramp_up_strategy(surge::v1::RAMP_UP_STRATEGY_LINEAR);
  config.mutable_traffic_cfg()->set_ramp_up_start_rps(50);
  config.mutable_traffic_cfg()->set_ramp_up_end_rps(10);
  const ResolvedTraffic t = ResolveTraffic(config);
  EXPECT_FALSE(t.ramp_active);
  EXPECT_TRUE(t.instant);
  const absl::Status s = CheckTraffic(t, 200);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const std::string m(s.message());
  EXPECT_THAT(m, ::testing::HasSubstr("  traffic_cfg.ramp_up_end_rps = 10: ramp-up is inactive "
                                      "because traffic_cfg.ramp_up_end_rps (10) must be >= "
                                      "traffic_cfg.ramp_up_start_rps (50)"));
  EXPECT_THAT(m, ::testing::HasSubstr("all 200 requests would be sent at once"));
  EXPECT_THAT(m, ::testing::HasSubstr("request_rate >= 0.1 (flag --request-rate)"));
  // The builder refuses it too (the plan module is the rule's one home).
  EXPECT_EQ(BuildArrivalSchedule(t, 200, 0).status().code(), absl::StatusCode::kInvalidArgument);
  // The validator reports it with the other problems.
  EXPECT_THAT(std::string(ValidateRunConfig(config).message()),
              ::testing::HasSubstr("traffic_cfg.ramp_up_end_rps = 10: ramp-up is inactive"));

  // A strategy alone (no rates) is the same kind: it names the start rate.
  surge::v1::RunConfig bare = DefaultRunConfig();
  bare.mutable_traffic_cfg()->set_ramp_up_strategy(surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL);
  EXPECT_THAT(std::string(CheckTraffic(ResolveTraffic(bare), 1000).message()),
              ::testing::HasSubstr("  traffic_cfg.ramp_up_start_rps = 0: ramp-up is inactive"));

  // With a fallback rate >= 0.1 R-RAMP's warning stands and the plan is paced.
  config.set_request_rate(4);
  const ResolvedTraffic paced = ResolveTraffic(config);
  EXPECT_TRUE(CheckTraffic(paced, 200).ok());
  ASSERT_EQ(paced.warnings.size(), 1u);
  auto plan = BuildArrivalSchedule(paced, 200, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_DOUBLE_EQ(plan->offset_s.back(), 50.0);  // 200 requests at 4 RPS
  // An explicit rate below 0.1 without a ramp is still instant mode (R-INST).
  surge::v1::RunConfig slow = DefaultRunConfig();
  slow.set_request_rate(0.05);
  EXPECT_TRUE(CheckTraffic(ResolveTraffic(slow), 200).ok());
  EXPECT_TRUE(ResolveTraffic(slow).instant);
}

// Issue 11 item 7: request_rate inf (vLLM's "all at once") is instant mode
// (R-INST): every request at offset 0, anomaly instant; with an inactive
// ramp it is refused like any rate below 0.1.
TEST(RampTest, InfiniteRequestRateIsInstantMode) {
  surge::v1::RunConfig config = DefaultRunConfig();
  config.set_request_rate(std::numeric_limits<double>::infinity());
  const ResolvedTraffic t = ResolveTraffic(config);
  EXPECT_TRUE(t.instant);
  EXPECT_TRUE(std::isinf(t.target_rate_rps));
  EXPECT_TRUE(CheckTraffic(t, 6).ok());
  auto plan = BuildArrivalSchedule(t, 6, /*seed=*/0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(plan->offset_s[i], 0.0);
    EXPECT_EQ(plan->interval_s[i], 0.0);
    EXPECT_EQ(plan->anomaly[i], Anomaly::kInstant);
  }
  config.mutable_traffic_cfg()->set_ramp_up_strategy(surge::v1::RAMP_UP_STRATEGY_LINEAR);
  config.mutable_traffic_cfg()->set_ramp_up_start_rps(0);
  const absl::Status refused = CheckTraffic(ResolveTraffic(config), 6);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("fallback request_rate = inf means all at once, so all 6"));
}

// Issue 8 item 4: β = 1e-5 makes every Gamma draw underflow to 0; the plan
// would put every request at offset 0 while 4 RPS was asked.
TEST(DegeneratePlanTest, UnderflowingBurstinessIsAnErrorNamingBurstiness) {
  ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = 4;
  t.burstiness = 1e-5;
  auto plan = BuildArrivalSchedule(t, 4, /*seed=*/0);
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()),
              ::testing::HasSubstr("  traffic_cfg.burstiness = 1e-05: with this shape the Gamma "
                                   "intervals round to 0, so all 4 requests would be due at the "
                                   "same instant instead of at 4 RPS; use a larger burstiness: "
                                   "below about 0.01 the draws underflow"));
  // The same with a ramp (no R-NORM there).
  ResolvedTraffic ramp = ConstantRamp(4, 1e-5);
  EXPECT_EQ(BuildArrivalSchedule(ramp, 4, 0).status().code(), absl::StatusCode::kInvalidArgument);
  // θ = 1/(λβ) underflowing for a huge β is the same kind.
  t.burstiness = 1e308;
  t.request_rate_rps = t.target_rate_rps = 1000;
  EXPECT_EQ(BuildArrivalSchedule(t, 4, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

// R-NORM when t_{N-1} is subnormal: k = (N/λ)/t_{N-1} overflows to inf, and
// k·t_i would be inf, or NaN for t_i = 0. β = 1e-3 with seed 118 draws raw
// offsets {0, about 2.5e-314 s} for N = 2 (found by search; pinned here with
// the ramp path, which does not scale).
TEST(DegeneratePlanTest, SubnormalLastOffsetStillScalesToFiniteOffsets) {
  auto raw = BuildArrivalSchedule(ConstantRamp(4, 1e-3), 2, /*seed=*/118);
  ASSERT_TRUE(raw.ok());
  ASSERT_EQ(raw->offset_s[0], 0);
  ASSERT_GT(raw->offset_s[1], 0);
  ASSERT_LT(raw->offset_s[1], 2.2250738585072014e-308);  // subnormal
  ASSERT_FALSE(std::isfinite(0.5 / raw->offset_s[1]));   // k overflows
  ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = 4;
  t.burstiness = 1e-3;
  auto plan = BuildArrivalSchedule(t, 2, 118);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->offset_s[0], 0);  // was NaN (0 · inf)
  EXPECT_EQ(plan->offset_s[1], 0.5);
  EXPECT_EQ(plan->interval_s[0], 0);
  EXPECT_EQ(plan->interval_s[1], 0.5);
}

// Property: for any β, seed, N and ramp, either a plan whose
// offsets are finite and never decrease, with intervals >= 0 and (without a
// ramp) the last offset exactly N/rate, or a clean INVALID_ARGUMENT naming
// burstiness. Never NaN, inf or a negative interval.
TEST(PlanPropertyTest, OffsetsNeverDecreaseForAnyBurstinessAndSeed) {
  const double betas[] = {1e-12, 1e-8, 1e-5, 1e-3, 0.01, 0.1, 1, 10, 1e6, 1e12, 1e300};
  const uint64_t sizes[] = {1, 2, 3, 17, 1000, 3000};
  size_t plans = 0, refused = 0;
  for (const bool with_ramp : {false, true}) {
    for (const double beta : betas) {
      for (const uint64_t n : sizes) {
        const int seeds = n >= 1000 ? 6 : 40;
        for (int seed = 0; seed < seeds; ++seed) {
          ResolvedTraffic t;
          if (with_ramp) {
            t = ConstantRamp(1, beta);
            t.ramp_start_rps = 2;
            t.ramp_end_rps = t.target_rate_rps = 50;
          } else {
            t.request_rate_rps = t.target_rate_rps = 4;
            t.burstiness = beta;
          }
          SCOPED_TRACE(::testing::Message() << "beta " << beta << " n " << n << " seed " << seed
                                            << " ramp " << with_ramp);
          auto plan = BuildArrivalSchedule(t, n, static_cast<uint64_t>(seed));
          if (!plan.ok()) {
            ++refused;
            ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
            ASSERT_THAT(std::string(plan.status().message()),
                        ::testing::HasSubstr("traffic_cfg.burstiness = "));
            continue;
          }
          ++plans;
          ASSERT_EQ(plan->size(), n);
          double previous = 0;
          for (size_t i = 0; i < n; ++i) {
            ASSERT_TRUE(std::isfinite(plan->offset_s[i])) << i;
            ASSERT_TRUE(std::isfinite(plan->interval_s[i])) << i;
            ASSERT_GE(plan->interval_s[i], 0) << i;
            ASSERT_GE(plan->offset_s[i], previous) << i;
            previous = plan->offset_s[i];
          }
          if (!with_ramp) {
            ASSERT_EQ(plan->offset_s.back(), static_cast<double>(n) / 4);
          }
          ASSERT_GT(plan->offset_s.back(), 0);
          if (n > 1) {
            ASSERT_LT(plan->offset_s.front(), plan->offset_s.back());
          }
        }
      }
    }
  }
  // Both outcomes occur: the ordinary βs plan, the underflowing ones refuse.
  EXPECT_GT(plans, 500u);
  EXPECT_GT(refused, 100u);
}

}  // namespace
}  // namespace surge::coordinator
