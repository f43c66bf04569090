// The run context on both pages (coordinator/report/run_context.h): every
// field from the configuration used and the plan; no secrets from the URL.
#include "coordinator/report/run_context.h"

#include <limits>
#include <map>
#include <string>

#include "coordinator/plan/traffic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/report/plan_fixtures.h"

namespace surge::coordinator {
namespace {

using ::surge::coordinator::testing::InstantPlan;
using ::surge::coordinator::testing::LinearRampTraffic;
using ::surge::coordinator::testing::MixedPlan;
using ::testing::ElementsAre;

std::map<std::string, std::string> AsMap(const PageContext& c) {
  std::map<std::string, std::string> m;
  for (const ContextItem& item : c) m[item.label] = item.value;
  return m;
}

std::vector<std::string> Labels(const PageContext& c) {
  std::vector<std::string> out;
  for (const ContextItem& item : c) out.push_back(item.label);
  return out;
}

TEST(RedactedUrlTest, DropsUserInfoQueryAndFragment) {
  EXPECT_EQ(RedactedUrl("http://127.0.0.1:8000"), "http://127.0.0.1:8000");
  EXPECT_EQ(RedactedUrl("https://user:sk-secret@api.example.com/v1?api_key=sk-2#x"),
            "https://api.example.com/v1");
  EXPECT_EQ(RedactedUrl("http://h:1/a@b"), "http://h:1/a@b");  // '@' in the path stays
  EXPECT_EQ(RedactedUrl(""), "");
}

surge::v1::RunConfig Config() {
  surge::v1::RunConfig c;
  c.mutable_target()->set_model("Qwen/Qwen2.5-7B");
  c.mutable_target()->set_base_url("http://key:secret@10.0.0.5:8000?token=abc");
  c.mutable_target()->set_endpoint("/v1/completions");
  c.mutable_dataset()->set_dataset_name("synthetic");
  c.mutable_dataset()->set_random_input_len(1024);
  c.mutable_dataset()->set_random_output_len(128);
  c.mutable_dataset()->set_random_len_dist("fixed");
  c.set_seed(42);
  c.set_workers(2);
  c.set_max_concurrency(64);
  c.set_assign(surge::v1::ASSIGN_POLICY_LEAST_LOADED);
  return c;
}

TEST(RunContextTest, EveryFieldFromConfigAndPlan) {
  const ArrivalSchedule plan = MixedPlan(20, 200, 0, 10);  // β = 0.5
  const PageContext c =
      RunContextItems(Config(), plan, "synthetic", "2026-11-30 23:45:12 +0000", "0.1.0");
  EXPECT_THAT(Labels(c),
              ElementsAre("Model", "Server", "Endpoint", "Dataset", "Requests (N)", "Seed",
                          "Request rate", "Burstiness (β)", "Ramp-up", "Workers", "Assignment",
                          "Max concurrency", "Run started", "surge version"));
  auto m = AsMap(c);
  EXPECT_EQ(m["Model"], "Qwen/Qwen2.5-7B");
  EXPECT_EQ(m["Server"], "http://10.0.0.5:8000");  // never the credentials
  EXPECT_EQ(m["Endpoint"], "/v1/completions");
  EXPECT_EQ(m["Dataset"],
            "synthetic (synthetic prompts: input 1024, output 128 tokens, fixed lengths)");
  EXPECT_EQ(m["Requests (N)"], "210");
  EXPECT_EQ(m["Seed"], "42");
  EXPECT_EQ(m["Request rate"], "target 20 RPS (request_rate)");
  EXPECT_EQ(m["Burstiness (β)"], "0.5 (bursty Gamma intervals)");
  EXPECT_EQ(m["Ramp-up"], "none");
  EXPECT_EQ(m["Workers"], "2");
  EXPECT_EQ(m["Assignment"], "least-loaded (fewest outstanding requests)");
  EXPECT_EQ(m["Max concurrency"], "64 in flight");
  EXPECT_EQ(m["Run started"], "2026-11-30 23:45:12 +0000");
  EXPECT_EQ(m["surge version"], "0.1.0");
}

TEST(RunContextTest, RampInstantAndPlanWithoutTarget) {
  ArrivalSchedule ramped = MixedPlan(20, 10, 0, 0);
  ramped.traffic = LinearRampTraffic(10, 50, 0);
  surge::v1::RunConfig plan_only;  // `surge plan` without a target
  auto m = AsMap(RunContextItems(plan_only, ramped, "synthetic", "", "0.1.0"));
  EXPECT_EQ(m["Ramp-up"], "Linear 10 → 50 RPS");
  EXPECT_EQ(m["Request rate"], "target 50 RPS (ramp-up end)");
  EXPECT_EQ(m["Server"], "surge's built-in simulated server (surge run starts it on 127.0.0.1)");
  EXPECT_EQ(m["Workers"], "chosen by surge run (usable CPUs, peak rate)");
  EXPECT_EQ(m["Max concurrency"], "no cap");
  EXPECT_EQ(m["Assignment"], "round-robin (request i to worker i mod W)");
  EXPECT_EQ(m["Run started"], "unknown");
  EXPECT_EQ(m["Burstiness (β)"], "0 (fixed intervals)");
  m = AsMap(RunContextItems(Config(), InstantPlan(3), "synthetic", "", "0.1.0"));
  EXPECT_EQ(m["Request rate"],
            "instant mode: target rate 0 RPS < 0.1 RPS, every request planned at 0 (R-INST)");
  EXPECT_EQ(m["Requests (N)"], "3");
  // request_rate inf says so, with no bogus "< 0.1" rate.
  ArrivalSchedule all_at_once = InstantPlan(3);
  all_at_once.traffic.request_rate_rps = all_at_once.traffic.target_rate_rps =
      std::numeric_limits<double>::infinity();
  all_at_once.traffic.description = DescribeSeedTraffic(all_at_once.traffic, 3);
  m = AsMap(RunContextItems(Config(), all_at_once, "synthetic", "", "0.1.0"));
  EXPECT_EQ(m["Request rate"],
            "instant mode: request_rate inf (all at once), every request planned at 0 (R-INST)");
}

}  // namespace
}  // namespace surge::coordinator
