// Server telemetry (docs/METRICS.md "Server telemetry"): what one scrape of
// a server's Prometheus /metrics becomes (the vLLM and SGLang names mapped
// to surge's fields, the rest kept raw under a cap), the token rates between
// two scrapes, the lines of {dataset}_server_metrics.jsonl and the summary's
// `server_metrics` block. Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_TELEMETRY_SERVER_METRICS_H_
#define SURGE_COORDINATOR_TELEMETRY_SERVER_METRICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/telemetry/prometheus_text.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

// The file's name in the run folder: "{dataset}_server_metrics.jsonl".
std::string ServerMetricsFileName(const std::string& dataset);

// The URL the server_metrics option names: "auto" = base_url's scheme,
// host and port with the path /metrics; else the option itself. Errors:
// INVALID_ARGUMENT when the URL (or, for auto, base_url) does not parse.
absl::StatusOr<std::string> ServerMetricsUrl(const std::string& option,
                                             const std::string& base_url);

// Series kept raw per sample at most (the rest are counted in
// raw_dropped): a huge exposition cannot make the file or the memory grow
// without bound.
inline constexpr size_t kRawSeriesCap = 500;

// One scrape attempt.
struct ServerMetricsSample {
  // When the GET was sent, ns on a clock; written as t_s = (at_ns − t0_ns)
  // / 1e9 (read back with t0 = 0).
  int64_t at_ns = 0;
  bool ok = false;
  // Why it failed (when !ok), e.g. "answered 404".
  std::string error;
  // How long the GET took, ms.
  double scrape_ms = 0;
  // The mapped fields; unset when the server does not export them.
  std::optional<double> running;                  // requests in the batch
  std::optional<double> waiting;                  // requests queued
  std::optional<double> kv_cache_usage;           // 0..1, the fullest engine's
  std::optional<double> prompt_tokens_total;      // counter
  std::optional<double> generation_tokens_total;  // counter
  std::optional<double> ttft_sum_s;               // TTFT histogram's sum, s
  std::optional<double> ttft_count;               // and count
  // Between the previous successful scrape and this one (AddRates); unset
  // for the first, after a counter reset, or without the counter.
  std::optional<double> prompt_tokens_per_s;
  std::optional<double> generation_tokens_per_s;
  std::optional<double> ttft_mean_s;  // mean TTFT of the first tokens in between
  // Every other series, "name{label="value",...}" → value, in the text's
  // order, at most kRawSeriesCap; raw_dropped counts the ones left out.
  std::vector<std::pair<std::string, double>> raw;
  uint64_t raw_dropped = 0;
};

// The sample of a successful GET's body: the mapped names summed over
// their label sets (the cache usage: the largest), the others raw up to
// `raw_cap`. Not ok ("answered text that is not Prometheus text ...") when
// the body has no valid sample but bad lines.
ServerMetricsSample SampleOfExposition(std::string_view body, int64_t at_ns,
                                       size_t raw_cap = kRawSeriesCap);

// A failed attempt.
ServerMetricsSample FailedSample(int64_t at_ns, std::string error);

// Sets `current`'s rates from the previous successful sample: Δcounter /
// Δt, none when a counter went down (a server restart resets it).
void AddRates(const ServerMetricsSample& previous, ServerMetricsSample& current);

// The file's line for `s` (no newline), t_s relative to t0_ns.
std::string ServerMetricsLine(const ServerMetricsSample& s, int64_t t0_ns);
// A line read back (at_ns = t_s · 1e9). Errors: INVALID_ARGUMENT for a line
// that is not such a JSON object.
absl::StatusOr<ServerMetricsSample> ParseServerMetricsLine(std::string_view line);

// Where the run scraped and how often.
struct ServerMetricsSource {
  std::string url;
  double interval_s = 1;
};

// The summary's `server_metrics` block, from the samples in time order.
class ServerMetricsSummary {
 public:
  explicit ServerMetricsSummary(ServerMetricsSource source) : source_(std::move(source)) {}
  void Add(const ServerMetricsSample& s);
  // {url, interval_s, samples, failed, first_error, peak_running,
  // peak_waiting, peak_kv_cache_usage, mean_running, mean_waiting,
  // mean_prompt_tokens_per_s, mean_generation_tokens_per_s,
  // peak_generation_tokens_per_s}; a peak or mean is absent when no sample
  // had it. Means are over the samples (a rate's: over the intervals that
  // have one).
  nlohmann::json ToJson() const;
  // "server metrics: 31 samples (0 failed), peak running 8, peak waiting
  // 212, ...".
  std::string ConsoleLine() const;
  uint64_t samples() const { return samples_; }
  uint64_t failed() const { return failed_; }

 private:
  // Max and mean of one field over the samples that had it.
  struct Extent {
    std::optional<double> peak;
    double sum = 0;
    uint64_t count = 0;
    void Add(const std::optional<double>& v);
  };
  ServerMetricsSource source_;
  uint64_t samples_ = 0;
  uint64_t failed_ = 0;
  std::string first_error_;
  Extent running_, waiting_, kv_, prompt_rate_, generation_rate_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_TELEMETRY_SERVER_METRICS_H_
