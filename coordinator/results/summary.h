// The run summary (R-MET-1, R-MET-2) computed from the per-request
// records, with AISBench's metric names: `{dataset}.json`, the per-metric
// table `{dataset}.csv`, and the printed table. Pure except the writers.
#ifndef SURGE_COORDINATOR_RESULTS_SUMMARY_H_
#define SURGE_COORDINATOR_RESULTS_SUMMARY_H_

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/stats.h"
#include "coordinator/plan/steady_state.h"
#include "coordinator/results/input_lengths.h"
#include "coordinator/results/record_sink.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// Statistics of one metric (common/stats.h): count, mean, min and max are
// exact; the percentiles are exact (linear interpolation between closest
// ranks, numpy's default) when `exact`, else log-linear histogram estimates
// within kStreamingRelativeError (the metric held more values than the
// accumulator's exact limit). All NaN when count is 0. `at` holds the
// percentiles of the run's --metric-percentiles set (MetricPercentiles), as
// (p, value) in ascending p; p50..p99 are always filled.
struct MetricStats {
  size_t count = 0;
  double mean = 0, min = 0, max = 0, p50 = 0, p75 = 0, p90 = 0, p99 = 0;
  std::vector<std::pair<double, double>> at = {};
  bool exact = true;
};
// Exact statistics of `values`, with `percentiles` in `at`.
MetricStats ComputeStats(std::vector<double> values, const std::vector<double>& percentiles = {});
// The statistics `values` holds (exact or estimated, see StreamingStats).
MetricStats StatsOf(StreamingStats& values, const std::vector<double>& percentiles = {});

// A latency of a sent request counted from its planned send instead of its
// actual one: metric_ns + (sent_ns − planned_ns), ns — what a user arriving
// on schedule waited, the generator's own lateness included (the
// coordinated-omission view that wrk2 corrects for). `metric_ns` is a
// latency measured from the actual send (ttft_ns, e2el_ns). Exact integer
// arithmetic; negative lateness (sent early) lowers it. Only meaningful when
// record.sent() and the metric was measured.
int64_t FromPlannedNs(const surge::v1::RequestRecord& record, int64_t metric_ns);

// The key a not-OK record is counted under in RunSummary::reasons: its
// failure kind's label (common/failure_kind.h: "timeout", "not_sent",
// "send_unknown", ...), for an HTTP kind "http_<status>" ("http_503"), and
// for an error text of unknown kind (FAILURE_KIND_OTHER) the text before its
// first ':' as earlier releases counted it; "unknown" when there is none.
// Pure.
std::string ReasonKey(const surge::v1::RequestRecord& record);

// The records that name one worker (record.worker), by final state.
struct WorkerCounts {
  uint64_t records = 0, sent = 0, ok = 0, failed = 0, interrupted = 0, not_sent = 0, lost = 0;
};

