#include "simserver/server_metrics.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace surge::simserver {
namespace {

// A sample value: integers as integers, others in the shortest form that
// reads back to the same double.
std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return absl::StrCat(v);
  return std::string(buf, end);
}

// A label value with \, " and newline escaped (the text format's rule).
std::string Escaped(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Header(std::string& out, const char* name, const char* type, const char* help) {
  absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void Metric(std::string& out, const char* name, const char* type, const char* help,
            const std::string& labels, double value) {
  Header(out, name, type, help);
  absl::StrAppend(&out, name, "{", labels, "} ", Number(value), "\n");
}

void TtftHistogram(std::string& out, const std::string& labels, const ServerMetricsSnapshot& s) {
  static constexpr char kName[] = "vllm:time_to_first_token_seconds";
  Header(out, kName, "histogram", "Time to first token of each request, seconds.");
  const std::vector<double>& bounds = TtftBucketsS();
  for (size_t i = 0; i < bounds.size(); ++i) {
    const uint64_t count = i < s.ttft_cumulative.size() ? s.ttft_cumulative[i] : 0;
    absl::StrAppend(&out, kName, "_bucket{", labels, ",le=\"", Number(bounds[i]), "\"} ", count,
                    "\n");
  }
  absl::StrAppend(&out, kName, "_bucket{", labels, ",le=\"+Inf\"} ", s.ttft_count, "\n");
  absl::StrAppend(&out, kName, "_sum{", labels, "} ", Number(s.ttft_sum_s), "\n");
  absl::StrAppend(&out, kName, "_count{", labels, "} ", s.ttft_count, "\n");
}

}  // namespace

const std::vector<double>& TtftBucketsS() {
  static const auto* b = new std::vector<double>{
      0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
      1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  return *b;
}

ServerMetrics::ServerMetrics() : ttft_(TtftBucketsS()) {}

void ServerMetrics::FirstToken(uint64_t prompt_tokens, double ttft_s) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += prompt_tokens;
  ttft_.Add(ttft_s);
}

void ServerMetrics::Generated(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  generation_tokens_ += n;
}

ServerMetricsSnapshot ServerMetrics::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  ServerMetricsSnapshot s;
  s.prompt_tokens = prompt_tokens_;
  s.generation_tokens = generation_tokens_;
  s.ttft_cumulative = ttft_.Cumulative();
  s.ttft_count = ttft_.count();
  s.ttft_sum_s = ttft_.sum();
  return s;
}

std::string PrometheusText(const std::string& model, const ServerMetricsSnapshot& s) {
  const std::string labels = absl::StrCat("model_name=\"", Escaped(model), "\"");
  std::string out;
  Metric(out, "vllm:num_requests_running", "gauge",
         "Requests in the engine's batch, decoded together.", labels,
         static_cast<double>(s.running));
  Metric(out, "vllm:num_requests_waiting", "gauge",
         "Requests waiting in the queue for a free batch slot.", labels,
         static_cast<double>(s.waiting));
  Metric(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache use, 1 = full.", labels,
         s.kv_cache_usage);
  Metric(out, "vllm:prompt_tokens_total", "counter",
         "Prompt tokens of the requests that got their first token.", labels,
         static_cast<double>(s.prompt_tokens));
  Metric(out, "vllm:generation_tokens_total", "counter", "Tokens generated.", labels,
         static_cast<double>(s.generation_tokens));
  TtftHistogram(out, labels, s);
  return out;
}

}  // namespace surge::simserver
