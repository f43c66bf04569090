// Traffic classes (docs/TRAFFIC.md "Traffic classes"): the `classes:` list
// read and validated (each bad class named by its field), each class's
// requests in the merged plan exactly its single-class plan with its derived
// seed (so its intended rate and intervals pass the same checks: Gamma KS
// and CV, the ramp's count), the merged offsets the time-merge of the
// classes', ties in class order, and determinism. Pure: no clock, no I/O
// but temp config files.
#include "coordinator/plan/traffic_classes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/math/distributions/gamma.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/config/run_config.h"
#include "coordinator/plan/arrival_process.h"
#include "tests/testing/ks_statistic.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// The two classes of docs/TRAFFIC.md's example: chat at 20 RPS with
// Gamma(0.5) intervals for 1200 requests (60 s), batch on a 1 → 10 RPS
// linear time ramp over 60 s with fixed intervals.
constexpr char kTwoClasses[] = R"(seed: 7
classes:
  - name: chat
    request_rate: 20
    num_prompts: 1200
    model: base
    traffic_cfg: {burstiness: 0.5}
  - name: batch
    model: lora-a
    headers: ["X-Tenant: batch"]
    random_input_len: 64
    traffic_cfg:
      stages:
        - {duration_s: 60, ramp_up_strategy: linear, ramp_up_start_rps: 1, ramp_up_end_rps: 10}
)";

absl::Status LoadAndValidate(const std::string& yaml, surge::v1::RunConfig* config) {
  static int n = 0;
  const fs::path path = fs::path(::testing::TempDir()) / ("classes_" + std::to_string(getpid()) +
                                                          "_" + std::to_string(n++) + ".yaml");
  std::ofstream(path) << yaml;
  *config = DefaultRunConfig();
  if (absl::Status s = LoadYamlConfig(path.string(), config); !s.ok()) return s;
  return ValidateRunConfig(*config);
}

surge::v1::RunConfig TwoClasses() {
  surge::v1::RunConfig config;
  const absl::Status s = LoadAndValidate(kTwoClasses, &config);
  EXPECT_TRUE(s.ok()) << s;
  return config;
}

// The plan class `index` makes as a run of its own.
ArrivalSchedule SingleClassPlan(const surge::v1::RunConfig& config, int index) {
  const surge::v1::RunConfig one = ClassRunConfig(config, index);
  auto process = MakeArrivalProcess(one);
  EXPECT_TRUE(process.ok()) << process.status();
  auto plan = (*process)->Generate(one.seed());
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *std::move(plan);
}

using ::surge::testing::kKsCritical;
using ::surge::testing::KsStatistic;

// ---- Configuration --------------------------------------------------------

TEST(TrafficClassesConfigTest, ClassesAreReadWithTheirOwnKeys) {
  const surge::v1::RunConfig config = TwoClasses();
  ASSERT_EQ(config.classes_size(), 2);
  const surge::v1::RunConfig chat = ClassRunConfig(config, 0);
  EXPECT_EQ(chat.request_rate(), 20);
  EXPECT_EQ(chat.num_prompts(), 1200u);
  EXPECT_EQ(chat.traffic_cfg().burstiness(), 0.5);
  EXPECT_EQ(chat.target().model(), "base");
  EXPECT_EQ(chat.dataset().random_input_len(), config.dataset().random_input_len());
  const surge::v1::RunConfig batch = ClassRunConfig(config, 1);
  EXPECT_FALSE(batch.has_request_rate());
  EXPECT_EQ(batch.traffic_cfg().stages_size(), 1);
  EXPECT_EQ(batch.target().model(), "lora-a");
  EXPECT_EQ(batch.dataset().random_input_len(), 64u);
  ASSERT_EQ(batch.target().headers_size(), 1);
  EXPECT_EQ(batch.target().headers(0), "X-Tenant: batch");
  EXPECT_EQ(batch.num_prompts(), config.num_prompts());  // the top level's: the stages' cap
  EXPECT_EQ(batch.classes_size(), 0);
}