struct RunSummary {
  // Records by final state; total = all six.
  uint64_t total = 0, succeeded = 0, failed = 0, lost = 0, not_sent = 0, interrupted = 0;
  // The same by worker index (records with a worker >= 0; warm-ups not
  // counted).
  std::map<int32_t, WorkerCounts> by_worker;
  // Late-send policy (docs/DESIGN.md "Late-send policy"): SKIPPED records
  // (late_policy skip; not in `failed` nor in "Failed Requests"), released
  // requests marked late (record.late: released more than late_threshold_ms
  // after the planned send, any policy) and, of those, the ones the
  // catch-up spacing held back (record.catch_up_delay_ns > 0, policy cap).
  uint64_t skipped = 0, late = 0, delayed = 0;
  // Requests whose first byte was sent (OK, FAILED, INTERRUPTED, some LOST).
  // Achieved rate, lateness, duration and concurrency cover all of them.
  uint64_t sent = 0;
  // t0 → end of the last request (its last byte, or its send when it has no
  // answer), seconds ("Benchmark Duration"). 0 when nothing was sent.
  double duration_s = 0;
  // succeeded / duration_s, requests/s ("Request Throughput").
  double request_throughput_rps = 0;
  // (n − 1)/(last actual send − first actual send) over the n sent requests
  // (R-MET-2); NaN ("n/a", JSON null) when n < 2 or the span is 0.
  double achieved_rate_rps = 0;
  // The plan's rate: (N − 1)/(t_{N−1} − t_0) over the planned offsets of all
  // N records, sent or not (R-MET-2 "the same over their planned offsets",
  // read as the whole plan, so a run whose sends collapsed does not report a
  // collapsed intent). NaN when N < 2 or all are planned at once (instant
  // mode).
  double intended_rate_rps = 0;
  // Actual − planned send time of sent requests, seconds.
  MetricStats lateness_s;
  // Per-request metrics of OK requests (R-MET-1), seconds:
  // E2EL = send → last byte; TTFT = send → first content; TPOT =
  // (E2EL − TTFT)/(output tokens − 1) for requests with ≥ 2 output tokens;
  // ITL = every gap between content chunks, pooled over requests.
  MetricStats e2el_s, ttft_s, tpot_s, itl_s;
  // Send → first answer-content token (record.ttfc_ns), seconds, over OK
  // requests that got answer content (a reasoning-only answer has none).
  // Equals TTFT unless reasoning came first.
  MetricStats ttfc_s;
  // TTFT and E2EL counted from the planned send instead of the actual one
  // (the coordinated-omission view, FromPlannedNs), seconds, over the same
  // OK requests as ttft_s / e2el_s: each value is the request's TTFT or
  // E2EL plus its lateness (actual − planned send). Equal to ttft_s /
  // e2el_s when every request left on time.
  MetricStats ttft_from_planned_s, e2el_from_planned_s;
  // Per-request token counts and output tokens / E2EL (tokens/s), OK requests.
  MetricStats input_tokens_stats, output_tokens_stats, output_token_throughput_stats;
  // Token totals over OK requests.
  uint64_t input_tokens = 0, output_tokens = 0;
  // The server's prefix cache (usage.prompt_tokens_details.cached_tokens):
  // OK requests that reported it, and their cached and input tokens. The
  // measured reuse is cached_tokens / cached_input_tokens
  // (coordinator/results/prefix_reuse_summary.h).
  uint64_t cached_reported = 0, cached_tokens = 0, cached_input_tokens = 0;
  // OK requests whose output token count surge estimated because the server
  // sent no usage (record.output_tokens_estimated; ceil(UTF-8 bytes of the
  // answer's text / 4), EstimateTokens): their TPOT and token totals rest on
  // the estimate. Reported next to the totals in all three outputs.
  uint64_t output_tokens_estimated = 0;
  // OK requests with record.short_output: ignore_eos was asked, and the
  // answer stopped before max_tokens (fewer tokens by the server's usage, or
  // a finish_reason other than "length").
  uint64_t short_outputs = 0;
  // OK requests whose server-reported finish_reason is each value, e.g.
  // {"length": 98, "stop": 2}; "none" when the stream carried none.
  std::map<std::string, uint64_t> finish_reasons;
  // Requests of any status that the HTTP client sent again on a fresh
  // connection (record.http_retries > 0: a reused keep-alive connection was
  // closed before any answer byte), and those retries by cause (the
  // retry_reason before its first ':').
  uint64_t retried_requests = 0;
  std::map<std::string, uint64_t> retry_reasons;
  // Totals / duration_s, tokens/s.
  double input_token_throughput = 0, output_token_throughput = 0, total_token_throughput = 0;
  // In-flight requests: mean = Σ(send → end) / duration ("Concurrency"),
  // max = the most whose [send, end] intervals overlap ("Max Concurrency").
  // The end of an interrupted request is when it was cut off
  // (interrupted_ns), of another not-OK one its send when no end is known.
  double mean_concurrency = 0;
  uint64_t max_concurrency = 0;
  // Goodput (vLLM's definition): OK requests meeting every objective set,
  // and those per second. has_goodput false when no objective was given.
  bool has_goodput = false;
  uint64_t good_requests = 0;
  double goodput_rps = 0;
  // True when every metric's percentiles are exact (MetricStats::exact).
  bool percentiles_exact = true;
  // The percentiles each metric's MetricStats::at holds.
  MetricPercentiles percentiles;
  // Asked against server-reported prompt lengths (input_lengths.h); shown
  // when the server counted prompts surge sized (input_lengths.shown()).
  InputLengthSummary input_lengths;
  // Failed, lost, not-sent, interrupted and skipped records by reason
  // (ReasonKey: the failure kind), e.g. {"http_503": 3, "interrupted": 80}.
  std::map<std::string, uint64_t> reasons;
  // Warm-up records (record.warmup; RunConfig.num_warmups): counted here
  // only, in no other count and no metric.
  uint64_t warmups = 0;
  // The steady-state window (RunConfig.steady_state_s), when one was given:
  // the per-request metrics of OK requests (latencies, token counts and
  // totals, finish reasons, goodput) count only requests planned inside it,
  // and the request, token and goodput throughputs are those requests (and
  // their tokens) per second of the window's length. The counts by status,
  // the send-side metrics (sent, lateness, achieved rate, concurrency) and
  // the duration stay the whole run's. `steady_state_succeeded`: OK
  // requests planned inside the window.
  std::optional<SteadyStateWindow> steady_state;
  uint64_t steady_state_succeeded = 0;
};

