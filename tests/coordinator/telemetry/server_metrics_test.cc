// Server telemetry's pure parts: the mapping of vLLM and SGLang
// expositions (sums over label sets), the token rates and a counter reset,
// the raw cap, the file's lines and the summary block.
#include "coordinator/telemetry/server_metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "nlohmann/json.hpp"

namespace surge::coordinator {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

// Two engines of one model, as vLLM's data-parallel mode exports them.
std::string VllmText(double prompt_0, double prompt_1, double generation) {
  return "# TYPE vllm:num_requests_running gauge\n"
         "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 5\n"
         "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 3\n"
         "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 10\n"
         "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 2\n"
         "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n"
         "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.75\n"
         "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} " +
         std::to_string(prompt_0) + "\nvllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} " +
         std::to_string(prompt_1) +
         "\nvllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} " +
         std::to_string(generation) +
         "\nvllm:time_to_first_token_seconds_sum{model_name=\"m\"} 1.5\n"
         "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 6\n"
         "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 2\n"
         "process_open_fds 17\n";
}

TEST(ServerMetricsTest, MapsVllmNamesSummedOverLabelSets) {
  const ServerMetricsSample s = SampleOfExposition(VllmText(100, 20, 7), 3 * kSecond);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.at_ns, 3 * kSecond);
  EXPECT_EQ(s.running, 8.0);
  EXPECT_EQ(s.waiting, 12.0);
  EXPECT_EQ(s.kv_cache_usage, 0.75);  // the fullest engine's
  EXPECT_EQ(s.prompt_tokens_total, 120.0);
  EXPECT_EQ(s.generation_tokens_total, 7.0);
  EXPECT_EQ(s.ttft_sum_s, 1.5);
  EXPECT_EQ(s.ttft_count, 6.0);
  EXPECT_FALSE(s.generation_tokens_per_s.has_value());  // no earlier scrape
  // The rest raw, labels in name order, in the text's order.
  ASSERT_EQ(s.raw.size(), 2u);
  EXPECT_EQ(s.raw[0].first, "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"}");
  EXPECT_EQ(s.raw[0].second, 2.0);
  EXPECT_EQ(s.raw[1].first, "process_open_fds");
  EXPECT_EQ(s.raw_dropped, 0u);
}

TEST(ServerMetricsTest, MapsOlderVllmCacheNameAndSglangNames) {
  const ServerMetricsSample old_vllm =
      SampleOfExposition("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n", 0);
  EXPECT_EQ(old_vllm.kv_cache_usage, 0.5);
  EXPECT_FALSE(old_vllm.running.has_value());

  const ServerMetricsSample s = SampleOfExposition(
      "# TYPE sglang:num_running_reqs gauge\n"
      "sglang:num_running_reqs{model_name=\"q\",tp_rank=\"0\"} 4\n"
      "sglang:num_running_reqs{model_name=\"q\",tp_rank=\"1\"} 6\n"
      "sglang:num_queue_reqs{model_name=\"q\"} 31\n"
      "sglang:token_usage{model_name=\"q\"} 0.125\n"
      "sglang:prompt_tokens_total{model_name=\"q\"} 900\n"
      "sglang:generation_tokens_total{model_name=\"q\"} 450\n",
      0);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.running, 10.0);
  EXPECT_EQ(s.waiting, 31.0);
  EXPECT_EQ(s.kv_cache_usage, 0.125);
  EXPECT_EQ(s.prompt_tokens_total, 900.0);
  EXPECT_EQ(s.generation_tokens_total, 450.0);
  EXPECT_TRUE(s.raw.empty());
}

TEST(ServerMetricsTest, RatesBetweenScrapesAndNoneAfterACounterReset) {
  const ServerMetricsSample first = SampleOfExposition(VllmText(100, 20, 7), 2 * kSecond);
  ServerMetricsSample second = SampleOfExposition(VllmText(300, 20, 57), 2 * kSecond + kSecond / 2);
  AddRates(first, second);
  EXPECT_EQ(second.prompt_tokens_per_s, 400.0);  // 200 tokens in 0.5 s
  EXPECT_EQ(second.generation_tokens_per_s, 100.0);
  EXPECT_FALSE(second.ttft_mean_s.has_value());  // no new first token

  // The server restarted: its counters start again from 0.
  ServerMetricsSample third = SampleOfExposition(VllmText(10, 0, 80), 3 * kSecond);
  AddRates(second, third);
  EXPECT_FALSE(third.prompt_tokens_per_s.has_value());
  EXPECT_EQ(third.generation_tokens_per_s, 46.0);  // 23 tokens in 0.5 s

  ServerMetricsSample fourth = SampleOfExposition(
      "vllm:time_to_first_token_seconds_sum 3.5\nvllm:time_to_first_token_seconds_count 10\n",
      4 * kSecond);
  AddRates(third, fourth);
  EXPECT_EQ(fourth.ttft_mean_s, 0.5);                        // 2 s over 4 first tokens
  EXPECT_FALSE(fourth.generation_tokens_per_s.has_value());  // not exported any more
}

TEST(ServerMetricsTest, CapsTheRawSeries) {
  std::string text = "vllm:num_requests_waiting 4\n";
  for (int i = 0; i < 12; ++i) text += "other_series{i=\"" + std::to_string(i) + "\"} 1\n";
  const ServerMetricsSample s = SampleOfExposition(text, 0, 5);
  EXPECT_EQ(s.waiting, 4.0);  // a mapped name is never capped
  ASSERT_EQ(s.raw.size(), 5u);
  EXPECT_EQ(s.raw[4].first, "other_series{i=\"4\"}");
  EXPECT_EQ(s.raw_dropped, 7u);
  const nlohmann::json line = nlohmann::json::parse(ServerMetricsLine(s, 0));
  EXPECT_EQ(line["raw"].size(), 5u);
  EXPECT_EQ(line["raw_dropped"], 7);
}