TEST(TrafficClassesConfigTest, EachBadClassIsNamedByItsField) {
  surge::v1::RunConfig config;
  absl::Status s = LoadAndValidate(R"(classes:
  - {name: chat, request_rate: 5}
  - {name: batch}
  - {name: chat, request_rate: 2}
  - {name: "bad name", request_rate: 1}
  - {name: big, request_rate: 3, traffic_cfg: {burstiness: -1}}
)",
                                   &config);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("classes[1].request_rate = (not set): is required"));
  EXPECT_THAT(s.message(), HasSubstr("classes[2].name = \"chat\": is used twice (also "
                                     "classes[0].name)"));
  EXPECT_THAT(s.message(), HasSubstr("classes[3].name = \"bad name\": is required: a name of "
                                     "letters, digits"));
  EXPECT_THAT(s.message(), HasSubstr("classes[4].traffic_cfg.burstiness = -1"));
  // The valid classes are not complained about.
  EXPECT_THAT(s.message(), Not(HasSubstr("  classes[0].")));
}

TEST(TrafficClassesConfigTest, UnknownKeyInAClassIsNamed) {
  surge::v1::RunConfig config;
  const absl::Status s = LoadAndValidate(
      "classes:\n  - {name: a, request_rate: 5, traffic_cfg: {burstyness: 1}}\n", &config);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("classes[0].traffic_cfg.burstyness = \"1\": unknown key; did "
                                     "you mean `burstiness`?"));
}

TEST(TrafficClassesConfigTest, ATopLevelProblemIsNotRepeatedPerClass) {
  surge::v1::RunConfig config;
  const absl::Status s = LoadAndValidate(
      "endpoint: nowhere\nclasses:\n  - {name: a, request_rate: 5}\n  - {name: b, "
      "request_rate: 1}\n",
      &config);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("  endpoint = \"nowhere\""));
  EXPECT_THAT(s.message(), Not(HasSubstr("classes[0].endpoint")));
  EXPECT_THAT(s.message(), Not(HasSubstr("classes[1].endpoint")));
}

// ---- Seeds ------------------------------------------------------------------

TEST(TrafficClassesSeedTest, SeedsAreDerivedFromRunSeedAndName) {
  EXPECT_EQ(ClassSeed(7, "chat"), ClassSeed(7, "chat"));
  EXPECT_NE(ClassSeed(7, "chat"), ClassSeed(7, "batch"));
  EXPECT_NE(ClassSeed(7, "chat"), ClassSeed(8, "chat"));
  const surge::v1::RunConfig config = TwoClasses();
  EXPECT_EQ(ClassRunConfig(config, 0).seed(), ClassSeed(7, "chat"));
  EXPECT_EQ(ClassRunConfig(config, 1).seed(), ClassSeed(7, "batch"));
}

// ---- The merged plan ----------------------------------------------------------

TEST(TrafficClassesPlanTest, EachClassIsItsSingleClassPlanExactly) {
  const surge::v1::RunConfig config = TwoClasses();
  auto merged = BuildClassesPlan(config);
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_EQ(merged->classes.size(), 2u);
  for (int c = 0; c < 2; ++c) {
    const ArrivalSchedule alone = SingleClassPlan(config, c);
    const ArrivalSchedule sub = ClassSubPlan(*merged, c);
    SCOPED_TRACE(merged->classes[c].name);
    EXPECT_EQ(merged->classes[c].seed, ClassRunConfig(config, c).seed());
    EXPECT_EQ(merged->classes[c].requests, alone.size());
    EXPECT_EQ(sub.offset_s, alone.offset_s);
    EXPECT_EQ(sub.interval_s, alone.interval_s);
    EXPECT_EQ(sub.rate_rps, alone.rate_rps);
    EXPECT_EQ(sub.anomaly, alone.anomaly);
  }
  EXPECT_EQ(merged->size(), merged->classes[0].requests + merged->classes[1].requests);
}

