#include "coordinator/results/summary.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/failure_kind.h"
#include "common/stats.h"
#include "common/time_units.h"

namespace surge::coordinator {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// (n − 1)/(max − min): the rate that n events spread over [min, max] have.
double RateOverSpan(uint64_t n, double min_s, double max_s) {
  if (n < 2) return kNaN;
  const double span = max_s - min_s;
  if (!(span > 0)) return kNaN;
  return static_cast<double>(n - 1) / span;
}

double PerSecond(double amount, double seconds) { return seconds > 0 ? amount / seconds : kNaN; }

// One per-request metric as the JSON and CSV show it: name, unit, the
// factor from the stored unit (seconds → ms for latencies).
struct MetricRow {
  const char* name;
  const char* unit;
  double scale;
  const MetricStats* stats;
};

std::vector<MetricRow> MetricRows(const RunSummary& s) {
  return {
      {"E2EL", "ms", 1e3, &s.e2el_s},
      {"TTFT", "ms", 1e3, &s.ttft_s},
      {"TTFC", "ms", 1e3, &s.ttfc_s},
      {"TPOT", "ms", 1e3, &s.tpot_s},
      {"ITL", "ms", 1e3, &s.itl_s},
      {"InputTokens", "tokens", 1, &s.input_tokens_stats},
      {"OutputTokens", "tokens", 1, &s.output_tokens_stats},
      {"OutputTokenThroughput", "token/s", 1, &s.output_token_throughput_stats},
      {"SendLateness", "ms", 1e3, &s.lateness_s},
      // The coordinated-omission view: from the planned send (FromPlannedNs).
      {"TTFTFromPlannedSend", "ms", 1e3, &s.ttft_from_planned_s},
      {"E2ELFromPlannedSend", "ms", 1e3, &s.e2el_from_planned_s},
  };
}

// Run-wide values, AISBench's names.
std::vector<std::pair<std::string, nlohmann::json>> CommonRows(const RunSummary& s) {
  std::vector<std::pair<std::string, nlohmann::json>> rows = {
      {"Benchmark Duration (ms)", JsonNumber(s.duration_s * 1e3)},
      {"Total Requests", s.total},
      {"Failed Requests", s.failed + s.lost + s.not_sent + s.interrupted},
      {"Interrupted Requests", s.interrupted},
      {"Late Requests", s.late},
      {"Skipped Requests (late)", s.skipped},
      {"Delayed Requests (catch-up)", s.delayed},
      {"Success Requests", s.succeeded},
      {"Concurrency", JsonNumber(s.mean_concurrency)},
      {"Max Concurrency", s.max_concurrency},
      {"Request Throughput (req/s)", JsonNumber(s.request_throughput_rps)},
      {"Total Input Tokens", s.input_tokens},
      {"Total Generated Tokens", s.output_tokens},
      {"Estimated Output Token Counts", s.output_tokens_estimated},
      {"Short Outputs (ignore_eos)", s.short_outputs},
      {"Retried Requests", s.retried_requests},
      {"Input Token Throughput (token/s)", JsonNumber(s.input_token_throughput)},
      {"Output Token Throughput (token/s)", JsonNumber(s.output_token_throughput)},
      {"Total Token Throughput (token/s)", JsonNumber(s.total_token_throughput)},
      {"Intended Rate (req/s)", JsonNumber(s.intended_rate_rps)},
      {"Achieved Rate (req/s)", JsonNumber(s.achieved_rate_rps)},
  };
  if (s.has_goodput) {
    rows.push_back({"Good Requests", s.good_requests});
    rows.push_back({"Goodput (req/s)", JsonNumber(s.goodput_rps)});
  }
  if (s.warmups > 0) rows.push_back({"Warm-up Requests", s.warmups});
  if (s.steady_state) {
    rows.push_back({"Steady State Start (s)", s.steady_state->start_s});
    rows.push_back({"Steady State End (s)", s.steady_state->end_s});
    rows.push_back({"Steady State Requests", s.steady_state->requests});
  }
  return rows;
}

// "n/a" where a number is undefined (no value, fewer than 2 sends, …).
std::string Fixed(double v, int digits = 3) {
  return std::isfinite(v) ? absl::StrFormat("%.*f", digits, v) : "n/a";
}

}  // namespace

