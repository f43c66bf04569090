// A parser of the Prometheus text exposition format 0.0.4, for the
// metrics an inference server serves at GET /metrics (vLLM, SGLang, the
// built-in server). Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_TELEMETRY_PROMETHEUS_TEXT_H_
#define SURGE_COORDINATOR_TELEMETRY_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace surge::coordinator {

// One sample line: `name{label="value",...} value [timestamp_ms]`.
// Histogram and summary series keep their suffixed names (`_bucket`, `_sum`,
// `_count`); a bucket's bound is its `le` label.
struct PrometheusSample {
  std::string name;
  std::map<std::string, std::string> labels;  // values unescaped
  double value = 0;                           // NaN, +Inf and -Inf allowed
};

struct PrometheusText {
  std::vector<PrometheusSample> samples;  // in the text's order
  // Metric name -> its `# TYPE` (counter, gauge, histogram, summary, untyped).
  std::map<std::string, std::string> types;
  // Lines that are neither a comment, blank, nor a valid sample; they are
  // skipped. The first one's 1-based line number, 0 when none.
  int64_t bad_lines = 0;
  int64_t first_bad_line = 0;
};

// Parses `text`; never fails: a bad line is counted and skipped.
PrometheusText ParsePrometheusText(std::string_view text);

// The sum of the values of the samples named `name` (over all label sets),
// or nullopt when there is none.
std::optional<double> SumOf(const PrometheusText& text, std::string_view name);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_TELEMETRY_PROMETHEUS_TEXT_H_