TEST(TrafficClassesPlanTest, ChatClassPassesTheGammaChecks) {
  const ArrivalSchedule chat = ClassSubPlan(*BuildClassesPlan(TwoClasses()), 0);
  ASSERT_EQ(chat.size(), 1200u);
  // Intended rate (N − 1)/span within 5σ of 20 RPS: the span of 1199 Gamma
  // gaps of mean 1/20 and CV 1/√0.5 has relative σ √2/√1199.
  const double rate = 1199.0 / (chat.offset_s.back() - chat.offset_s.front());
  EXPECT_NEAR(rate, 20, 20 * 5 * std::sqrt(2.0 / 1199));
  // Gaps × λ against Gamma(0.5, 2): KS, and their CV near 1/√0.5.
  std::vector<double> gaps;
  for (size_t i = 1; i < chat.size(); ++i) gaps.push_back(chat.interval_s[i] * chat.rate_rps[i]);
  const boost::math::gamma_distribution<double> gamma(0.5, 2.0);
  const double d = KsStatistic(gaps, [&](double x) { return boost::math::cdf(gamma, x); });
  EXPECT_LT(d * std::sqrt(gaps.size()), kKsCritical) << "D_n = " << d;
  double mean = 0, sq = 0;
  for (double g : gaps) mean += g;
  mean /= gaps.size();
  for (double g : gaps) sq += (g - mean) * (g - mean);
  const double cv = std::sqrt(sq / (gaps.size() - 1)) / mean;
  EXPECT_NEAR(cv, std::sqrt(2.0), 0.15);
}

TEST(TrafficClassesPlanTest, BatchClassFollowsItsRamp) {
  const ArrivalSchedule batch = ClassSubPlan(*BuildClassesPlan(TwoClasses()), 1);
  // Fixed intervals on 1 → 10 RPS over 60 s: ∫λ = 330 requests (± 1), and
  // every 10 s window holds ∫λ over it ± 1.
  EXPECT_NEAR(static_cast<double>(batch.size()), 330, 1);
  for (double from = 0; from < 60; from += 10) {
    const double expected = (1 + 0.15 * from) * 10 + 0.075 * 100;
    const auto n = std::count_if(batch.offset_s.begin(), batch.offset_s.end(),
                                 [&](double t) { return t > from && t <= from + 10; });
    EXPECT_NEAR(static_cast<double>(n), expected, 1) << "window from " << from << " s";
  }
}

TEST(TrafficClassesPlanTest, MergedOffsetsAreTheTimeMergeOfTheClasses) {
  const surge::v1::RunConfig config = TwoClasses();
  const ArrivalSchedule merged = *BuildClassesPlan(config);
  const ArrivalSchedule a = SingleClassPlan(config, 0);
  const ArrivalSchedule b = SingleClassPlan(config, 1);
  std::vector<double> expected;
  std::merge(a.offset_s.begin(), a.offset_s.end(), b.offset_s.begin(), b.offset_s.end(),
             std::back_inserter(expected));
  EXPECT_EQ(merged.offset_s, expected);
  // Each request's class and index in its class point back at its offset.
  for (size_t i = 0; i < merged.size(); ++i) {
    const ArrivalSchedule& own = merged.class_index[i] == 0 ? a : b;
    ASSERT_EQ(merged.offset_s[i], own.offset_s[merged.class_request[i]]) << i;
  }
}

TEST(TrafficClassesPlanTest, TiesGoToTheClassListedFirst) {
  ArrivalSchedule one, two;
  for (double t : {0.0, 1.0, 2.0}) {
    one.offset_s.push_back(t);
    two.offset_s.push_back(t);
  }
  for (ArrivalSchedule* p : {&one, &two}) {
    p->rate_rps.assign(3, 1);
    p->interval_s = {0, 1, 1};
    p->anomaly.assign(3, Anomaly::kNormal);
  }
  auto merged = MergeClassPlans({two, one}, {"second", "first"}, {2, 1}, 0);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->class_index, (std::vector<uint16_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(merged->class_request, (std::vector<uint64_t>{0, 0, 1, 1, 2, 2}));
}

TEST(TrafficClassesPlanTest, TheSameConfigGivesTheSamePlan) {
  const ArrivalSchedule first = *BuildClassesPlan(TwoClasses());
  const ArrivalSchedule second = *BuildClassesPlan(TwoClasses());
  EXPECT_EQ(first.offset_s, second.offset_s);
  EXPECT_EQ(first.class_index, second.class_index);
  EXPECT_EQ(first.traffic.description.log_line, second.traffic.description.log_line);
  EXPECT_THAT(first.traffic.description.log_line, HasSubstr("chat 1200 requests"));
}

}  // namespace
}  // namespace surge::coordinator
