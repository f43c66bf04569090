#include "coordinator/config/name_hints.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace surge::coordinator {

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string lower = absl::AsciiStrToLower(std::string(word));
  // Levenshtein distance, one row at a time.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = above;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& candidate : candidates) {
    std::string normal = lower;
    for (char& c : normal) c = c == '-' ? '_' : c;  // a flag name written as a key
    size_t d = distance(normal, candidate);
    // "ttft" for "ttft_ms": a unit suffix left out.
    if (candidate.rfind(normal + "_", 0) == 0) d = std::min<size_t>(d, 1);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  const size_t limit = std::max<size_t>(2, lower.size() / 3);
  return best_distance <= limit ? best : std::string();
}

// AISBench's (and vLLM's) own names for what surge calls otherwise, with the
// hint printed for them. Keys of AISBench model configs that surge has no use
// for say so instead of "unknown".
const std::map<std::string, std::string>& ForeignKeyHints() {
  static const auto* hints = new std::map<std::string, std::string>{
      {"batch_size", "AISBench's batch_size is surge's max_concurrency (requests in flight)"},
      {"max_concurrency_per_worker", "surge's cap is max_concurrency over all workers"},
      {"max_out_len", "AISBench's max_out_len is surge's random_output_len (max_tokens)"},
      {"max_tokens", "surge's max_tokens per request is random_output_len"},
      {"output_len", "surge's output length is random_output_len"},
      {"input_len", "surge's input length is random_input_len"},
      {"host_ip",
       "AISBench's host_ip and host_port are one base_url in surge, e.g. "
       "base_url: http://127.0.0.1:8080"},
      {"host_port",
       "AISBench's host_ip and host_port are one base_url in surge, e.g. "
       "base_url: http://127.0.0.1:8080"},
      {"host",
       "vLLM's host and port are one base_url in surge, e.g. base_url: "
       "http://127.0.0.1:8000"},
      {"port",
       "vLLM's host and port are one base_url in surge, e.g. base_url: "
       "http://127.0.0.1:8000"},
      {"url", "surge's server address is base_url (scheme, host, port) plus endpoint (path)"},
      {"enable_ssl", "for https give base_url: https://... (and ca_cert_path if needed)"},
      {"api_key",
       "surge never reads the API key from a configuration: use api_key_file or "
       "$OPENAI_API_KEY"},
      {"generation_kwargs",
       "request body fields (temperature, top_p, ...) go in "
       "extra_body_json, e.g. extra_body_json: {temperature: 0}"},
      {"extra_body", "surge's key is extra_body_json"},
      {"path",
       "AISBench's path is the model's weights/tokenizer folder; surge does not load "
       "the model: give the served name as model, the dataset file as dataset_path"},
      {"tokenizer", "surge does not load a tokenizer; the model name sent is model"},
      {"retry", "surge does not retry: a failed request is recorded with its reason"},
      {"request_count", "surge's number of requests is num_prompts"},
      {"num_requests", "surge's number of requests is num_prompts"},
      {"dataset", "surge's keys are dataset_name and dataset_path"},
      {"abbr", "an AISBench-only key; surge names runs by model"},
      {"attr", "an AISBench-only key; remove it"},
      {"type", "an AISBench-only key; remove it"},
      {"trust_remote_code", "an AISBench-only key; surge does not load the model"},
      {"pred_postprocessor", "an AISBench-only key; surge does not score answers"},
      {"traffic_config", "surge's (and AISBench's) key is traffic_cfg"},
  };
  return *hints;
}

std::string ForeignNameHint(std::string_view name) {
  std::string key(name);
  for (char& ch : key) ch = ch == '-' ? '_' : ch;
  auto it = ForeignKeyHints().find(key);
  return it == ForeignKeyHints().end() ? std::string() : it->second;
}

}  // namespace surge::coordinator
