// The run summary (SPEC R-MET-2) computed from the per-request records, its
// JSON file `{dataset}.json` and the printed table. Pure except the writer.
#ifndef SURGE_COORDINATOR_RESULTS_SUMMARY_H_
#define SURGE_COORDINATOR_RESULTS_SUMMARY_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// Exact statistics of one metric over all its values (percentiles by linear
// interpolation between closest ranks, numpy's default). Seconds unless named
// otherwise. All NaN when count is 0.
struct MetricStats {
  size_t count = 0;
  double mean = 0, min = 0, max = 0, p50 = 0, p75 = 0, p90 = 0, p99 = 0;
};
MetricStats ComputeStats(std::vector<double> values);

struct RunSummary {
  // Records by final state; total = all four.
  uint64_t total = 0, succeeded = 0, failed = 0, lost = 0, not_sent = 0;
  // Requests whose first byte was sent (OK, FAILED and some LOST).
  uint64_t sent = 0;
  // t0 → end of the last request (its last byte, or its send when it has no
  // answer), seconds. 0 when nothing was sent.
  double duration_s = 0;
  // succeeded / duration_s, requests/s.
  double request_throughput_rps = 0;
  // (n − 1)/(last actual send − first actual send) over the n sent requests
  // (R-MET-2); NaN when n < 2 or the span is 0.
  double achieved_rate_rps = 0;
  // The same over the planned offsets of those n requests.
  double intended_rate_rps = 0;
  // Actual − planned send time of sent requests, seconds.
  MetricStats lateness_s;
  // Of OK requests, seconds (R-MET-1).
  MetricStats ttft_s, e2el_s;
  // Token totals over OK requests.
  uint64_t input_tokens = 0, output_tokens = 0;
  // output_tokens / duration_s, tokens/s.
  double output_token_throughput = 0;
  // Failed, lost and not-sent records by reason (the error text before its
  // first ':'), e.g. {"http_503": 3}.
  std::map<std::string, uint64_t> reasons;
};

// Summarizes one record per planned request. Pure.
RunSummary Summarize(const std::vector<surge::v1::RequestRecord>& records);

// The summary as JSON; NaN becomes null. `context` (seed, config, target,
// plan facts) is stored under "run".
nlohmann::json SummaryToJson(const RunSummary& summary, const nlohmann::json& context);

// A fixed-width table for the terminal.
std::string FormatSummaryTable(const RunSummary& summary);

// Writes `json` to `path` (pretty, 2 spaces). Errors: INTERNAL on I/O failure.
absl::Status WriteJsonFile(const nlohmann::json& json, const std::filesystem::path& path);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_SUMMARY_H_
