#include "coordinator/telemetry/server_metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/url.h"

namespace surge::coordinator {
namespace {

using Json = nlohmann::ordered_json;
using Field = std::optional<double> ServerMetricsSample::*;

// A field of the sample and the names servers export it under.
struct MappedName {
  Field field;
  const char* key;  // the field's name in the file
  std::vector<std::string> names;
  bool largest = false;  // the largest over label sets, else their sum
};

const std::vector<MappedName>& MappedNames() {
  static const std::vector<MappedName> names = {
      {&ServerMetricsSample::running,
       "running",
       {"vllm:num_requests_running", "sglang:num_running_reqs"}},
      {&ServerMetricsSample::waiting,
       "waiting",
       {"vllm:num_requests_waiting", "sglang:num_queue_reqs"}},
      // A fraction does not add up over engines: the fullest one's.
      {&ServerMetricsSample::kv_cache_usage,
       "kv_cache_usage",
       {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"},
       true},
      {&ServerMetricsSample::prompt_tokens_total,
       "prompt_tokens_total",
       {"vllm:prompt_tokens_total", "sglang:prompt_tokens_total"}},
      {&ServerMetricsSample::generation_tokens_total,
       "generation_tokens_total",
       {"vllm:generation_tokens_total", "sglang:generation_tokens_total"}},
      {&ServerMetricsSample::ttft_sum_s,
       "ttft_sum_s",
       {"vllm:time_to_first_token_seconds_sum", "sglang:time_to_first_token_seconds_sum"}},
      {&ServerMetricsSample::ttft_count,
       "ttft_count",
       {"vllm:time_to_first_token_seconds_count", "sglang:time_to_first_token_seconds_count"}},
  };
  return names;
}

// The derived fields, written after the mapped ones.
struct DerivedName {
  Field field;
  const char* key;
};
const std::vector<DerivedName>& DerivedNames() {
  static const std::vector<DerivedName> names = {
      {&ServerMetricsSample::prompt_tokens_per_s, "prompt_tokens_per_s"},
      {&ServerMetricsSample::generation_tokens_per_s, "generation_tokens_per_s"},
      {&ServerMetricsSample::ttft_mean_s, "ttft_mean_s"},
  };
  return names;
}

const MappedName* FindMapped(const std::string& name) {
  for (const MappedName& m : MappedNames()) {
    if (std::find(m.names.begin(), m.names.end(), name) != m.names.end()) return &m;
  }
  return nullptr;
}

// `name{a="x",b="y"}` with the text format's escapes.
std::string SeriesKey(const PrometheusSample& s) {
  if (s.labels.empty()) return s.name;
  std::string key = s.name + "{";
  bool first = true;
  for (const auto& [label, value] : s.labels) {
    if (!first) key += ',';
    first = false;
    key += label + "=\"";
    for (char c : value) {
      if (c == '\\' || c == '"') key += '\\';
      key += c == '\n' ? std::string("\\n") : std::string(1, c);
    }
    key += '"';
  }
  return key + "}";
}

void AddMapped(const MappedName& m, double value, ServerMetricsSample& out) {
  if (!std::isfinite(value)) return;
  std::optional<double>& field = out.*(m.field);
  field = !field ? value : m.largest ? std::max(*field, value) : *field + value;
}

// Δcounter / Δt; none when the counter is missing on either side or went
// down.
std::optional<double> Rate(const std::optional<double>& before, const std::optional<double>& now,
                           double dt_s) {
  if (!before || !now || *now < *before || dt_s <= 0) return std::nullopt;
  return (*now - *before) / dt_s;
}

std::optional<double> OptionalNumber(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

absl::StatusOr<std::string> ServerMetricsUrl(const std::string& option,
                                             const std::string& base_url) {
  const std::string& url = option == "auto" ? base_url : option;
  absl::StatusOr<surge::client::ParsedUrl> parsed = surge::client::ParseBaseUrl(url);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("server_metrics: ", parsed.status().message(), " (flag --server-metrics)"));
  }
  if (option == "auto") return absl::StrCat(parsed->Origin(), "/metrics");
  return option;
}

std::string ServerMetricsFileName(const std::string& dataset) {
  return dataset + "_server_metrics.jsonl";
}

ServerMetricsSample SampleOfExposition(std::string_view body, int64_t at_ns, size_t raw_cap) {
  const PrometheusText text = ParsePrometheusText(body);
  if (text.samples.empty() && text.bad_lines > 0) {
    return FailedSample(at_ns,
                        absl::StrCat("answered text that is not Prometheus text (", text.bad_lines,
                                     " bad lines, the first is line ", text.first_bad_line, ")"));
  }
  ServerMetricsSample out;
  out.at_ns = at_ns;
  out.ok = true;
  for (const PrometheusSample& s : text.samples) {
    if (const MappedName* m = FindMapped(s.name)) {
      AddMapped(*m, s.value, out);
    } else if (out.raw.size() < raw_cap) {
      out.raw.emplace_back(SeriesKey(s), s.value);
    } else {
      ++out.raw_dropped;
    }
  }
  return out;
}

ServerMetricsSample FailedSample(int64_t at_ns, std::string error) {
  ServerMetricsSample out;
  out.at_ns = at_ns;
  out.error = std::move(error);
  return out;
}

void AddRates(const ServerMetricsSample& previous, ServerMetricsSample& current) {
  const double dt_s = static_cast<double>(current.at_ns - previous.at_ns) / 1e9;
  current.prompt_tokens_per_s =
      Rate(previous.prompt_tokens_total, current.prompt_tokens_total, dt_s);
  current.generation_tokens_per_s =
      Rate(previous.generation_tokens_total, current.generation_tokens_total, dt_s);
  // The mean TTFT of the first tokens between the two scrapes.
  const std::optional<double> sum = Rate(previous.ttft_sum_s, current.ttft_sum_s, 1);
  const std::optional<double> count = Rate(previous.ttft_count, current.ttft_count, 1);
  current.ttft_mean_s.reset();
  if (sum && count && *count > 0) current.ttft_mean_s = *sum / *count;
}

std::string ServerMetricsLine(const ServerMetricsSample& s, int64_t t0_ns) {
  Json j;
  j["t_s"] = static_cast<double>(s.at_ns - t0_ns) / 1e9;
  j["ok"] = s.ok;
  j["scrape_ms"] = s.scrape_ms;
  if (!s.ok) {
    j["error"] = s.error;
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  for (const MappedName& m : MappedNames()) {
    if (const auto& v = s.*(m.field)) j[m.key] = *v;
  }
  for (const DerivedName& d : DerivedNames()) {
    if (const auto& v = s.*(d.field)) j[d.key] = *v;
  }
  Json raw = Json::object();
  for (const auto& [key, value] : s.raw) raw[key] = value;  // NaN, ±Inf: null
  j["raw"] = std::move(raw);
  if (s.raw_dropped > 0) j["raw_dropped"] = s.raw_dropped;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<ServerMetricsSample> ParseServerMetricsLine(std::string_view line) {
  const Json j = Json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("t_s") || !j["t_s"].is_number() || !j.contains("ok") ||
      !j["ok"].is_boolean()) {
    return absl::InvalidArgumentError("not a server metrics line (needs t_s and ok)");
  }
  ServerMetricsSample s;
  s.at_ns = std::llround(j["t_s"].get<double>() * 1e9);
  s.ok = j["ok"].get<bool>();
  s.scrape_ms = OptionalNumber(j, "scrape_ms").value_or(0);
  if (auto it = j.find("error"); it != j.end() && it->is_string()) s.error = it->get<std::string>();
  for (const MappedName& m : MappedNames()) s.*(m.field) = OptionalNumber(j, m.key);
  for (const DerivedName& d : DerivedNames()) s.*(d.field) = OptionalNumber(j, d.key);
  if (auto it = j.find("raw"); it != j.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      s.raw.emplace_back(key, value.is_number() ? value.get<double>() : std::nan(""));
    }
  }
  s.raw_dropped = static_cast<uint64_t>(OptionalNumber(j, "raw_dropped").value_or(0));
  return s;
}

void ServerMetricsSummary::Extent::Add(const std::optional<double>& v) {
  if (!v) return;
  peak = peak ? std::max(*peak, *v) : *v;
  sum += *v;
  ++count;
}

void ServerMetricsSummary::Add(const ServerMetricsSample& s) {
  ++samples_;
  if (!s.ok) {
    ++failed_;
    if (first_error_.empty()) first_error_ = s.error;
    return;
  }
  running_.Add(s.running);
  waiting_.Add(s.waiting);
  kv_.Add(s.kv_cache_usage);
  prompt_rate_.Add(s.prompt_tokens_per_s);
  generation_rate_.Add(s.generation_tokens_per_s);
}

nlohmann::json ServerMetricsSummary::ToJson() const {
  nlohmann::json j;
  j["url"] = source_.url;
  j["interval_s"] = source_.interval_s;
  j["samples"] = samples_;
  j["failed"] = failed_;
  if (!first_error_.empty()) j["first_error"] = first_error_;
  auto put = [&j](const char* key, const std::optional<double>& v) {
    if (v) j[key] = *v;
  };
  auto mean = [](const Extent& e) {
    return e.count > 0 ? std::optional<double>(e.sum / static_cast<double>(e.count)) : std::nullopt;
  };
  put("peak_running", running_.peak);
  put("peak_waiting", waiting_.peak);
  put("peak_kv_cache_usage", kv_.peak);
  put("mean_running", mean(running_));
  put("mean_waiting", mean(waiting_));
  put("mean_prompt_tokens_per_s", mean(prompt_rate_));
  put("mean_generation_tokens_per_s", mean(generation_rate_));
  put("peak_generation_tokens_per_s", generation_rate_.peak);
  return j;
}

std::string ServerMetricsSummary::ConsoleLine() const {
  std::string line = absl::StrCat("server metrics: ", samples_, " samples (", failed_, " failed)");
  if (running_.peak) absl::StrAppend(&line, ", peak running ", *running_.peak);
  if (waiting_.peak) absl::StrAppend(&line, ", peak waiting ", *waiting_.peak);
  if (kv_.peak) absl::StrAppendFormat(&line, ", peak KV cache %.1f%%", *kv_.peak * 100);
  if (generation_rate_.count > 0) {
    absl::StrAppendFormat(&line, ", mean generation %.1f tokens/s",
                          generation_rate_.sum / static_cast<double>(generation_rate_.count));
  }
  if (!first_error_.empty()) absl::StrAppend(&line, "; first failure: ", first_error_);
  return line;
}

}  // namespace surge::coordinator
