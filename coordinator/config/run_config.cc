#include "coordinator/config/run_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/target_checks.h"
#include "client/url.h"
#include "common/utf8.h"
#include "coordinator/plan/arrival_process.h"
#include "coordinator/plan/traffic.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

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

namespace {

// The built-in server's fault fractions by their configuration key.
std::array<std::pair<const char*, double>, 8> SimFaultFractions(
    const surge::v1::SimServerConfig& sim) {
  return {{
      {"sim_fault_429", sim.fault_429()},
      {"sim_fault_500", sim.fault_500()},
      {"sim_fault_503", sim.fault_503()},
      {"sim_fault_reset", sim.fault_reset()},
      {"sim_fault_malformed", sim.fault_malformed()},
      {"sim_fault_stall", sim.fault_stall()},
      {"sim_fault_split", sim.fault_split()},
      {"sim_fault_error_event", sim.fault_error_event()},
  }};
}

using surge::v1::RunConfig;

// Errors collected while reading one file, reported together. Unknown keys
// get a suggestion each; the list of allowed keys is added once at the end.
class Errors {
 public:
  void Add(const std::string& field, const std::string& value, const std::string& allowed) {
    lines_.push_back(absl::StrCat("  ", field, " = ", value, ": ", allowed));
  }
  // A line formatted elsewhere ("  <field> = <value>: ...").
  void AddRaw(std::string line) { lines_.push_back(std::move(line)); }
  // `key` (under `section`, "" = top level) is not a configuration key.
  void AddUnknownKey(const std::string& field, const std::string& value, const std::string& key,
                     const std::string& section);
  absl::Status ToStatus() const {
    if (lines_.empty()) return absl::OkStatus();
    std::vector<std::string> lines = lines_;
    if (unknown_keys_) lines.push_back(AllowedKeysLine());
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(lines, "\n")));
  }

 private:
  static std::string AllowedKeysLine();
  std::vector<std::string> lines_;
  bool unknown_keys_ = false;
};

std::string Show(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  if (node.IsScalar()) return absl::StrCat("\"", node.Scalar(), "\"");
  if (node.IsSequence()) return "a list";
  return "a mapping";
}

// Typed readers: on a wrong type they record an error naming the field.
bool ReadDouble(const YAML::Node& node, const std::string& field, Errors& errors, double* out) {
  double v;
  // YAML's own spellings of infinity (`request_rate: .inf`, R-INST); "inf"
  // and "infinity" are read by SimpleAtod. Each field's validator says
  // whether an infinite value is allowed.
  const std::string lower = node.IsScalar() ? absl::AsciiStrToLower(node.Scalar()) : "";
  if (lower == ".inf" || lower == "+.inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (lower == "-.inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (!node.IsScalar() || !absl::SimpleAtod(node.Scalar(), &v)) {
    errors.Add(field, Show(node), "must be a number");
    return false;
  }
  *out = v;
  return true;
}

bool ReadUint(const YAML::Node& node, const std::string& field, Errors& errors, uint64_t* out) {
  uint64_t v;
  const std::string s = node.IsScalar() ? node.Scalar() : "";
  if (!node.IsScalar() || s.empty() || s[0] == '-' || s[0] == '+' ||
      !absl::SimpleAtoi(s, &v)) {
    errors.Add(field, Show(node), "must be a whole number >= 0");
    return false;
  }
  *out = v;
  return true;
}

bool ReadString(const YAML::Node& node, const std::string& field, Errors& errors,
                std::string* out) {
  if (node.IsNull()) {  // "key:" with no value reads as empty
    out->clear();
    return true;
  }
  if (!node.IsScalar()) {
    errors.Add(field, Show(node), "must be a string");
    return false;
  }
  *out = node.Scalar();
  return true;
}

bool ReadBool(const YAML::Node& node, const std::string& field, Errors& errors, bool* out) {
  if (node.IsScalar()) {
    const std::string s = absl::AsciiStrToLower(node.Scalar());
    if (s == "true" || s == "yes" || s == "on") return *out = true, true;
    if (s == "false" || s == "no" || s == "off") return *out = false, true;
  }
  errors.Add(field, Show(node), "must be true or false");
  return false;
}

// A YAML value as JSON (for extra_body_json given as a mapping): plain
// scalars by the YAML core schema (null, true/false, integers, floats),
// quoted scalars as strings.
nlohmann::json YamlToJson(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& item : node) object[item.first.as<std::string>()] = YamlToJson(item.second);
    return object;
  }
  if (node.IsSequence()) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& item : node) array.push_back(YamlToJson(item));
    return array;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted
  const std::string lower = absl::AsciiStrToLower(s);
  if (lower == "null" || s == "~" || s.empty()) return nullptr;
  if (lower == "true") return true;
  if (lower == "false") return false;
  int64_t i;
  if (absl::SimpleAtoi(s, &i)) return i;
  double d;
  if (s.find_first_not_of("0123456789+-.eE") == std::string::npos && absl::SimpleAtod(s, &d)) {
    return d;
  }
  return s;
}

using Setter = std::function<void(const YAML::Node&, const std::string&, Errors&, RunConfig*)>;

Setter Double(std::function<void(RunConfig*, double)> set) {
  return [set](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
    double v;
    if (ReadDouble(n, f, e, &v)) set(c, v);
  };
}
Setter Uint(std::function<void(RunConfig*, uint64_t)> set) {
  return [set](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
    uint64_t v;
    if (ReadUint(n, f, e, &v)) set(c, v);
  };
}
Setter String(std::function<void(RunConfig*, const std::string&)> set) {
  return [set](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
    std::string v;
    if (ReadString(n, f, e, &v)) set(c, v);
  };
}

// traffic_cfg.stages, .spikes and .mmpp_states (docs/TRAFFIC.md): a list of
// mappings whose keys are the item message's field names in config.proto
// (TrafficStage, TrafficSpike, MmppState); the file's list replaces any
// earlier one. Each bad item or key is named with its index, e.g.
// "traffic_cfg.stages[1].duration_s".
void ReadTrafficList(const YAML::Node& node, const std::string& field, Errors& errors,
                     RunConfig* c) {
  namespace pb = google::protobuf;
  pb::Message* traffic = c->mutable_traffic_cfg();
  const pb::FieldDescriptor* list =
      traffic->GetDescriptor()->FindFieldByName(field.substr(field.rfind('.') + 1));
  traffic->GetReflection()->ClearField(traffic, list);
  if (node.IsNull()) return;
  const pb::Descriptor* item_type = list->message_type();
  std::vector<std::string> names;
  for (int f = 0; f < item_type->field_count(); ++f) names.push_back(item_type->field(f)->name());
  if (!node.IsSequence()) {
    errors.Add(field, Show(node),
               absl::StrCat("must be a list of mappings with keys ", absl::StrJoin(names, ", ")));
    return;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item_field = absl::StrCat(field, "[", i, "]");
    const YAML::Node item = node[i];
    pb::Message* msg = traffic->GetReflection()->AddMessage(traffic, list);
    if (!item.IsMap()) {
      errors.Add(item_field, Show(item),
                 absl::StrCat("must be a mapping with keys ", absl::StrJoin(names, ", ")));
      continue;
    }
    for (const auto& kv : item) {
      const std::string key = kv.first.as<std::string>();
      const std::string path = absl::StrCat(item_field, ".", key);
      const pb::FieldDescriptor* f = item_type->FindFieldByName(key);
      if (f == nullptr) {
        const std::string guess = DidYouMean(key, names);
        errors.Add(path, Show(kv.second),
                   guess.empty()
                       ? absl::StrCat("unknown key (allowed: ", absl::StrJoin(names, ", "), ")")
                       : absl::StrCat("unknown key; did you mean `", guess, "`?"));
        continue;
      }
      const pb::Reflection* r = msg->GetReflection();
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
        double v;
        if (ReadDouble(kv.second, path, errors, &v)) r->SetDouble(msg, f, v);
      } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64) {
        uint64_t v;
        if (ReadUint(kv.second, path, errors, &v)) r->SetUInt64(msg, f, v);
      } else {
        std::string v;
        if (ReadString(kv.second, path, errors, &v)) r->SetString(msg, f, v);
      }
    }
  }
}

