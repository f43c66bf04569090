// The Prometheus text parser: the built-in server's real exposition, a
// vLLM-style and an SGLang-style sample written by hand, and bad lines.
#include "coordinator/telemetry/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "simserver/server_metrics.h"

namespace surge::coordinator {
namespace {

TEST(PrometheusTextTest, ReadsTheBuiltInServersOwnExposition) {
  simserver::ServerMetrics metrics;
  metrics.FirstToken(100, 0.03);
  metrics.FirstToken(50, 0.3);
  metrics.Generated(7);
  simserver::ServerMetricsSnapshot s = metrics.Snapshot();
  s.running = 3;
  s.waiting = 12;
  s.kv_cache_usage = 0.25;
  const PrometheusText text = ParsePrometheusText(simserver::PrometheusText("m\"x", s));

  EXPECT_EQ(text.bad_lines, 0);
  EXPECT_EQ(SumOf(text, "vllm:num_requests_running"), 3.0);
  EXPECT_EQ(SumOf(text, "vllm:num_requests_waiting"), 12.0);
  EXPECT_EQ(SumOf(text, "vllm:kv_cache_usage_perc"), 0.25);
  EXPECT_EQ(SumOf(text, "vllm:prompt_tokens_total"), 150.0);
  EXPECT_EQ(SumOf(text, "vllm:generation_tokens_total"), 7.0);
  EXPECT_EQ(SumOf(text, "vllm:time_to_first_token_seconds_count"), 2.0);
  EXPECT_NEAR(*SumOf(text, "vllm:time_to_first_token_seconds_sum"), 0.33, 1e-12);
  EXPECT_EQ(text.types.at("vllm:time_to_first_token_seconds"), "histogram");
  EXPECT_EQ(text.types.at("vllm:prompt_tokens_total"), "counter");

  int buckets = 0;
  for (const PrometheusSample& sample : text.samples) {
    EXPECT_EQ(sample.labels.at("model_name"), "m\"x");  // unescaped
    if (sample.name != "vllm:time_to_first_token_seconds_bucket") continue;
    ++buckets;
    const std::string& le = sample.labels.at("le");
    if (le == "0.04") {
      EXPECT_EQ(sample.value, 1.0);  // 0.03 s only
    }
    if (le == "+Inf") {
      EXPECT_EQ(sample.value, 2.0);
    }
  }
  EXPECT_EQ(buckets, static_cast<int>(simserver::TtftBucketsS().size()) + 1);
}

TEST(PrometheusTextTest, ReadsAVllmExposition) {
  const PrometheusText text = ParsePrometheusText(
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 17.0\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 4.0\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} "
      "0.4375\n"
      "# TYPE vllm:prompt_tokens_total counter\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 1.2e+06\n"
      "vllm:generation_tokens_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} "
      "98304.0\n"
      "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\","
      "model_name=\"meta-llama/Llama-3.1-8B\"} 532.0\n"
      "process_start_time_seconds 1.7e+09 1700000000000\n");
  EXPECT_EQ(text.bad_lines, 0);
  ASSERT_EQ(text.samples.size(), 7u);
  EXPECT_EQ(text.samples[0].labels.at("engine"), "0");
  EXPECT_EQ(SumOf(text, "vllm:num_requests_running"), 17.0);
  EXPECT_EQ(SumOf(text, "vllm:kv_cache_usage_perc"), 0.4375);
  EXPECT_EQ(SumOf(text, "vllm:prompt_tokens_total"), 1.2e6);
  EXPECT_EQ(SumOf(text, "process_start_time_seconds"), 1.7e9);
  EXPECT_EQ(text.samples[5].labels.at("le"), "+Inf");
  EXPECT_EQ(text.samples[5].value, 532.0);
  EXPECT_FALSE(SumOf(text, "vllm:num_preemptions_total").has_value());
}

TEST(PrometheusTextTest, ReadsAnSglangExpositionAndSumsOverLabelSets) {
  const PrometheusText text = ParsePrometheusText(
      "# HELP sglang:num_running_reqs The number of running requests.\n"
      "# TYPE sglang:num_running_reqs gauge\n"
      "sglang:num_running_reqs{model_name=\"qwen\",tp_rank=\"0\"} 8.0\n"
      "sglang:num_running_reqs{model_name=\"qwen\",tp_rank=\"1\"} 6.0\n"
      "sglang:num_queue_reqs{model_name=\"qwen\",} 21.0\n"
      "sglang:token_usage{model_name=\"qwen\"} 0.91\n"
      "sglang:prompt_tokens_total{model_name=\"qwen\"} 40960.0\n"
      "sglang:generation_tokens_total{model_name=\"qwen\"} 5120.0\n");
  EXPECT_EQ(text.bad_lines, 0);
  EXPECT_EQ(SumOf(text, "sglang:num_running_reqs"), 14.0);
  EXPECT_EQ(SumOf(text, "sglang:num_queue_reqs"), 21.0);  // trailing comma allowed
  EXPECT_EQ(SumOf(text, "sglang:token_usage"), 0.91);
  EXPECT_EQ(SumOf(text, "sglang:generation_tokens_total"), 5120.0);
}

TEST(PrometheusTextTest, CountsBadLinesAndKeepsTheGoodOnes) {
  const PrometheusText text = ParsePrometheusText(
      "good 1\n"
      "inf_gauge +Inf\n"
      "{no_name=\"x\"} 2\n"
      "unterminated{a=\"x} 3\n"
      "novalue{a=\"x\"}\n"
      "notanumber abc\n"
      "too many fields 4\n"
      "\n"
      "# a comment\n"
      "also_good{a=\"1\"} -2.5\n");
  EXPECT_EQ(text.bad_lines, 5);
  EXPECT_EQ(text.first_bad_line, 3);
  ASSERT_EQ(text.samples.size(), 3u);
  EXPECT_TRUE(std::isinf(text.samples[1].value));
  EXPECT_EQ(text.samples[2].name, "also_good");
  EXPECT_EQ(text.samples[2].value, -2.5);
}

}  // namespace
}  // namespace surge::coordinator