double IntendedRateRps(const std::vector<double>& planned_offsets_s) {
  if (planned_offsets_s.empty()) return kNaN;
  const auto [lo, hi] = std::minmax_element(planned_offsets_s.begin(), planned_offsets_s.end());
  return RateOverSpan(planned_offsets_s.size(), *lo, *hi);
}

std::string ReasonKey(const surge::v1::RequestRecord& r) {
  const surge::v1::FailureKind kind = FailureKindOf(r);
  switch (kind) {
    case surge::v1::FAILURE_KIND_UNSPECIFIED:
      return "unknown";
    case surge::v1::FAILURE_KIND_HTTP_4XX:
    case surge::v1::FAILURE_KIND_HTTP_5XX:
    case surge::v1::FAILURE_KIND_HTTP_OTHER:
      // The status itself says more than its class (from the error text
      // when a record has no status code).
      if (r.http_status() > 0) return absl::StrCat("http_", r.http_status());
      if (r.error().rfind("http_", 0) == 0) return r.error().substr(0, r.error().find(':'));
      return FailureKindLabel(kind);
    case surge::v1::FAILURE_KIND_OTHER: {
      // An error text this release does not know (an older file): its own
      // prefix, as earlier releases counted it.
      const std::string& e = r.error();
      return e.empty() ? std::string("unknown") : e.substr(0, e.find(':'));
    }
    default:
      return FailureKindLabel(kind);
  }
}

int64_t FromPlannedNs(const surge::v1::RequestRecord& r, int64_t metric_ns) {
  return metric_ns + (r.sent_ns() - r.planned_ns());
}

MetricStats StatsOf(StreamingStats& values, const std::vector<double>& percentiles) {
  MetricStats s;
  s.count = values.count();
  s.exact = values.exact();
  s.mean = values.mean();
  s.min = values.min();
  s.max = values.max();
  s.p50 = values.Percentile(50);
  s.p75 = values.Percentile(75);
  s.p90 = values.Percentile(90);
  s.p99 = values.Percentile(99);
  for (double p : percentiles) s.at.emplace_back(p, values.Percentile(p));
  return s;
}

MetricStats ComputeStats(std::vector<double> values, const std::vector<double>& percentiles) {
  StreamingStats all(StreamingStats::kUnlimited);
  for (double v : values) all.Add(v);
  return StatsOf(all, percentiles);
}

SummaryAccumulator::SummaryAccumulator(const surge::v1::GoodputConfig* goodput, size_t exact_limit)
    : goodput_(goodput),
      lateness_(exact_limit),
      ttft_(exact_limit),
      ttfc_(exact_limit),
      e2el_(exact_limit),
      tpot_(exact_limit),
      itl_(exact_limit),
      ttft_planned_(exact_limit),
      e2el_planned_(exact_limit),
      in_tokens_(exact_limit),
      out_tokens_(exact_limit),
      out_throughput_(exact_limit) {
  s_.has_goodput = goodput != nullptr && HasGoodputObjective(*goodput);
}

namespace {

void CountForWorker(const surge::v1::RequestRecord& r, std::map<int32_t, WorkerCounts>& by_worker) {
  if (r.worker() < 0) return;
  WorkerCounts& c = by_worker[r.worker()];
  ++c.records;
  c.sent += r.sent() ? 1 : 0;
  switch (r.status()) {
    case surge::v1::OK:
      ++c.ok;
      break;
    case surge::v1::FAILED:
      ++c.failed;
      break;
    case surge::v1::INTERRUPTED:
      ++c.interrupted;
      break;
    case surge::v1::LOST:
      ++c.lost;
      break;
    case surge::v1::NOT_SENT:
      ++c.not_sent;
      break;
    default:
      break;
  }
}

}  // namespace