const std::map<std::string, Setter>& TrafficKeys() {
  static const auto* keys = new std::map<std::string, Setter>{
      {"burstiness",
       Double([](RunConfig* c, double v) { c->mutable_traffic_cfg()->set_burstiness(v); })},
      {"ramp_up_strategy", String([](RunConfig* c, const std::string& v) {
         c->mutable_traffic_cfg()->set_ramp_up_strategy(v);
       })},
      {"ramp_up_start_rps",
       Double([](RunConfig* c, double v) { c->mutable_traffic_cfg()->set_ramp_up_start_rps(v); })},
      {"ramp_up_end_rps",
       Double([](RunConfig* c, double v) { c->mutable_traffic_cfg()->set_ramp_up_end_rps(v); })},
      // Composed traffic (docs/TRAFFIC.md).
      {"sampler", String([](RunConfig* c, const std::string& v) {
         c->mutable_traffic_cfg()->set_sampler(v);
       })},
      {"stages", ReadTrafficList},
      {"spikes", ReadTrafficList},
      {"mmpp_states", ReadTrafficList},
  };
  return *keys;
}

const std::map<std::string, Setter>& TopKeys() {
  static const auto*
      keys =
          new std::map<std::string, Setter>{
              {"request_rate", Double([](RunConfig* c, double v) { c->set_request_rate(v); })},
              {"num_prompts", Uint([](RunConfig* c, uint64_t v) { c->set_num_prompts(v); })},
              {"max_concurrency",
               Uint([](RunConfig* c, uint64_t v) { c->set_max_concurrency(v); })},
              {"seed", Uint([](RunConfig* c, uint64_t v) { c->set_seed(v); })},
              {"workers", Uint([](RunConfig* c, uint64_t v) {
                 c->set_workers(static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30)));
               })},
              {"abort_after_connect_failures", Uint([](RunConfig* c, uint64_t v) {
                 c->set_abort_after_connect_failures(
                     static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30)));
               })},
              {"assign", String([](RunConfig* c, const std::string& v) { c->set_assign(v); })},
              {"late_policy",
               String([](RunConfig* c, const std::string& v) { c->set_late_policy(v); })},
              {"late_threshold_ms",
               Double([](RunConfig* c, double v) { c->set_late_threshold_ms(v); })},
              {"catch_up_rps", Double([](RunConfig* c, double v) { c->set_catch_up_rps(v); })},
              {"lateness_alarm_ms",
               Double([](RunConfig* c, double v) { c->set_lateness_alarm_ms(v); })},
              {"stop_on_alarm",
               [](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
                 bool v;
                 if (ReadBool(n, f, e, &v)) c->set_stop_on_alarm(v);
               }},
              {"workers_force",
               [](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
                 bool v;
                 if (ReadBool(n, f, e, &v)) c->set_workers_force(v);
               }},
              {"output_dir",
               String([](RunConfig* c, const std::string& v) { c->set_output_dir(v); })},
              {"model", String([](RunConfig* c, const std::string& v) {
                 c->mutable_target()->set_model(v);
               })},
              {"base_url", String([](RunConfig* c, const std::string& v) {
                 c->mutable_target()->set_base_url(v);
               })},
              {"endpoint", String([](RunConfig* c, const std::string& v) {
                 c->mutable_target()->set_endpoint(v);
               })},
              {"stream",
               [](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
                 bool v;
                 if (ReadBool(n, f, e, &v)) c->mutable_target()->set_stream(v);
               }},
              {"request_timeout_s", Double([](RunConfig* c, double v) {
                 c->mutable_target()->set_request_timeout_s(v);
               })},
              {"dataset_name", String([](RunConfig* c, const std::string& v) {
                 c->mutable_dataset()->set_dataset_name(v);
               })},
              {"dataset_path",
               String([](RunConfig* c,
                         const std::string& v) { c->mutable_dataset()->set_dataset_path(v); })},
              {"random_input_len",
               Uint(
                   [](RunConfig* c, uint64_t v) {
                     c->mutable_dataset()->set_random_input_len(
                         static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30)));
                   })},
                  {"random_output_len", Uint([](RunConfig* c, uint64_t v) {
                     c->mutable_dataset()->set_random_output_len(
                         static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30)));
                   })},
                  // Datasets (R-MET-3, docs/DATASETS.md): synthetic length draws, replay.
                  {"random_len_dist", String([](RunConfig* c, const std::string& v) {
                     c->mutable_dataset()->set_random_len_dist(v);
                   })},
                  {"random_range_ratio", Double([](RunConfig* c, double v) {
                     c->mutable_dataset()->set_random_range_ratio(v);
                   })},
                  {"random_len_stddev", Double([](RunConfig* c, double v) {
                     c->mutable_dataset()->set_random_len_stddev(v);
                   })},
                  {"random_zipf_s", Double([](RunConfig* c, double v) {
                     c->mutable_dataset()->set_random_zipf_s(v);
                   })},
                  {"trace_replay",
                   [](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
                     bool v;
                     if (ReadBool(n, f, e, &v)) c->mutable_dataset()->set_trace_replay(v);
                   }},
                  {"trace_time_scale", Double([](RunConfig* c, double v) {
                     c->mutable_dataset()->set_trace_time_scale(v);
                   })},
                  {"sim_ttft_ms",
                   Double([](RunConfig* c, double v) { c->mutable_sim_server()->set_ttft_ms(v); })},
                  {"sim_itl_ms",
                   Double([](RunConfig* c, double v) { c->mutable_sim_server()->set_itl_ms(v); })},
                  // Target options of R-REQ-1 (the API key itself never: only its file).
                  {"ca_cert_path", String([](RunConfig* c, const std::string& v) {
                     c->mutable_target()->set_ca_cert_path(v);
                   })},
                  {"insecure_skip_verify",
                   [](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
                     bool v;
                     if (ReadBool(n, f, e, &v)) c->mutable_target()->set_insecure_skip_verify(v);
                   }},
                  {"api_key_file", String([](RunConfig* c, const std::string& v) {
                     c->mutable_target()->set_api_key_file(v);
                   })},
                  {"headers",  // a list of "Name: value" strings
                   [](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
                     if (n.IsNull()) return;
                     if (!n.IsSequence()) {
                       e.Add(f, Show(n), "must be a list of \"Name: value\" strings");
                       return;
                     }
                     c->mutable_target()->clear_headers();
                     for (size_t i = 0; i < n.size(); ++i) {
                       std::string v;
                       if (ReadString(n[i], absl::StrCat(f, "[", i, "]"), e, &v)) {
                         c->mutable_target()->add_headers(v);
                       }
                     }
                   }},
                  {"extra_body_json",  // JSON text, or a mapping written as YAML
                   [](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
                     if (n.IsMap()) {
                       c->mutable_target()->set_extra_body_json(YamlToJson(n).dump());
                       return;
                     }
                     std::string v;
                     if (ReadString(n, f, e, &v)) c->mutable_target()->set_extra_body_json(v);
                   }},
                  // Built-in server fault injection (fractions of requests).
                  {"sim_fault_429", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_429(v);
                   })},
                  {"sim_fault_500", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_500(v);
                   })},
                  {"sim_fault_503", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_503(v);
                   })},
                  {"sim_fault_reset", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_reset(v);
                   })},
                  {"sim_fault_malformed", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_malformed(v);
                   })},
                  {"sim_fault_stall", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_stall(v);
                   })},
                  {"sim_fault_split", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_split(v);
                   })},
                  {"sim_fault_error_event", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_error_event(v);
                   })},
                  {"sim_fault_after_tokens", Uint([](RunConfig* c, uint64_t v) {
                     c->mutable_sim_server()->set_fault_after_tokens(
                         static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30)));
                   })},
                  {"sim_fault_stall_ms", Double([](RunConfig* c, double v) {
                     c->mutable_sim_server()->set_fault_stall_ms(v);
                   })},
                  {"sim_fault_seed", Uint([](RunConfig* c, uint64_t v) {
                     c->mutable_sim_server()->set_fault_seed(v);
                   })},
              };
  return *keys;
}