// The plan's intended rate: (N − 1)/(t_{N−1} − t_0) over planned offsets
// (seconds, any order), NaN with fewer than 2 or a zero span (R-MET-2).
// Summarize uses it over every record's planned offset; `surge run` and
// `surge report` over the plan itself, so a run stopped early (or whose
// records did not all come back) still reports the plan's rate. Pure.
double IntendedRateRps(const std::vector<double>& planned_offsets_s);

// Whether `goodput` sets any objective (TTFT, TPOT or E2EL): without one
// no goodput is reported and a sweep has no answer.
inline bool HasGoodputObjective(const surge::v1::GoodputConfig& goodput) {
  return goodput.has_ttft_ms() || goodput.has_tpot_ms() || goodput.has_e2el_ms();
}

// The run summary built one record at a time, in memory that does not grow
// with the records' size: per metric at most `exact_limit` values (8 bytes
// each) before a fixed-size histogram takes over (StreamingStats), plus 16
// bytes per sent request for the in-flight sweep (Max Concurrency). Feed it
// one final record per planned request, in any order; Finish() any number of
// times. `goodput` may be null and must outlive the accumulator. Pure.
class SummaryAccumulator : public RecordSink {
 public:
  explicit SummaryAccumulator(const surge::v1::GoodputConfig* goodput = nullptr,
                              size_t exact_limit = StreamingStats::kDefaultExactLimit);
  void Add(const surge::v1::RequestRecord& record) override;
  // Counts only requests planned inside `window` in the OK-request metrics
  // and the throughputs (RunSummary::steady_state). Before the first Add.
  void SetSteadyState(const SteadyStateWindow& window) { s_.steady_state = window; }
  // The percentiles the outputs show (default: MetricPercentiles{}).
  void SetPercentiles(const MetricPercentiles& percentiles) { s_.percentiles = percentiles; }
  // The summary of every record added so far. Sorts kept values in place.
  RunSummary Finish();
  // Records added so far.
  uint64_t records() const { return s_.total; }

 private:
  const surge::v1::GoodputConfig* goodput_;
  RunSummary s_;  // counters; the statistics are filled in by Finish()
  StreamingStats lateness_, ttft_, ttfc_, e2el_, tpot_, itl_, ttft_planned_, e2el_planned_,
      in_tokens_, out_tokens_, out_throughput_;
  std::vector<double> starts_s_, ends_s_;
  double planned_min_s_ = std::numeric_limits<double>::infinity();
  double planned_max_s_ = -std::numeric_limits<double>::infinity();
  double sent_min_s_ = std::numeric_limits<double>::infinity();
  double sent_max_s_ = -std::numeric_limits<double>::infinity();
  double end_s_ = 0, busy_s_ = 0;
};

// Summarizes one record per planned request, every percentile exact
// (SummaryAccumulator with no limit). `goodput` may be null. Pure.
RunSummary Summarize(const std::vector<surge::v1::RequestRecord>& records,
                     const surge::v1::GoodputConfig* goodput = nullptr);

// A number for the summary's JSON: null when it is not finite (NaN, ±inf).
nlohmann::json JsonNumber(double v);

// The summary as JSON; NaN becomes null. `context` (seed, config, target,
// plan facts) is stored under "run"; "metrics" holds the per-request table
// and "common" the run-wide values, with AISBench's names.
nlohmann::json SummaryToJson(const RunSummary& summary, const nlohmann::json& context);

// AISBench's per-metric table `{dataset}.csv`: header
// `Performance Parameters,Average,Min,Max,Median,P75,P90,P99,N` (with
// --metric-percentiles: `Average,Min,Max`, then `Median` for 50 and `P<p>`
// for each other percentile given, then `N`), one row per
// per-request metric (latencies in ms), then the run-wide values as
// `name,value` rows after an empty line.
std::string SummaryToCsv(const RunSummary& summary);

// A fixed-width table for the terminal, with the failure reasons.
std::string FormatSummaryTable(const RunSummary& summary);

// Writes `text` to `path`. Errors: INTERNAL on I/O failure.
absl::Status WriteTextFile(const std::string& text, const std::filesystem::path& path);
// Writes `json` to `path` (pretty, 2 spaces). Errors: INTERNAL on I/O failure.
absl::Status WriteJsonFile(const nlohmann::json& json, const std::filesystem::path& path);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_SUMMARY_H_
