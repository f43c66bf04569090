// The built-in server's /metrics text: vLLM's names and buckets, HELP and
// TYPE lines, the model_name label, counters and the TTFT histogram.
#include "simserver/server_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace surge::simserver {
namespace {

using ::testing::HasSubstr;

TEST(SimServerMetricsTest, TtftBucketsAreVllms) {
  EXPECT_EQ(TtftBucketsS(),
            (std::vector<double>{0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                 0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                 20.0,  40.0,  80.0, 160.0, 640.0, 2560.0}));
}

TEST(SimServerMetricsTest, CountsTokensAndFirstTokens) {
  ServerMetrics m;
  m.FirstToken(100, 0.015);
  m.FirstToken(50, 3.0);
  m.Generated(7);
  m.Generated(5);
  const ServerMetricsSnapshot s = m.Snapshot();
  EXPECT_EQ(s.prompt_tokens, 150u);
  EXPECT_EQ(s.generation_tokens, 12u);
  EXPECT_EQ(s.ttft_count, 2u);
  EXPECT_DOUBLE_EQ(s.ttft_sum_s, 3.015);
  ASSERT_EQ(s.ttft_cumulative.size(), TtftBucketsS().size());
  EXPECT_EQ(s.ttft_cumulative[1], 0u);   // le 0.005
  EXPECT_EQ(s.ttft_cumulative[3], 1u);   // le 0.02
  EXPECT_EQ(s.ttft_cumulative[11], 1u);  // le 1
  EXPECT_EQ(s.ttft_cumulative[13], 2u);  // le 5
}

TEST(SimServerMetricsTest, ExpositionText) {
  ServerMetricsSnapshot s;
  s.running = 2;
  s.waiting = 3;
  s.kv_cache_usage = 0.25;
  s.prompt_tokens = 40;
  s.generation_tokens = 17;
  s.ttft_cumulative.assign(TtftBucketsS().size(), 1);
  s.ttft_cumulative[0] = 0;
  s.ttft_count = 1;
  s.ttft_sum_s = 0.0035;
  const std::string text = PrometheusText("m\"1", s);
  const std::string l = "{model_name=\"m\\\"1\"}";
  EXPECT_THAT(text, HasSubstr("# HELP vllm:num_requests_running "));
  EXPECT_THAT(text, HasSubstr("# TYPE vllm:num_requests_running gauge\n"
                              "vllm:num_requests_running" +
                              l + " 2\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE vllm:num_requests_waiting gauge\n"
                              "vllm:num_requests_waiting" +
                              l + " 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE vllm:kv_cache_usage_perc gauge\n"
                              "vllm:kv_cache_usage_perc" +
                              l + " 0.25\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE vllm:prompt_tokens_total counter\n"
                              "vllm:prompt_tokens_total" +
                              l + " 40\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE vllm:generation_tokens_total counter\n"
                              "vllm:generation_tokens_total" +
                              l + " 17\n"));
  EXPECT_THAT(
      text,
      HasSubstr("# TYPE vllm:time_to_first_token_seconds histogram\n"
                "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"1\",le=\"0.001\"} 0\n"
                "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"1\",le=\"0.005\"} 1\n"));
  EXPECT_THAT(
      text,
      HasSubstr("vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"1\",le=\"2560\"} 1\n"
                "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"1\",le=\"+Inf\"} 1\n"
                "vllm:time_to_first_token_seconds_sum" +
                l +
                " 0.0035\n"
                "vllm:time_to_first_token_seconds_count" +
                l + " 1\n"));
  // Every metric has its HELP and TYPE lines: 6 of each.
  size_t helps = 0, types = 0;
  for (size_t at = 0; (at = text.find("# HELP ", at)) != std::string::npos; ++at) ++helps;
  for (size_t at = 0; (at = text.find("# TYPE ", at)) != std::string::npos; ++at) ++types;
  EXPECT_EQ(helps, 6u);
  EXPECT_EQ(types, 6u);
}

}  // namespace
}  // namespace surge::simserver