std::string KeyList(const std::map<std::string, Setter>& keys) {
  std::vector<std::string> names;
  for (const auto& [k, _] : keys) names.push_back(k);
  return absl::StrJoin(names, ", ");
}

std::vector<std::string> KeyNames(const std::map<std::string, Setter>& keys) {
  std::vector<std::string> names;
  for (const auto& [k, _] : keys) names.push_back(k);
  return names;
}

const std::vector<std::string>& GoodputKeys() {
  static const auto* keys = new std::vector<std::string>{"e2el_ms", "tpot_ms", "ttft_ms"};
  return *keys;
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
      {"burstiness", "burstiness belongs under traffic_cfg (AISBench's layout)"},
      {"ramp_up_strategy", "ramp_up_strategy belongs under traffic_cfg (AISBench's layout)"},
      {"ramp_up_start_rps", "ramp_up_start_rps belongs under traffic_cfg (AISBench's layout)"},
      {"ramp_up_end_rps", "ramp_up_end_rps belongs under traffic_cfg (AISBench's layout)"},
      {"traffic_config", "surge's (and AISBench's) key is traffic_cfg"},
  };
  return *hints;
}

}  // namespace

std::string ForeignNameHint(std::string_view name) {
  std::string key(name);
  for (char& ch : key) ch = ch == '-' ? '_' : ch;
  auto it = ForeignKeyHints().find(key);
  return it == ForeignKeyHints().end() ? std::string() : it->second;
}

namespace {

void Errors::AddUnknownKey(const std::string& field, const std::string& value,
                           const std::string& key, const std::string& section) {
  unknown_keys_ = true;
  std::vector<std::string> candidates;
  if (section == "traffic_cfg") {
    candidates = KeyNames(TrafficKeys());
  } else if (section == "goodput") {
    candidates = GoodputKeys();
  } else {
    candidates = KeyNames(TopKeys());
    candidates.push_back("traffic_cfg");
    candidates.push_back("goodput");
    if (auto it = ForeignKeyHints().find(key); it != ForeignKeyHints().end()) {
      Add(field, value, absl::StrCat("unknown key; ", it->second));
      return;
    }
  }
  const std::string guess = DidYouMean(key, candidates);
  if (guess.empty() && section.empty()) {
    // A misspelt traffic key at the top level (vLLM's flat layout).
    if (const std::string traffic = DidYouMean(key, KeyNames(TrafficKeys())); !traffic.empty()) {
      Add(field, value,
          absl::StrCat("unknown key; did you mean `", traffic, "` (under traffic_cfg)?"));
      return;
    }
  }
  Add(field, value,
      guess.empty() ? std::string("unknown key")
                    : absl::StrCat("unknown key; did you mean `", guess, "`?"));
}

std::string Errors::AllowedKeysLine() {
  return absl::StrCat("  (allowed keys: ", KeyList(TopKeys()), ", traffic_cfg: {",
                      KeyList(TrafficKeys()), "}, goodput: {", absl::StrJoin(GoodputKeys(), ", "),
                      "})");
}

std::string Num(double v) { return absl::StrCat(v); }

// The synthetic length parameters set to something other than "not given":
// random_range_ratio > 0, random_len_stddev > 0, random_zipf_s present.
std::vector<std::string> LengthParametersGiven(const surge::v1::DatasetConfig& d) {
  std::vector<std::string> given;
  if (d.random_range_ratio() != 0) given.push_back("random_range_ratio");
  if (d.random_len_stddev() != 0) given.push_back("random_len_stddev");
  if (d.has_random_zipf_s()) given.push_back("random_zipf_s");
  return given;
}

bool IsSynthetic(const surge::v1::DatasetConfig& d) {
  return d.dataset_name() == "synthetic" || d.dataset_name() == "random";
}

// True for an https base_url (the TLS options' only use).
bool IsHttps(const surge::v1::TargetConfig& target) {
  return absl::StartsWithIgnoreCase(target.base_url(), "https://");
}

}  // namespace

RunConfig DefaultRunConfig() {
  RunConfig c;
  c.set_request_rate(0);
  c.set_num_prompts(1000);
  c.set_seed(0);
  c.set_output_dir("outputs/default");
  c.set_abort_after_connect_failures(10);
  c.set_lateness_alarm_ms(10);
  c.set_assign("round-robin");
  c.set_late_policy("send");
  c.set_late_threshold_ms(10);
  c.mutable_target()->set_endpoint("/v1/chat/completions");
  c.mutable_target()->set_stream(true);
  c.mutable_target()->set_request_timeout_s(600);
  c.mutable_dataset()->set_dataset_name("synthetic");
  c.mutable_dataset()->set_random_input_len(1024);
  c.mutable_dataset()->set_random_output_len(128);
  c.mutable_sim_server()->set_ttft_ms(20);
  c.mutable_sim_server()->set_itl_ms(2);
  c.mutable_sim_server()->set_fault_after_tokens(1);
  c.mutable_sim_server()->set_fault_stall_ms(1000);
  return c;
}

std::vector<std::string> ApplyImpliedOptions(RunConfig* config) {
  std::vector<std::string> notes;
  auto* d = config->mutable_dataset();
  if (!IsSynthetic(*d) || !d->random_len_dist().empty()) return notes;
  const std::vector<std::string> given = LengthParametersGiven(*d);
  if (given.size() != 1) return notes;  // none, or ambiguous (refused by validation)
  const std::string dist = given[0] == "random_range_ratio"  ? "uniform"
                           : given[0] == "random_len_stddev" ? "gaussian"
                                                             : "zipf";
  d->set_random_len_dist(dist);
  std::string flag = given[0];
  for (char& ch : flag) ch = ch == '_' ? '-' : ch;
  notes.push_back(absl::StrCat("--", flag, " implies --random-len-dist ", dist,
                               " (no distribution was named)"));
  return notes;
}