void SummaryAccumulator::Add(const surge::v1::RequestRecord& r) {
  RunSummary& s = s_;
  if (r.warmup()) {
    ++s.warmups;  // in no other count and no metric
    return;
  }
  ++s.total;
  CountForWorker(r, s.by_worker);
  const double planned = NanosToSeconds(r.planned_ns());
  planned_min_s_ = std::min(planned_min_s_, planned);
  planned_max_s_ = std::max(planned_max_s_, planned);
  switch (r.status()) {
    case surge::v1::OK:
      ++s.succeeded;
      break;
    case surge::v1::FAILED:
      ++s.failed;
      break;
    case surge::v1::LOST:
      ++s.lost;
      break;
    case surge::v1::INTERRUPTED:
      ++s.interrupted;
      break;
    case surge::v1::SKIPPED:
      ++s.skipped;
      break;
    default:
      ++s.not_sent;
      break;
  }
  s.late += r.late();
  s.delayed += r.catch_up_delay_ns() > 0;
  if (r.http_retries() > 0) {
    ++s.retried_requests;
    const std::string& why = r.retry_reason();
    ++s.retry_reasons[why.empty() ? std::string("unknown") : why.substr(0, why.find(':'))];
  }
  if (r.status() != surge::v1::OK) ++s.reasons[ReasonKey(r)];
  if (!r.sent()) return;
  ++s.sent;
  const double sent = NanosToSeconds(r.sent_ns());
  double end = sent + NanosToSeconds(r.e2el_ns());
  if (r.status() == surge::v1::INTERRUPTED && r.interrupted_ns() > r.sent_ns()) {
    end = NanosToSeconds(r.interrupted_ns());  // in flight until cut off
  }
  sent_min_s_ = std::min(sent_min_s_, sent);
  sent_max_s_ = std::max(sent_max_s_, sent);
  lateness_.Add(NanosToSeconds(r.sent_ns() - r.planned_ns()));
  end_s_ = std::max(end_s_, end);
  busy_s_ += end - sent;
  starts_s_.push_back(sent);
  ends_s_.push_back(end);
  AddInputLength(r, &s.input_lengths);
  if (r.status() != surge::v1::OK) return;
  if (s.steady_state && !s.steady_state->Contains(planned)) return;
  ++s.steady_state_succeeded;
  const double e2el_r = NanosToSeconds(r.e2el_ns());
  const double ttft_r = NanosToSeconds(r.ttft_ns());
  ttft_.Add(ttft_r);
  if (r.ttfc_ns() > 0) ttfc_.Add(NanosToSeconds(r.ttfc_ns()));
  e2el_.Add(e2el_r);
  ttft_planned_.Add(NanosToSeconds(FromPlannedNs(r, r.ttft_ns())));
  e2el_planned_.Add(NanosToSeconds(FromPlannedNs(r, r.e2el_ns())));
  s.short_outputs += r.short_output();
  ++s.finish_reasons[r.finish_reason().empty() ? std::string("none") : r.finish_reason()];
  double tpot_r = kNaN;
  if (r.output_tokens() > 1) {
    tpot_r = (e2el_r - ttft_r) / static_cast<double>(r.output_tokens() - 1);
    tpot_.Add(tpot_r);
  }
  itl_.AddNanos({r.itl_ns().data(), static_cast<size_t>(r.itl_ns_size())});
  in_tokens_.Add(r.input_tokens());
  out_tokens_.Add(r.output_tokens());
  if (e2el_r > 0) out_throughput_.Add(r.output_tokens() / e2el_r);
  s.input_tokens += r.input_tokens();
  s.output_tokens += r.output_tokens();
  s.output_tokens_estimated += r.output_tokens_estimated();
  if (r.cached_tokens_reported()) {
    ++s.cached_reported;
    s.cached_tokens += r.cached_tokens();
    s.cached_input_tokens += r.input_tokens();
  }
  if (s.has_goodput) {
    bool good = true;
    if (goodput_->has_ttft_ms()) good &= ttft_r * 1e3 <= goodput_->ttft_ms();
    if (goodput_->has_e2el_ms()) good &= e2el_r * 1e3 <= goodput_->e2el_ms();
    // A request with one token has no TPOT; it meets a TPOT objective.
    if (goodput_->has_tpot_ms() && std::isfinite(tpot_r))
      good &= tpot_r * 1e3 <= goodput_->tpot_ms();
    s.good_requests += good;
  }
}