TEST(ServerMetricsTest, TextThatIsNotPrometheusIsAFailedSample) {
  const ServerMetricsSample s = SampleOfExposition("<html><body>Not Found</body></html>\n", 0);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.error,
            "answered text that is not Prometheus text (1 bad lines, the first is line 1)");
  EXPECT_TRUE(SampleOfExposition("", 0).ok);  // an empty exposition is one
}

TEST(ServerMetricsTest, LinesRelativeToT0AndReadBack) {
  ServerMetricsSample s = SampleOfExposition(VllmText(100, 20, 7), 9 * kSecond + kSecond / 4);
  s.scrape_ms = 3;
  s.generation_tokens_per_s = 12.5;
  const std::string text = ServerMetricsLine(s, 10 * kSecond);
  const nlohmann::json line = nlohmann::json::parse(text);
  EXPECT_EQ(line["t_s"], -0.75);  // before t0
  EXPECT_EQ(line["ok"], true);
  EXPECT_EQ(line["scrape_ms"], 3.0);
  EXPECT_EQ(line["running"], 8.0);
  EXPECT_EQ(line["waiting"], 12.0);
  EXPECT_EQ(line["kv_cache_usage"], 0.75);
  EXPECT_EQ(line["generation_tokens_per_s"], 12.5);
  EXPECT_FALSE(line.contains("prompt_tokens_per_s"));
  EXPECT_FALSE(line.contains("error"));
  EXPECT_EQ(line["raw"]["process_open_fds"], 17.0);
  EXPECT_EQ(text.find('\n'), std::string::npos);

  const absl::StatusOr<ServerMetricsSample> back = ParseServerMetricsLine(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->at_ns, -750'000'000);
  EXPECT_EQ(back->running, 8.0);
  EXPECT_EQ(back->generation_tokens_per_s, 12.5);
  EXPECT_FALSE(back->prompt_tokens_per_s.has_value());
  EXPECT_EQ(back->raw.size(), 2u);

  const ServerMetricsSample failed = FailedSample(11 * kSecond, "answered 404");
  const nlohmann::json bad = nlohmann::json::parse(ServerMetricsLine(failed, 10 * kSecond));
  EXPECT_EQ(bad, nlohmann::json::parse(R"({"t_s":1.0,"ok":false,"scrape_ms":0.0,)"
                                       R"("error":"answered 404"})"));
  EXPECT_FALSE(ParseServerMetricsLine("{\"ok\":true}").ok());
  EXPECT_FALSE(ParseServerMetricsLine("{\"t_s\":1,\"ok\":tr").ok());
}

TEST(ServerMetricsTest, SummaryPeaksMeansAndFailures) {
  ServerMetricsSummary summary({"http://127.0.0.1:9/metrics", 0.5});
  ServerMetricsSample a =
      SampleOfExposition("vllm:num_requests_running 8\nvllm:num_requests_waiting 2\n", 0);
  ServerMetricsSample b = SampleOfExposition(
      "vllm:num_requests_running 6\nvllm:num_requests_waiting 40\n", kSecond / 2);
  a.generation_tokens_per_s = 100;
  b.generation_tokens_per_s = 300;
  summary.Add(a);
  summary.Add(FailedSample(kSecond, "did not answer within 500 ms"));
  summary.Add(b);
  summary.Add(FailedSample(kSecond, "answered 503"));
  const nlohmann::json j = summary.ToJson();
  EXPECT_EQ(j["url"], "http://127.0.0.1:9/metrics");
  EXPECT_EQ(j["interval_s"], 0.5);
  EXPECT_EQ(j["samples"], 4);
  EXPECT_EQ(j["failed"], 2);
  EXPECT_EQ(j["first_error"], "did not answer within 500 ms");
  EXPECT_EQ(j["peak_running"], 8.0);
  EXPECT_EQ(j["peak_waiting"], 40.0);
  EXPECT_EQ(j["mean_running"], 7.0);
  EXPECT_EQ(j["mean_waiting"], 21.0);
  EXPECT_EQ(j["mean_generation_tokens_per_s"], 200.0);
  EXPECT_EQ(j["peak_generation_tokens_per_s"], 300.0);
  EXPECT_FALSE(j.contains("peak_kv_cache_usage"));  // never exported
  EXPECT_EQ(summary.ConsoleLine(),
            "server metrics: 4 samples (2 failed), peak running 8, peak waiting 40, mean "
            "generation 200.0 tokens/s; first failure: did not answer within 500 ms");
}

TEST(ServerMetricsTest, UrlOfTheOption) {
  EXPECT_EQ(*ServerMetricsUrl("auto", "http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/metrics");
  EXPECT_EQ(*ServerMetricsUrl("auto", "https://h"), "https://h:443/metrics");
  EXPECT_EQ(*ServerMetricsUrl("http://m:9/x", "http://a:1"), "http://m:9/x");
  EXPECT_FALSE(ServerMetricsUrl("ftp://m/x", "http://a:1").ok());
  EXPECT_EQ(ServerMetricsFileName("random"), "random_server_metrics.jsonl");
}

}  // namespace
}  // namespace surge::coordinator