absl::Status LoadYamlConfig(const std::string& given_path, RunConfig* config) {
  YAML::Node root;
  std::error_code ec;
  // A run folder stands for its run_config.json.
  const std::string path = std::filesystem::is_directory(given_path, ec) &&
                                   std::filesystem::is_regular_file(
                                       std::filesystem::path(given_path) / "run_config.json", ec)
                               ? (std::filesystem::path(given_path) / "run_config.json").string()
                               : given_path;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid configuration:\n  --config = \"", path,
        std::filesystem::exists(path, ec) ? "\": is not a regular file (a YAML file is needed)"
                                          : "\": no such file"));
  }
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n  --config = \"", path, "\": cannot read the file"));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid configuration:\n  --config = \"", path,
                                                   "\": not valid YAML: ", e.what()));
  }
  Errors errors;
  if (root.IsNull()) return absl::OkStatus();  // an empty file sets nothing
  if (!root.IsMap()) {
    errors.Add("(top level)", Show(root), "must be a mapping of configuration keys");
    return errors.ToStatus();
  }
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    if (key == "goodput") {
      if (item.second.IsNull()) continue;
      if (!item.second.IsMap()) {
        errors.Add("goodput", Show(item.second), "must be a mapping of ttft_ms, tpot_ms, e2el_ms");
        continue;
      }
      for (const auto& sub : item.second) {
        const std::string sub_key = sub.first.as<std::string>();
        const std::string field = absl::StrCat("goodput.", sub_key);
        double v;
        if (sub_key != "ttft_ms" && sub_key != "tpot_ms" && sub_key != "e2el_ms") {
          errors.AddUnknownKey(field, Show(sub.second), sub_key, "goodput");
        } else if (ReadDouble(sub.second, field, errors, &v)) {
          auto* g = config->mutable_goodput();
          if (sub_key == "ttft_ms") g->set_ttft_ms(v);
          if (sub_key == "tpot_ms") g->set_tpot_ms(v);
          if (sub_key == "e2el_ms") g->set_e2el_ms(v);
        }
      }
      continue;
    }
    if (key == "traffic_cfg") {
      if (item.second.IsNull()) continue;
      if (!item.second.IsMap()) {
        errors.Add("traffic_cfg", Show(item.second), "must be a mapping");
        continue;
      }
      for (const auto& sub : item.second) {
        const std::string sub_key = sub.first.as<std::string>();
        const std::string field = absl::StrCat("traffic_cfg.", sub_key);
        auto it = TrafficKeys().find(sub_key);
        if (it == TrafficKeys().end()) {
          errors.AddUnknownKey(field, Show(sub.second), sub_key, "traffic_cfg");
          continue;
        }
        it->second(sub.second, field, errors, config);
      }
      continue;
    }
    auto it = TopKeys().find(key);
    if (it == TopKeys().end()) {
      errors.AddUnknownKey(key, Show(item.second), key, "");
      continue;
    }
    it->second(item.second, key, errors, config);
  }
  return errors.ToStatus();
}