RunSummary SummaryAccumulator::Finish() {
  RunSummary s = s_;
  // The most requests in flight at once: a sweep over sorted starts and
  // ends, ends first at equal times (back-to-back requests do not overlap).
  std::sort(starts_s_.begin(), starts_s_.end());
  std::sort(ends_s_.begin(), ends_s_.end());
  size_t ended = 0;
  for (size_t started = 0; started < starts_s_.size(); ++started) {
    while (ended < ends_s_.size() && ends_s_[ended] <= starts_s_[started]) ++ended;
    if (started + 1 > ended)
      s.max_concurrency = std::max<uint64_t>(s.max_concurrency, started + 1 - ended);
  }
  s.duration_s = end_s_;
  // Throughputs: per second of the run, or of the steady-state window.
  const double end_s = s.steady_state ? s.steady_state->length_s() : end_s_;
  s.request_throughput_rps = PerSecond(
      static_cast<double>(s.steady_state ? s.steady_state_succeeded : s.succeeded), end_s);
  s.input_token_throughput = PerSecond(static_cast<double>(s.input_tokens), end_s);
  s.output_token_throughput = PerSecond(static_cast<double>(s.output_tokens), end_s);
  s.total_token_throughput =
      PerSecond(static_cast<double>(s.input_tokens + s.output_tokens), end_s);
  s.mean_concurrency = PerSecond(busy_s_, end_s_);
  s.goodput_rps = PerSecond(static_cast<double>(s.good_requests), end_s);
  s.achieved_rate_rps = RateOverSpan(s.sent, sent_min_s_, sent_max_s_);
  // The plan's rate, over every planned request (sent or not): a run whose
  // sends collapsed must not report a collapsed intent (R-MET-2).
  s.intended_rate_rps = RateOverSpan(s.total, planned_min_s_, planned_max_s_);
  s.lateness_s = StatsOf(lateness_, s.percentiles.values);
  s.ttft_s = StatsOf(ttft_, s.percentiles.values);
  s.ttfc_s = StatsOf(ttfc_, s.percentiles.values);
  s.e2el_s = StatsOf(e2el_, s.percentiles.values);
  s.ttft_from_planned_s = StatsOf(ttft_planned_, s.percentiles.values);
  s.e2el_from_planned_s = StatsOf(e2el_planned_, s.percentiles.values);
  s.tpot_s = StatsOf(tpot_, s.percentiles.values);
  s.itl_s = StatsOf(itl_, s.percentiles.values);
  s.input_tokens_stats = StatsOf(in_tokens_, s.percentiles.values);
  s.output_tokens_stats = StatsOf(out_tokens_, s.percentiles.values);
  s.output_token_throughput_stats = StatsOf(out_throughput_, s.percentiles.values);
  for (const MetricStats* m :
       {&s.lateness_s, &s.ttft_s, &s.ttfc_s, &s.e2el_s, &s.ttft_from_planned_s,
        &s.e2el_from_planned_s, &s.tpot_s, &s.itl_s, &s.input_tokens_stats, &s.output_tokens_stats,
        &s.output_token_throughput_stats}) {
    s.percentiles_exact &= m->exact;
  }
  return s;
}

RunSummary Summarize(const std::vector<surge::v1::RequestRecord>& records,
                     const surge::v1::GoodputConfig* goodput) {
  SummaryAccumulator summary(goodput, StreamingStats::kUnlimited);
  for (const auto& r : records) summary.Add(r);
  return summary.Finish();
}

