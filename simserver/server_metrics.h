// The built-in server's own metrics at GET /metrics, in the Prometheus text
// format 0.0.4 under vLLM's names (docs/DESIGN.md "Metrics of the simulated
// server"). Counting is thread-safe; rendering is pure.
#ifndef SURGE_SIMSERVER_SERVER_METRICS_H_
#define SURGE_SIMSERVER_SERVER_METRICS_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/stats.h"

namespace surge::simserver {

// vLLM's bucket upper bounds of vllm:time_to_first_token_seconds, seconds.
const std::vector<double>& TtftBucketsS();

// What one exposition shows.
struct ServerMetricsSnapshot {
  // Requests in the engine's batch, and in its waiting queue.
  uint64_t running = 0;
  uint64_t waiting = 0;
  // In [0, 1] (1 = full); see docs for where it comes from.
  double kv_cache_usage = 0;
  // Prompt tokens of the requests whose first token came, and tokens
  // generated so far.
  uint64_t prompt_tokens = 0;
  uint64_t generation_tokens = 0;
  // TTFT histogram: cumulative counts per TtftBucketsS() bound, count, sum.
  std::vector<uint64_t> ttft_cumulative;
  uint64_t ttft_count = 0;
  double ttft_sum_s = 0;
};

// The counters and the TTFT histogram (the gauges are read where they
// live). Thread-safe.
class ServerMetrics {
 public:
  ServerMetrics();
  // A request's first token: its prompt tokens and its time to first token.
  void FirstToken(uint64_t prompt_tokens, double ttft_s);
  // `n` more tokens generated.
  void Generated(uint64_t n);
  // The counters and the histogram; the gauges are left at 0.
  ServerMetricsSnapshot Snapshot() const;

 private:
  mutable std::mutex mu_;
  uint64_t prompt_tokens_ = 0;      // guarded by mu_
  uint64_t generation_tokens_ = 0;  // guarded by mu_
  BucketCounts ttft_;               // guarded by mu_
};

// The exposition of `s`, every sample labelled model_name="<model>" (with
// \, " and newlines escaped): for each metric "# HELP" and "# TYPE" lines,
// then its samples; the histogram has _bucket{...,le="..."} (cumulative,
// ending with le="+Inf"), _sum and _count. Pure.
std::string PrometheusText(const std::string& model, const ServerMetricsSnapshot& s);

// The Content-Type of PrometheusText.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace surge::simserver

#endif  // SURGE_SIMSERVER_SERVER_METRICS_H_