absl::Status ValidateRunConfig(const RunConfig& c) {
  Errors errors;
  auto non_negative = [&](const std::string& field, const std::string& flag, double v) {
    if (!std::isfinite(v) || v < 0) {
      errors.Add(field, Num(v), absl::StrCat("must be a finite number >= 0 (flag ", flag, ")"));
    }
  };
  // request_rate: a finite rate >= 0, or +inf (vLLM's "all at once": instant
  // mode, R-INST).
  if (std::isnan(c.request_rate()) || c.request_rate() < 0) {
    errors.Add("request_rate", Num(c.request_rate()),
               "must be a number >= 0, or inf for all requests at once (instant mode) "
               "(flag --request-rate)");
  }
  const auto& t = c.traffic_cfg();
  non_negative("traffic_cfg.burstiness", "--burstiness", t.burstiness());
  if (t.has_ramp_up_start_rps()) {
    non_negative("traffic_cfg.ramp_up_start_rps", "--ramp-up-start-rps", t.ramp_up_start_rps());
  }
  if (t.has_ramp_up_end_rps()) {
    non_negative("traffic_cfg.ramp_up_end_rps", "--ramp-up-end-rps", t.ramp_up_end_rps());
  }
  const std::string& s = t.ramp_up_strategy();
  if (!(s.empty() || s == "none" || s == "linear" || s == "exponential")) {
    errors.Add("traffic_cfg.ramp_up_strategy", absl::StrCat("\"", s, "\""),
               "must be \"linear\", \"exponential\" or empty/\"none\" (flag --ramp-up-strategy)");
  }
  // Composed traffic: stages, spikes, sampler, mmpp states (docs/TRAFFIC.md).
  if (!c.dataset().trace_replay()) {
    for (std::string& line : TrafficConfigProblems(c)) errors.AddRaw(std::move(line));
  }
  // R-RAMP + R-INST: a configured ramp that is inactive must not fall back to
  // instant mode (one burst of every request).
  if (!c.dataset().trace_replay()) {
    if (absl::Status s = CheckTraffic(ResolveTraffic(c), c.num_prompts()); !s.ok()) {
      errors.AddRaw(std::string(absl::StripPrefix(s.message(), "invalid configuration:\n")));
    }
  }
  if (c.num_prompts() < 1) {
    errors.Add("num_prompts", absl::StrCat(c.num_prompts()), "must be >= 1 (flag --num-prompts)");
  }
  if (c.workers() > 1024) {
    errors.Add("workers", absl::StrCat(c.workers()),
               "must be 0 (one per core) to 1024 (flag --workers)");
  }
  if (!(c.assign().empty() || c.assign() == "round-robin" || c.assign() == "least-loaded")) {
    errors.Add("assign", absl::StrCat("\"", ToValidUtf8(c.assign()), "\""),
               "must be \"round-robin\" (default) or \"least-loaded\" (flag --assign)");
  }
  // Late-send policy (docs/DESIGN.md "Late-send policy").
  const std::string& late = c.late_policy();
  if (!(late.empty() || late == "send" || late == "skip" || late == "cap")) {
    errors.Add("late_policy", absl::StrCat("\"", ToValidUtf8(late), "\""),
               "must be \"send\" (default), \"skip\" or \"cap\" (flag --late-policy)");
  }
  if (c.has_late_threshold_ms() &&
      !(std::isfinite(c.late_threshold_ms()) && c.late_threshold_ms() > 0)) {
    errors.Add("late_threshold_ms", Num(c.late_threshold_ms()),
               "must be a number of milliseconds > 0 (default 10) (flag --late-threshold-ms)");
  }
  if (c.has_catch_up_rps()) {
    if (late != "cap") {
      errors.Add("catch_up_rps", Num(c.catch_up_rps()),
                 absl::StrCat("is used only with late_policy \"cap\", not \"",
                              late.empty() ? "send" : ToValidUtf8(late),
                              "\" (flags --catch-up-rps, --late-policy cap)"));
    } else if (!(std::isfinite(c.catch_up_rps()) && c.catch_up_rps() > 0)) {
      errors.Add("catch_up_rps", Num(c.catch_up_rps()),
                 "must be a finite rate > 0, requests/s (flag --catch-up-rps)");
    }
  } else if (late == "cap") {
    errors.Add("catch_up_rps", "(not set)",
               "is required with late_policy \"cap\": the fastest rate, requests/s, at which "
               "late requests are released (flag --catch-up-rps)");
  }
  if (c.output_dir().empty()) {
    errors.Add("output_dir", "\"\"", "must be a folder path (flag --output-dir)");
  }
  const auto& target = c.target();
  // These texts reach the workers inside proto messages, whose strings must
  // be valid UTF-8 (a worker could not decode its Welcome otherwise).
  auto utf8 = [&](const std::string& field, const std::string& v) {
    if (!IsValidUtf8(v)) {
      errors.Add(field, absl::StrCat("\"", ToValidUtf8(v), "\""),
                 "must be valid UTF-8 text (shown with U+FFFD for the bad bytes)");
    }
  };
  utf8("model", target.model());
  utf8("endpoint", target.endpoint());
  utf8("base_url", target.base_url());
  utf8("extra_body_json", target.extra_body_json());
  utf8("ca_cert_path", target.ca_cert_path());
  utf8("api_key_file", target.api_key_file());
  for (int i = 0; i < target.headers_size(); ++i) {
    utf8(absl::StrCat("headers[", i, "]"), target.headers(i));
  }
  const std::string& url = target.base_url();
  if (!url.empty()) {
    // The same parser the workers use, so a URL that passes here connects.
    if (absl::StatusOr<surge::client::ParsedUrl> parsed = surge::client::ParseBaseUrl(url);
        !parsed.ok()) {
      errors.Add("base_url", absl::StrCat("\"", url, "\""),
                 absl::StrCat(std::string(parsed.status().message()), " (flag --base-url)"));
    }
  }
  // Files the workers will read must exist now, before anything starts; their
  // contents (the API key) are read by the workers only.
  auto regular_file = [&](const std::string& field, const std::string& flag,
                          const std::string& path) {
    std::error_code ec;
    if (!path.empty() && !std::filesystem::is_regular_file(path, ec)) {
      errors.Add(field, absl::StrCat("\"", path, "\""),
                 absl::StrCat("must be a readable file (flag ", flag, ")"));
    }
  };
  regular_file("api_key_file", "--api-key-file", target.api_key_file());
  regular_file("ca_cert_path", "--ca-cert", target.ca_cert_path());
  const std::string& ep = target.endpoint();
  auto ends_with = [](const std::string& a, const std::string& b) {
    return a.size() >= b.size() && a.compare(a.size() - b.size(), b.size(), b) == 0;
  };
  if (ep.empty() || ep[0] != '/' || !ends_with(ep, "/completions")) {
    errors.Add("endpoint", absl::StrCat("\"", ep, "\""),
               "must be an OpenAI-compatible path ending in /chat/completions or /completions, "
               "e.g. /v1/chat/completions (flag --endpoint)");
  }
  if (!std::isfinite(c.lateness_alarm_ms()) || c.lateness_alarm_ms() < 0) {
    errors.Add("lateness_alarm_ms", Num(c.lateness_alarm_ms()),
               "must be a finite number >= 0 ms, 0 = no lateness alarm (flag --lateness-alarm-ms)");
  }
  if (c.stop_on_alarm() && c.has_lateness_alarm_ms() && c.lateness_alarm_ms() == 0) {
    errors.Add("stop_on_alarm", "true",
               "needs a lateness alarm: lateness_alarm_ms is 0 (off); give it a threshold > 0 "
               "(flag --lateness-alarm-ms) or leave --stop-on-alarm out");
  }
  if (!std::isfinite(target.request_timeout_s()) || target.request_timeout_s() < 0) {
    errors.Add("request_timeout_s", Num(target.request_timeout_s()),
               "must be a finite number >= 0 seconds, 0 = no timeout (flag --request-timeout-s)");
  }
  const auto& d = c.dataset();
  const std::string& name = d.dataset_name();
  if (name != "synthetic" && name != "random" && name != "jsonl" && name != "sharegpt" &&
      name != "mooncake") {
    errors.Add("dataset_name", absl::StrCat("\"", name, "\""),
               "must be \"synthetic\" (alias \"random\"), \"jsonl\", \"sharegpt\" or "
               "\"mooncake\" (flag --dataset-name)");
  }
  if ((name == "jsonl" || name == "sharegpt" || name == "mooncake") && d.dataset_path().empty()) {
    const char* file = name == "jsonl"      ? "a JSONL file of prompts"
                       : name == "sharegpt" ? "a ShareGPT JSON file"
                                            : "a Mooncake trace JSONL file";
    errors.Add("dataset_path", "\"\"",
               absl::StrCat("must name ", file, " when dataset_name is \"", name,
                            "\" (flag --dataset-path)"));
  }
  if (!d.dataset_path().empty()) {
    if (name == "synthetic" || name == "random") {
      errors.Add("dataset_path", absl::StrCat("\"", d.dataset_path(), "\""),
                 absl::StrCat("is not read by dataset_name \"", name,
                              "\"; set dataset_name to jsonl, sharegpt or mooncake "
                              "(flag --dataset-name)"));
    }
  }
  // Lengths: 1 .. 16,777,216 tokens (2^24, the Mooncake reader's bound): a
  // prompt of that many tokens is already 64 MB of text.
  constexpr uint32_t kMaxTokens = 1u << 24;
  if (d.random_input_len() < 1 || d.random_input_len() > kMaxTokens) {
    errors.Add("random_input_len", absl::StrCat(d.random_input_len()),
               "must be 1..16777216 tokens (flag --random-input-len)");
  }
  if (d.random_output_len() < 1 || d.random_output_len() > kMaxTokens) {
    errors.Add("random_output_len", absl::StrCat(d.random_output_len()),
               "must be 1..16777216 tokens (flag --random-output-len)");
  }
  const std::string& dist = d.random_len_dist();
  if (!(dist.empty() || dist == "fixed" || dist == "uniform" || dist == "gaussian" ||
        dist == "zipf")) {
    errors.Add("random_len_dist", absl::StrCat("\"", dist, "\""),
               "must be \"fixed\", \"uniform\", \"gaussian\" or \"zipf\" (flag --random-len-dist)");
  }
  if (!(d.random_range_ratio() >= 0 && d.random_range_ratio() < 1)) {
    errors.Add("random_range_ratio", Num(d.random_range_ratio()),
               "must be a number in [0, 1) (flag --random-range-ratio)");
  }
  non_negative("random_len_stddev", "--random-len-stddev", d.random_len_stddev());
  if (d.has_random_zipf_s() && !(std::isfinite(d.random_zipf_s()) && d.random_zipf_s() > 0)) {
    errors.Add("random_zipf_s", Num(d.random_zipf_s()),
               "must be a finite number > 0 (flag --random-zipf-s)");
  }
  // A distribution's parameter with another distribution named explicitly:
  // which one was meant is unclear, so it is refused (given alone, the
  // parameter implies its distribution: ApplyImpliedOptions).
  const bool synthetic_set = name == "synthetic" || name == "random";
  if (synthetic_set && (dist.empty() || dist == "fixed" || dist == "uniform" ||
                        dist == "gaussian" || dist == "zipf")) {
    std::vector<std::string> given = LengthParametersGiven(d);
    if (dist.empty() && given.size() > 1) {
      errors.Add("random_len_dist", "\"\"",
                 absl::StrCat("parameters of different distributions are given (",
                              absl::StrJoin(given, ", "),
                              "); name the one meant (flag --random-len-dist)"));
    }
    for (const auto& [param, owner] :
         std::vector<std::pair<std::string, std::string>>{{"random_range_ratio", "uniform"},
                                                          {"random_len_stddev", "gaussian"},
                                                          {"random_zipf_s", "zipf"}}) {
      if (!dist.empty() && dist != owner &&
          std::find(given.begin(), given.end(), param) != given.end()) {
        std::string flag = param;
        for (char& ch : flag) ch = ch == '_' ? '-' : ch;
        const double v = param == "random_range_ratio"  ? d.random_range_ratio()
                         : param == "random_len_stddev" ? d.random_len_stddev()
                                                        : d.random_zipf_s();
        errors.Add(
            param, Num(v),
            absl::StrCat("only shapes the ", owner, " distribution, but random_len_dist is \"",
                         dist, "\"; give --random-len-dist ", owner, " or drop --", flag));
      }
    }
  }
  if (d.trace_replay() && name != "mooncake") {
    errors.Add("trace_replay", "true",
               absl::StrCat("only the \"mooncake\" dataset has timestamps to replay, not \"",
                            name, "\" (flag --trace-replay)"));
  }
  if (d.has_trace_time_scale() &&
      !(std::isfinite(d.trace_time_scale()) && d.trace_time_scale() > 0)) {
    errors.Add("trace_time_scale", Num(d.trace_time_scale()),
               "must be a finite number > 0 (flag --trace-time-scale)");
  }
  if (c.goodput().has_ttft_ms()) non_negative("goodput.ttft_ms", "--goodput ttft:MS", c.goodput().ttft_ms());
  if (c.goodput().has_tpot_ms()) non_negative("goodput.tpot_ms", "--goodput tpot:MS", c.goodput().tpot_ms());
  if (c.goodput().has_e2el_ms()) non_negative("goodput.e2el_ms", "--goodput e2el:MS", c.goodput().e2el_ms());
  non_negative("sim_ttft_ms", "--sim-ttft-ms", c.sim_server().ttft_ms());
  non_negative("sim_itl_ms", "--sim-itl-ms", c.sim_server().itl_ms());
  // R-REQ-1 target options: the same checks as the HTTP client's.
  for (int i = 0; i < target.headers_size(); ++i) {
    absl::StatusOr<surge::client::HeaderLine> header =
        surge::client::ParseHeaderLine(target.headers(i));
    if (!header.ok()) {
      // Only the name is shown: a value may be a secret.
      const std::string& line = target.headers(i);
      errors.Add(absl::StrCat("headers[", i, "]"),
                 absl::StrCat("\"", line.substr(0, line.find(':')),
                              line.find(':') == std::string::npos ? "" : ": ...", "\""),
                 absl::StrCat(header.status().message(), " (flag --header)"));
    }
  }
  absl::StatusOr<nlohmann::json> extra = surge::client::ParseExtraBody(target.extra_body_json());
  if (!extra.ok()) {
    const std::string& text = target.extra_body_json();
    errors.Add("extra_body_json",
               absl::StrCat("\"", text.substr(0, 80), text.size() > 80 ? "..." : "", "\""),
               absl::StrCat(extra.status().message(), " (flag --extra-body)"));
  }
  const auto fractions = SimFaultFractions(c.sim_server());
  double fault_sum = 0;
  for (const auto& [field, fraction] : fractions) {
    fault_sum += fraction;
    if (!(fraction >= 0 && fraction <= 1)) {
      std::string flag(field);
      for (char& ch : flag) ch = ch == '_' ? '-' : ch;
      errors.Add(field, Num(fraction),
                 absl::StrCat("must be a fraction in [0, 1] (flag --", flag, ")"));
    }
  }
  if (fault_sum > 1 + 1e-9) {
    errors.Add("sim_fault_*", Num(fault_sum),
               "the fault fractions must add up to at most 1 (one fault per request)");
  }
  non_negative("sim_fault_stall_ms", "--sim-fault-stall-ms", c.sim_server().fault_stall_ms());
  return errors.ToStatus();
}

}  // namespace surge::coordinator