nlohmann::json JsonNumber(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

nlohmann::json SummaryToJson(const RunSummary& s, const nlohmann::json& context) {
  auto seconds = [](const MetricStats& m) {
    nlohmann::json j{
        {"count", m.count},         {"mean", JsonNumber(m.mean)}, {"min", JsonNumber(m.min)},
        {"max", JsonNumber(m.max)}, {"p50", JsonNumber(m.p50)},   {"p75", JsonNumber(m.p75)},
        {"p90", JsonNumber(m.p90)}, {"p99", JsonNumber(m.p99)},   {"exact", m.exact}};
    // The --metric-percentiles set beyond the four keys above ("p99.9").
    for (const auto& [p, v] : m.at) j.emplace(absl::StrCat("p", PercentileName(p)), JsonNumber(v));
    return j;
  };
  nlohmann::json j;
  j["run"] = context;
  j["requests"] = {{"total", s.total}, {"succeeded", s.succeeded}, {"failed", s.failed},
                   {"lost", s.lost},   {"not_sent", s.not_sent},   {"interrupted", s.interrupted},
                   {"sent", s.sent},   {"skipped", s.skipped}};
  j["late_sends"] = {{"late", s.late},
                     {"skipped", s.skipped},
                     {"delayed", s.delayed},
                     {"rule",
                      "late = released more than late_threshold_ms after the planned send; "
                      "skipped = not sent for it (late_policy skip); delayed = held back by "
                      "the catch-up spacing (late_policy cap)"}};
  j["duration_s"] = JsonNumber(s.duration_s);
  j["request_throughput_rps"] = JsonNumber(s.request_throughput_rps);
  j["achieved_rate_rps"] = JsonNumber(s.achieved_rate_rps);
  j["intended_rate_rps"] = JsonNumber(s.intended_rate_rps);
  j["achieved_vs_intended"] = JsonNumber(s.achieved_rate_rps / s.intended_rate_rps);
  j["lateness_s"] = seconds(s.lateness_s);
  j["ttft_s"] = seconds(s.ttft_s);
  j["ttfc_s"] = seconds(s.ttfc_s);
  j["e2el_s"] = seconds(s.e2el_s);
  j["ttft_from_planned_s"] = seconds(s.ttft_from_planned_s);
  j["e2el_from_planned_s"] = seconds(s.e2el_from_planned_s);
  j["tpot_s"] = seconds(s.tpot_s);
  j["itl_s"] = seconds(s.itl_s);
  j["total_input_tokens"] = s.input_tokens;
  j["total_output_tokens"] = s.output_tokens;
  j["output_tokens_estimated"] = {
      {"requests", s.output_tokens_estimated},
      {"of_succeeded", s.succeeded},
      {"rule", "no usage from the server: ceil(UTF-8 bytes of the answer text / 4)"}};
  j["short_outputs"] = {
      {"requests", s.short_outputs},
      {"of_succeeded", s.succeeded},
      {"rule",
       "ignore_eos asked and the answer stopped before max_tokens (server usage below "
       "max_tokens, or a finish_reason other than length)"}};
  j["finish_reasons"] = s.finish_reasons;
  j["http_retries"] = {{"retried_requests", s.retried_requests},
                       {"reasons", s.retry_reasons},
                       {"rule",
                        "sent again on a fresh connection: a reused keep-alive "
                        "connection closed before any answer byte; latency counts "
                        "from the first write"}};
  j["output_token_throughput"] = JsonNumber(s.output_token_throughput);
  j["mean_concurrency"] = JsonNumber(s.mean_concurrency);
  j["max_concurrency"] = s.max_concurrency;
  if (s.has_goodput) {
    j["goodput"] = {{"good_requests", s.good_requests}, {"goodput_rps", JsonNumber(s.goodput_rps)}};
  }
  if (s.input_lengths.shown()) j["input_lengths"] = InputLengthsToJson(s.input_lengths);
  j["reasons"] = s.reasons;
  if (s.warmups > 0) {
    j["warmups"] = {{"requests", s.warmups},
                    {"rule", "sent before t0, in no count and no metric of this summary"}};
  }
  if (s.steady_state) {
    const SteadyStateWindow& w = *s.steady_state;
    j["steady_state"] = {
        {"window", w.spec},
        {"start_s", w.start_s},
        {"end_s", w.end_s},
        {"includes_end", w.includes_end},
        {"planned_requests", w.requests},
        {"succeeded", s.steady_state_succeeded},
        {"rule",
         "latency, token and goodput metrics over the OK requests planned in [start_s, "
         "end_s); throughputs per second of end_s - start_s; counts, send lateness, achieved "
         "rate, concurrency and duration over the whole run"}};
  }
  // AISBench's names and units.
  nlohmann::json metrics = nlohmann::json::object();
  for (const MetricRow& row : MetricRows(s)) {
    const MetricStats& m = *row.stats;
    metrics[row.name] = {{"unit", row.unit},
                         {"Average", JsonNumber(m.mean * row.scale)},
                         {"Min", JsonNumber(m.min * row.scale)},
                         {"Max", JsonNumber(m.max * row.scale)},
                         {"Median", JsonNumber(m.p50 * row.scale)},
                         {"P75", JsonNumber(m.p75 * row.scale)},
                         {"P90", JsonNumber(m.p90 * row.scale)},
                         {"P99", JsonNumber(m.p99 * row.scale)},
                         {"N", m.count}};
    for (const auto& [p, v] : m.at) {
      if (p != 50)
        metrics[row.name].emplace(absl::StrCat("P", PercentileName(p)), JsonNumber(v * row.scale));
    }
  }
  j["metrics"] = std::move(metrics);
  nlohmann::json common = nlohmann::json::object();
  for (auto& [name, value] : CommonRows(s)) common[name] = value;
  j["common"] = std::move(common);
  j["metric_percentiles"] = s.percentiles.values;
  j["percentile_method"] =
      s.percentiles_exact
          ? "linear interpolation between closest ranks (numpy default)"
          : absl::StrFormat(
                "linear interpolation between closest ranks (numpy default) for metrics "
                "marked exact; the others held more than %d values: log-linear histogram "
                "estimates within %.1f %% (surge report RUN_FOLDER computes them exactly)",
                StreamingStats::kDefaultExactLimit, kStreamingRelativeError * 100);
  return j;
}

namespace {

// The percentiles a table shows: the given --metric-percentiles, else
// `fallback` (what the table always showed).
std::vector<double> ShownPercentiles(const RunSummary& s, std::initializer_list<double> fallback) {
  return s.percentiles.given ? s.percentiles.values : std::vector<double>(fallback);
}

// `m`'s p-th percentile: from its --metric-percentiles set, or one of the
// four it always holds; NaN for another.
double PercentileOf(const MetricStats& m, double p) {
  for (const auto& [q, v] : m.at) {
    if (q == p) return v;
  }
  if (p == 50) return m.p50;
  if (p == 75) return m.p75;
  if (p == 90) return m.p90;
  if (p == 99) return m.p99;
  return kNaN;
}

}  // namespace

std::string SummaryToCsv(const RunSummary& s) {
  const std::vector<double> shown = ShownPercentiles(s, {50, 75, 90, 99});
  std::string out = "Performance Parameters,Average,Min,Max,";
  for (double p : shown) {
    absl::StrAppend(&out, p == 50 ? std::string("Median") : absl::StrCat("P", PercentileName(p)),
                    ",");
  }
  absl::StrAppend(&out, "N\n");
  auto cell = [](double v) {
    return std::isfinite(v) ? absl::StrFormat("%.4f", v) : std::string();
  };
  for (const MetricRow& row : MetricRows(s)) {
    const MetricStats& m = *row.stats;
    absl::StrAppend(&out, row.name, " (", row.unit, "),", cell(m.mean * row.scale), ",",
                    cell(m.min * row.scale), ",", cell(m.max * row.scale), ",");
    for (double p : shown) absl::StrAppend(&out, cell(PercentileOf(m, p) * row.scale), ",");
    absl::StrAppend(&out, m.count, "\n");
  }
  absl::StrAppend(&out, "\nCommon Metric,Value\n");
  auto rows = CommonRows(s);
  if (s.input_lengths.shown()) {
    for (auto& row : InputLengthRows(s.input_lengths)) rows.push_back(std::move(row));
  }
  for (const auto& [name, value] : rows) {
    absl::StrAppend(&out, name, ",",
                    value.is_null()           ? std::string()
                    : value.is_number_float() ? absl::StrFormat("%.4f", value.get<double>())
                                              : value.dump(),
                    "\n");
  }
  return out;
}

std::string FormatSummaryTable(const RunSummary& s) {
  std::string out;
  auto row = [&](const std::string& name, const std::string& value) {
    absl::StrAppend(&out, absl::StrFormat("  %-36s %s\n", name, value));
  };
  // "mean/p50/p99", or mean and the given --metric-percentiles.
  std::string names = "mean";
  const std::vector<double> shown = ShownPercentiles(s, {50, 99});
  for (double p : shown) absl::StrAppend(&names, "/p", PercentileName(p));
  auto ms = [&shown](const MetricStats& m) {
    std::string text = Fixed(m.mean * 1e3);
    for (double p : shown) absl::StrAppend(&text, " / ", Fixed(PercentileOf(m, p) * 1e3));
    return text;
  };
  auto name = [&names](const std::string& metric, const std::string& unit) {
    return absl::StrCat(metric, " ", names, unit);
  };
  absl::StrAppend(&out, "============== surge run summary ==============\n");
  row("Requests (total)", absl::StrCat(s.total));
  row("  succeeded / failed", absl::StrCat(s.succeeded, " / ", s.failed));
  row("  lost / not sent", absl::StrCat(s.lost, " / ", s.not_sent));
  if (s.interrupted > 0) row("  interrupted", absl::StrCat(s.interrupted));
  if (s.skipped > 0) row("  skipped (late)", absl::StrCat(s.skipped));
  row("  sent (first byte out)", absl::StrCat(s.sent));
  // The late-send policy's counts (docs/DESIGN.md "Late-send policy").
  row("Late / skipped / delayed", absl::StrCat(s.late, " / ", s.skipped, " / ", s.delayed));
  row("Benchmark duration (s)", Fixed(s.duration_s));
  row("Intended rate, plan (RPS)", Fixed(s.intended_rate_rps));
  row("Achieved rate, sent (RPS)", Fixed(s.achieved_rate_rps));
  row("Request throughput (RPS)", Fixed(s.request_throughput_rps));
  row("Concurrency mean / max",
      absl::StrCat(Fixed(s.mean_concurrency, 2), " / ", s.max_concurrency));
  row("Output token throughput (tok/s)", Fixed(s.output_token_throughput));
  row("Total token throughput (tok/s)", Fixed(s.total_token_throughput));
  if (s.output_tokens_estimated > 0) {
    absl::StrAppend(&out, "  Output tokens estimated for ", s.output_tokens_estimated, " of ",
                    s.succeeded, " requests (no usage from the server; ~4 chars/token)\n");
  }
  if (s.short_outputs > 0) {
    absl::StrAppend(&out, "  Short outputs: ", s.short_outputs, " of ", s.succeeded,
                    " requests stopped before max_tokens although ignore_eos was asked\n");
  }
  if (s.retried_requests > 0) {
    absl::StrAppend(&out, "  Retried requests: ", s.retried_requests,
                    " sent again on a fresh connection (keep-alive connection closed before "
                    "any answer byte)\n");
  }
  if (s.input_lengths.shown()) absl::StrAppend(&out, InputLengthLines(s.input_lengths));
  if (s.has_goodput)
    row("Goodput (RPS)", absl::StrCat(Fixed(s.goodput_rps), " (", s.good_requests, " good)"));
  {
    std::string late_names = "Send lateness ", late_values;
    for (double p : shown) {
      absl::StrAppend(&late_names, "p", PercentileName(p), "/");
      absl::StrAppend(&late_values, Fixed(PercentileOf(s.lateness_s, p) * 1e3), " / ");
    }
    row(absl::StrCat(late_names, "max (ms)"),
        absl::StrCat(late_values, Fixed(s.lateness_s.max * 1e3)));
  }
  row(name("TTFT", " (ms)"), ms(s.ttft_s));
  // Only when it says something TTFT does not: reasoning came first, or
  // some answers had no content at all.
  if (s.ttfc_s.count != s.ttft_s.count || (s.ttfc_s.count > 0 && s.ttfc_s.mean != s.ttft_s.mean)) {
    row(name("TTFC (first content)", ""), ms(s.ttfc_s));
  }
  row(name("TPOT", " (ms)"), ms(s.tpot_s));
  row(name("ITL", " (ms)"), ms(s.itl_s));
  row(name("E2EL", " (ms)"), ms(s.e2el_s));
  // The same from each request's planned send (its lateness added).
  row(name("TTFT from planned send", ""), ms(s.ttft_from_planned_s));
  row(name("E2EL from planned send", ""), ms(s.e2el_from_planned_s));
  if (s.warmups > 0) {
    absl::StrAppend(&out, "  Warm-ups: ", s.warmups, " sent before t0, in no count or metric\n");
  }
  if (s.steady_state) {
    absl::StrAppend(
        &out, absl::StrFormat("  Steady state %s: [%.3f, %.3f%s s, %d planned, %d OK; "
                              "latency and throughput metrics over these only\n",
                              s.steady_state->spec, s.steady_state->start_s, s.steady_state->end_s,
                              s.steady_state->includes_end ? "]" : ")", s.steady_state->requests,
                              s.steady_state_succeeded));
  }
  if (!s.reasons.empty()) {
    absl::StrAppend(&out, "  Requests not OK, by reason:\n");
    for (const auto& [reason, count] : s.reasons)
      row(absl::StrCat("    ", reason), absl::StrCat(count));
  }
  absl::StrAppend(&out, "===============================================\n");
  if (s.total > 0 && s.succeeded == 0) {
    absl::StrAppend(&out, "All ", s.total,
                    " requests failed or were not sent: see the reasons above and the error "
                    "field of each record in the details file.\n");
  }
  return out;
}

absl::Status WriteTextFile(const std::string& text, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

absl::Status WriteJsonFile(const nlohmann::json& json, const std::filesystem::path& path) {
  return WriteTextFile(json.dump(2) + "\n", path);
}

}  // namespace surge::coordinator
