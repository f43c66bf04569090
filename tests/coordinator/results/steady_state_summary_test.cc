// The summary with warm-ups (in no count and no metric) and with a
// steady-state window (latency and throughput metrics over the requests
// planned inside it only); the pages' shaded bands. Exact values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "coordinator/report/shaded_bands.h"
#include "coordinator/results/run_results.h"
#include "coordinator/results/summary.h"

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kMs = 1000 * 1000;

// OK, planned at `planned_ms`, sent on time, TTFT `ttft_ms`, E2EL 2 x TTFT,
// 3 output tokens.
surge::v1::RequestRecord Ok(uint64_t index, int64_t planned_ms, int64_t ttft_ms) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_status(surge::v1::OK);
  r.set_sent(true);
  r.set_planned_ns(planned_ms * kMs);
  r.set_sent_ns(planned_ms * kMs);
  r.set_ttft_ns(ttft_ms * kMs);
  r.set_e2el_ns(2 * ttft_ms * kMs);
  r.set_input_tokens(10);
  r.set_output_tokens(3);
  return r;
}

TEST(WarmupSummaryTest, WarmupsAreInNoCountAndNoMetric) {
  SummaryAccumulator acc;
  surge::v1::RequestRecord warm = Ok(2, -500, 900);
  warm.set_warmup(true);
  acc.Add(warm);
  acc.Add(Ok(0, 0, 100));
  acc.Add(Ok(1, 1000, 300));
  const RunSummary s = acc.Finish();
  EXPECT_EQ(s.total, 2u);
  EXPECT_EQ(s.succeeded, 2u);
  EXPECT_EQ(s.sent, 2u);
  EXPECT_EQ(s.warmups, 1u);
  EXPECT_EQ(s.ttft_s.count, 2u);
  EXPECT_DOUBLE_EQ(s.ttft_s.max, 0.3);
  EXPECT_DOUBLE_EQ(s.lateness_s.min, 0);
  EXPECT_DOUBLE_EQ(s.duration_s, 1.6);  // the last end: 1 s + 0.6 s
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_EQ(j["warmups"]["requests"], 1);
  EXPECT_EQ(j["common"]["Warm-up Requests"], 1);
  EXPECT_EQ(j["requests"]["total"], 2);
}

TEST(WarmupSummaryTest, NoWarmupsNoNewKeys) {
  SummaryAccumulator acc;
  acc.Add(Ok(0, 0, 100));
  const nlohmann::json j = SummaryToJson(acc.Finish(), nlohmann::json::object());
  EXPECT_FALSE(j.contains("warmups"));
  EXPECT_FALSE(j.contains("steady_state"));
  EXPECT_FALSE(j["common"].contains("Warm-up Requests"));
  EXPECT_FALSE(j["common"].contains("Steady State Requests"));
}

TEST(SteadyStateSummaryTest, LatencyAndThroughputOverTheWindowOnly) {
  SteadyStateWindow w;
  w.spec = "1:3";
  w.start_s = 1;
  w.end_s = 3;
  w.requests = 2;
  SummaryAccumulator acc;
  acc.SetSteadyState(w);
  acc.Add(Ok(0, 0, 1000));     // before the window
  acc.Add(Ok(1, 1000, 100));   // inside
  acc.Add(Ok(2, 2000, 300));   // inside
  acc.Add(Ok(3, 3000, 2000));  // at B: outside
  const RunSummary s = acc.Finish();
  EXPECT_EQ(s.total, 4u);
  EXPECT_EQ(s.succeeded, 4u);
  EXPECT_EQ(s.sent, 4u);
  EXPECT_EQ(s.steady_state_succeeded, 2u);
  EXPECT_EQ(s.ttft_s.count, 2u);
  EXPECT_DOUBLE_EQ(s.ttft_s.min, 0.1);
  EXPECT_DOUBLE_EQ(s.ttft_s.max, 0.3);
  EXPECT_EQ(s.e2el_s.count, 2u);
  EXPECT_EQ(s.tpot_s.count, 2u);
  EXPECT_EQ(s.output_tokens, 6u);
  // Per second of the window (2 s), not of the run (7 s).
  EXPECT_DOUBLE_EQ(s.request_throughput_rps, 1.0);
  EXPECT_DOUBLE_EQ(s.output_token_throughput, 3.0);
  EXPECT_DOUBLE_EQ(s.duration_s, 7.0);
  EXPECT_EQ(s.lateness_s.count, 4u);
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_EQ(j["steady_state"]["window"], "1:3");
  EXPECT_EQ(j["steady_state"]["planned_requests"], 2);
  EXPECT_EQ(j["steady_state"]["succeeded"], 2);
  EXPECT_EQ(j["metrics"]["TTFT"]["N"], 2);
  EXPECT_EQ(j["common"]["Steady State Requests"], 2);
  EXPECT_THAT(FormatSummaryTable(s), HasSubstr("Steady state 1:3: [1.000, 3.000) s, 2 planned"));
}

TEST(ActualPageInputsTest, WarmupsAreABandNotSends) {
  ActualPageInputs page(2);
  surge::v1::RequestRecord warm = Ok(2, -500, 100);
  warm.set_warmup(true);
  page.Add(warm);
  surge::v1::RequestRecord warm2 = Ok(3, -250, 100);
  warm2.set_warmup(true);
  page.Add(warm2);
  page.Add(Ok(0, 0, 100));
  EXPECT_EQ(page.sends().size(), 1u);
  EXPECT_EQ(page.warmup_sent(), 2u);
  EXPECT_DOUBLE_EQ(page.warmup_first_s(), -0.5);
  EXPECT_DOUBLE_EQ(page.warmup_last_s(), -0.25);
  const std::vector<ShadedBand> bands =
      WarmupBands(page.warmup_sent(), page.warmup_first_s(), page.warmup_last_s());
  ASSERT_EQ(bands.size(), 1u);
  EXPECT_DOUBLE_EQ(bands[0].x0_s, -0.5);
  EXPECT_DOUBLE_EQ(bands[0].x1_s, 0);
  EXPECT_EQ(bands[0].label, "warm-up (2)");
  EXPECT_TRUE(WarmupBands(0, 0, 0).empty());
}

TEST(ShadedBandsTest, SteadyStateBand) {
  SteadyStateWindow w;
  w.spec = "0.2:0.8";
  w.start_s = 2;
  w.end_s = 8;
  w.requests = 60;
  const ShadedBand b = SteadyStateBand(w);
  EXPECT_EQ(b.x0_s, 2);
  EXPECT_EQ(b.x1_s, 8);
  EXPECT_EQ(b.label, "steady state 0.2:0.8 (60 requests)");
}

}  // namespace
}  // namespace surge::coordinator