namespace surge::coordinator {

std::vector<std::string> ConfigWarnings(const RunConfig& c) {
  std::vector<std::string> warnings;
  const auto& target = c.target();
  // base_url's path is put before the endpoint: ".../v1" + "/v1/chat/..."
  // requests "/v1/v1/chat/...". Warned, not changed: the URL is the user's.
  if (!target.base_url().empty()) {
    absl::StatusOr<surge::client::ParsedUrl> url = surge::client::ParseBaseUrl(target.base_url());
    const std::string& ep = target.endpoint();
    if (url.ok() && !url->path_prefix.empty() && ep.size() > 1) {
      const std::string& prefix = url->path_prefix;
      const std::string last_segment = prefix.substr(prefix.rfind('/'));
      const std::string first_segment = ep.substr(0, ep.find('/', 1));
      if (last_segment.size() > 1 && last_segment == first_segment) {
        std::string base = target.base_url();
        while (!base.empty() && base.back() == '/') base.pop_back();
        warnings.push_back(absl::StrCat(
            "base_url \"", target.base_url(), "\" ends in ", last_segment, " and endpoint \"", ep,
            "\" starts with it: every request goes to ", base, ep,
            " (surge puts the endpoint "
            "after base_url's path); drop ",
            last_segment, " from base_url (flag --base-url) if that is not meant"));
      }
    }
  }
  // Overrides of surge's own request fields that are allowed, but change
  // what the run measures (ParseExtraBody refuses model, stream, messages,
  // prompt).
  absl::StatusOr<nlohmann::json> extra = surge::client::ParseExtraBody(target.extra_body_json());
  if (extra.ok() && extra->is_object()) {
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {
      if (extra->contains(key)) {
        warnings.push_back(absl::StrCat("extra_body_json sets \"", key,
                                        "\" = ", (*extra)[key].dump(),
                                        " for every request, overriding the per-request "
                                        "max_tokens from random_output_len and the dataset"));
      }
    }
    if (extra->contains("stream_options")) {
      const nlohmann::json& options = (*extra)["stream_options"];
      if (!options.is_object() ||
          (options.contains("include_usage") && options["include_usage"] != nlohmann::json(true))) {
        warnings.push_back(
            "extra_body_json's stream_options drops surge's \"include_usage\": true, so streamed "
            "answers carry no usage and output token counts are estimated");
      }
    }
  }
  // Options that have no effect in this run (docs/DESIGN.md "No option is
  // silently ignored"): warned, the run goes on, and run_config.json leaves
  // them out (SavedConfigJson).
  const auto& d = c.dataset();
  const auto& t = c.traffic_cfg();
  const bool replay = d.trace_replay();
  const std::string& strategy = t.ramp_up_strategy();
  if (!replay && (strategy.empty() || strategy == "none")) {
    std::vector<std::string> rates;
    if (t.has_ramp_up_start_rps()) rates.push_back("traffic_cfg.ramp_up_start_rps");
    if (t.has_ramp_up_end_rps()) rates.push_back("traffic_cfg.ramp_up_end_rps");
    if (!rates.empty()) {
      warnings.push_back(absl::StrCat(absl::StrJoin(rates, " and "),
                                      " ignored: no ramp-up strategy is given (flag "
                                      "--ramp-up-strategy linear or exponential)"));
    }
  }
  if (!replay && t.burstiness() != 0) {
    const ResolvedTraffic traffic = ResolveTraffic(c);
    if (traffic.instant) {
      warnings.push_back(absl::StrCat("traffic_cfg.burstiness ", t.burstiness(),
                                      " ignored: in instant mode every request is due at once "
                                      "(flags --burstiness, --request-rate)"));
    }
  }
  // Late-send policy in instant mode: every request is planned at 0, so all
  // but the first few are late; allowed (the user may mean it), said aloud.
  if (!replay && (c.late_policy() == "skip" || c.late_policy() == "cap") &&
      ResolveTraffic(c).instant) {
    warnings.push_back(absl::StrCat(
        "late_policy ", c.late_policy(),
        " in instant mode: every request is planned at 0, so every one released more than "
        "late_threshold_ms after the start is late and ",
        c.late_policy() == "skip" ? "skipped" : "spaced at catch_up_rps",
        " (flags --late-policy, --request-rate)"));
  }
  if (!replay && d.has_trace_time_scale()) {
    warnings.push_back(absl::StrCat("trace_time_scale ", d.trace_time_scale(),
                                    " ignored: it scales a trace replay only (flags "
                                    "--trace-time-scale, --trace-replay)"));
  }
  if (!IsSynthetic(d)) {
    std::vector<std::string> keys = LengthParametersGiven(d);
    if (!d.random_len_dist().empty()) keys.insert(keys.begin(), "random_len_dist");
    if (!keys.empty()) {
      warnings.push_back(absl::StrCat(
          absl::StrJoin(keys, ", "),
          " ignored: only synthetic prompts have a length distribution, not dataset \"",
          d.dataset_name(), "\" (flag --dataset-name)"));
    }
  }
  if (!IsHttps(target)) {
    std::vector<std::string> keys;
    if (!target.ca_cert_path().empty()) keys.push_back("ca_cert_path");
    if (target.insecure_skip_verify()) keys.push_back("insecure_skip_verify");
    if (!keys.empty()) {
      warnings.push_back(absl::StrCat(
          absl::StrJoin(keys, " and "), " ignored: the server is reached over plain http (",
          target.base_url().empty() ? std::string("the built-in server") : target.base_url(),
          "), TLS options apply to an https base_url only (flags --ca-cert, --insecure)"));
    }
  }
  if (!target.base_url().empty()) {
    const auto& sim = c.sim_server();
    const auto defaults = DefaultRunConfig().sim_server();
    std::vector<std::string> keys;
    if (sim.ttft_ms() != defaults.ttft_ms()) keys.push_back("sim_ttft_ms");
    if (sim.itl_ms() != defaults.itl_ms()) keys.push_back("sim_itl_ms");
    for (const auto& [key, fraction] : SimFaultFractions(sim)) {
      if (fraction != 0) keys.push_back(key);
    }
    if (sim.fault_after_tokens() != defaults.fault_after_tokens()) {
      keys.push_back("sim_fault_after_tokens");
    }
    if (sim.fault_stall_ms() != defaults.fault_stall_ms()) keys.push_back("sim_fault_stall_ms");
    if (sim.fault_seed() != defaults.fault_seed()) keys.push_back("sim_fault_seed");
    if (!keys.empty()) {
      warnings.push_back(absl::StrCat(
          absl::StrJoin(keys, ", "), " ignored: they set up the built-in server, and base_url ",
          target.base_url(), " is used instead (flags --sim-*, --base-url)"));
    }
  }
  return warnings;
}

namespace {

// Header names whose values are credentials: their lines are not saved.
bool SecretHeaderName(std::string_view line) {
  const std::string name = absl::AsciiStrToLower(std::string(line.substr(0, line.find(':'))));
  for (const char* word : {"auth", "key", "token", "secret", "cookie", "password", "credential"}) {
    if (absl::StrContains(name, word)) return true;
  }
  return false;
}

// The fields `item` sets, by their config.proto names (numbers and text).
nlohmann::ordered_json SetFieldsJson(const google::protobuf::Message& item) {
  namespace pb = google::protobuf;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  std::vector<const pb::FieldDescriptor*> fields;
  item.GetReflection()->ListFields(item, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    const pb::Reflection* r = item.GetReflection();
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
      out[f->name()] = r->GetDouble(item, f);
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64) {
      out[f->name()] = r->GetUInt64(item, f);
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
      out[f->name()] = r->GetString(item, f);
    }
  }
  return out;
}

}  // namespace

std::string SavedConfigJson(const RunConfig& c, std::vector<std::string>* left_out) {
  nlohmann::ordered_json j;
  const auto& t = c.traffic_cfg();
  const bool replay = c.dataset().trace_replay();
  const std::string& strategy = t.ramp_up_strategy();
  const bool strategy_set = !strategy.empty() && strategy != "none";
  // Traffic keys (SPEC §2); none for a trace replay, whose timestamps set
  // the schedule. request_rate has no effect under an active ramp (R-TGT).
  // An inactive ramp's keys had no effect (R-RAMP: request_rate was used),
  // nor has burstiness in instant mode (R-INST: every offset is 0).
  if (!replay) {
    const ResolvedTraffic traffic_used = ResolveSeedTraffic(c);
    const bool stages = t.stages_size() > 0;
    if (!traffic_used.ramp_active && !stages) {
      // JSON has no infinity: vLLM's "inf", which --config reads back.
      if (std::isinf(c.request_rate())) {
        j["request_rate"] = "inf";
      } else {
        j["request_rate"] = c.request_rate();
      }
    }
    nlohmann::ordered_json traffic = nlohmann::ordered_json::object();
    if (!traffic_used.instant || UsesComposedTraffic(c)) traffic["burstiness"] = t.burstiness();
    if (strategy_set && traffic_used.ramp_active && !stages) {
      traffic["ramp_up_strategy"] = strategy;
      traffic["ramp_up_start_rps"] = t.ramp_up_start_rps();
      traffic["ramp_up_end_rps"] = t.ramp_up_end_rps();
    }
    // Composed traffic, each item with the keys it sets (config.proto names).
    if (t.has_sampler() && !t.sampler().empty()) traffic["sampler"] = t.sampler();
    auto list = [&traffic](const char* key, const auto& items) {
      if (items.empty()) return;
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const google::protobuf::Message& item : items) out.push_back(SetFieldsJson(item));
      traffic[key] = out;
    };
    list("stages", t.stages());
    list("spikes", t.spikes());
    list("mmpp_states", t.mmpp_states());
    if (!traffic.empty()) j["traffic_cfg"] = traffic;
  }
  j["num_prompts"] = c.num_prompts();
  j["seed"] = c.seed();
  j["max_concurrency"] = c.max_concurrency();
  j["workers"] = c.workers();
  if (c.workers_force()) j["workers_force"] = true;
  // Only when not the default, so older run_config.json files read the same.
  if (!c.assign().empty() && c.assign() != "round-robin") j["assign"] = c.assign();
  // The late-send policy likewise only when not the default.
  if (!c.late_policy().empty() && c.late_policy() != "send") j["late_policy"] = c.late_policy();
  if (c.has_late_threshold_ms() && c.late_threshold_ms() != 10) {
    j["late_threshold_ms"] = c.late_threshold_ms();
  }
  if (c.has_catch_up_rps()) j["catch_up_rps"] = c.catch_up_rps();
  j["abort_after_connect_failures"] = c.abort_after_connect_failures();
  if (c.has_lateness_alarm_ms()) j["lateness_alarm_ms"] = c.lateness_alarm_ms();
  if (c.stop_on_alarm()) j["stop_on_alarm"] = true;
  j["output_dir"] = c.output_dir();
  const auto& target = c.target();
  if (!target.model().empty()) j["model"] = target.model();
  if (!target.base_url().empty()) j["base_url"] = target.base_url();
  j["endpoint"] = target.endpoint();
  j["stream"] = target.stream();
  j["request_timeout_s"] = target.request_timeout_s();
  if (IsHttps(target) && !target.ca_cert_path().empty()) j["ca_cert_path"] = target.ca_cert_path();
  if (IsHttps(target) && target.insecure_skip_verify()) j["insecure_skip_verify"] = true;
  // The key file's path only; the key itself is never in a configuration.
  if (!target.api_key_file().empty()) j["api_key_file"] = target.api_key_file();
  nlohmann::ordered_json headers = nlohmann::ordered_json::array();
  for (const std::string& line : target.headers()) {
    if (SecretHeaderName(line)) {
      if (left_out != nullptr) left_out->push_back(line.substr(0, line.find(':')));
    } else {
      headers.push_back(line);
    }
  }
  if (!headers.empty()) j["headers"] = headers;
  if (!target.extra_body_json().empty()) j["extra_body_json"] = target.extra_body_json();
  const auto& d = c.dataset();
  j["dataset_name"] = d.dataset_name();
  if (!d.dataset_path().empty()) j["dataset_path"] = d.dataset_path();
  const bool synthetic = d.dataset_name() == "synthetic" || d.dataset_name() == "random";
  if (synthetic) j["random_input_len"] = d.random_input_len();
  // A Mooncake trace gives every request's output length itself.
  if (d.dataset_name() != "mooncake") j["random_output_len"] = d.random_output_len();
  if (synthetic) {
    const std::string& dist = d.random_len_dist();
    j["random_len_dist"] = dist.empty() ? std::string("fixed") : dist;
    if (dist == "uniform") j["random_range_ratio"] = d.random_range_ratio();
    if (dist == "gaussian") j["random_len_stddev"] = d.random_len_stddev();
    if (dist == "zipf") j["random_zipf_s"] = d.has_random_zipf_s() ? d.random_zipf_s() : 1.0;
  }
  if (replay) {
    j["trace_replay"] = true;
    j["trace_time_scale"] = d.has_trace_time_scale() ? d.trace_time_scale() : 1.0;
  }
  // The built-in server's options only when it served the run.
  if (target.base_url().empty()) {
    const auto& sim = c.sim_server();
    j["sim_ttft_ms"] = sim.ttft_ms();
    j["sim_itl_ms"] = sim.itl_ms();
    bool faults = false;
    for (const auto& [key, fraction] : SimFaultFractions(sim)) {
      if (fraction != 0) {
        j[key] = fraction;
        faults = true;
      }
    }
    if (faults) {
      j["sim_fault_after_tokens"] = sim.fault_after_tokens();
      j["sim_fault_stall_ms"] = sim.fault_stall_ms();
      j["sim_fault_seed"] = sim.fault_seed();
    }
  }
  const auto& g = c.goodput();
  if (g.has_ttft_ms() || g.has_tpot_ms() || g.has_e2el_ms()) {
    nlohmann::ordered_json goodput;
    if (g.has_ttft_ms()) goodput["ttft_ms"] = g.ttft_ms();
    if (g.has_tpot_ms()) goodput["tpot_ms"] = g.tpot_ms();
    if (g.has_e2el_ms()) goodput["e2el_ms"] = g.e2el_ms();
    j["goodput"] = goodput;
  }
  return j.dump(2) + "\n";
}

absl::Status ParseStageFlag(std::string_view value, surge::v1::TrafficCfg* traffic) {
  const std::string text(value);
  auto bad = [&text](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid configuration:\n  traffic_cfg.stages = \"", ToValidUtf8(text), "\": ", why,
        "; a stage is LENGTH@RATE, LENGTH 30s (seconds) or 500r (requests), RATE 10 (RPS), "
        "10-50 (linear ramp) or 10-50:exp (exponential ramp), e.g. --stage 30s@10 (flag "
        "--stage)"));
  };
  const size_t at = text.find('@');
  if (at == std::string::npos || at == 0) return bad("no LENGTH@RATE");
  const std::string length = text.substr(0, at);
  std::string rate = text.substr(at + 1);
  surge::v1::TrafficStage stage;
  const char unit = length.back();
  const std::string number = length.substr(0, length.size() - 1);
  if (unit == 's') {
    double d;
    if (!absl::SimpleAtod(number, &d)) return bad(absl::StrCat("\"", length, "\" is no duration"));
    stage.set_duration_s(d);
  } else if (unit == 'r') {
    uint64_t n;
    if (!absl::SimpleAtoi(number, &n)) return bad(absl::StrCat("\"", length, "\" is no count"));
    stage.set_num_requests(n);
  } else {
    return bad(absl::StrCat("LENGTH \"", length, "\" must end in s (seconds) or r (requests)"));
  }
  bool exponential = false;
  if (absl::EndsWith(rate, ":exp")) {
    exponential = true;
    rate.resize(rate.size() - 4);
  }
  const size_t dash = rate.find('-', 1);
  double a, b;
  if (dash == std::string::npos) {
    if (exponential || !absl::SimpleAtod(rate, &a)) {
      return bad(absl::StrCat("RATE \"", rate, "\" is no rate"));
    }
    stage.set_rate_rps(a);
  } else {
    if (!absl::SimpleAtod(rate.substr(0, dash), &a) ||
        !absl::SimpleAtod(rate.substr(dash + 1), &b)) {
      return bad(absl::StrCat("RATE \"", rate, "\" is no START-END ramp"));
    }
    stage.set_ramp_up_strategy(exponential ? "exponential" : "linear");
    stage.set_ramp_up_start_rps(a);
    stage.set_ramp_up_end_rps(b);
  }
  *traffic->add_stages() = stage;
  return absl::OkStatus();
}

absl::Status ParseSpikeFlag(std::string_view value, surge::v1::TrafficCfg* traffic) {
  const std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(value.data(), value.size()), ':');
  double v[3];
  if (parts.size() != 3 || !absl::SimpleAtod(parts[0], &v[0]) ||
      !absl::SimpleAtod(parts[1], &v[1]) || !absl::SimpleAtod(parts[2], &v[2])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid configuration:\n  traffic_cfg.spikes = \"", ToValidUtf8(std::string(value)),
        "\": must be AT_S:DURATION_S:MULTIPLIER, e.g. 40:3:4 (four times the rate from 40 s "
        "to 43 s) (flag --spike)"));
  }
  auto* spike = traffic->add_spikes();
  spike->set_at_s(v[0]);
  spike->set_duration_s(v[1]);
  spike->set_rate_multiplier(v[2]);
  return absl::OkStatus();
}

std::vector<std::string> PlanDefiningDifferences(const RunConfig& made_with,
                                                 const RunConfig& given) {
  const nlohmann::json a = nlohmann::json::parse(SavedConfigJson(made_with, nullptr));
  const nlohmann::json b = nlohmann::json::parse(SavedConfigJson(given, nullptr));
  static const std::pair<const char*, const char*> kKeys[] = {
      {"request_rate", "--request-rate"},
      {"traffic_cfg", "--burstiness, --ramp-up-*, --stage, --spike, --sampler"},
      {"num_prompts", "--num-prompts"},
      {"seed", "--seed"},
      {"dataset_name", "--dataset-name"},
      {"dataset_path", "--dataset-path"},
      {"random_input_len", "--random-input-len"},
      {"random_output_len", "--random-output-len"},
      {"random_len_dist", "--random-len-dist"},
      {"random_range_ratio", "--random-range-ratio"},
      {"random_len_stddev", "--random-len-stddev"},
      {"random_zipf_s", "--random-zipf-s"},
      {"trace_replay", "--trace-replay"},
      {"trace_time_scale", "--trace-time-scale"},
  };
  std::vector<std::string> out;
  for (const auto& [key, flag] : kKeys) {
    const nlohmann::json none = "(not set)";
    const nlohmann::json& va = a.contains(key) ? a[key] : none;
    const nlohmann::json& vb = b.contains(key) ? b[key] : none;
    if (va == vb) continue;
    out.push_back(absl::StrCat(key, " = ", vb.dump(), " (flag ", flag,
                               "), but the plan was made with ", va.dump()));
  }
  return out;
}

}  // namespace surge::coordinator
