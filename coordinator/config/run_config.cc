#include "coordinator/config/run_config.h"

#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace surge::coordinator {
namespace {

using surge::v1::RunConfig;

// Errors collected while reading one file, reported together.
class Errors {
 public:
  void Add(const std::string& field, const std::string& value, const std::string& allowed) {
    lines_.push_back(absl::StrCat("  ", field, " = ", value, ": ", allowed));
  }
  absl::Status ToStatus() const {
    if (lines_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(lines_, "\n")));
  }

 private:
  std::vector<std::string> lines_;
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
  };
  return *keys;
}

const std::map<std::string, Setter>& TopKeys() {
  static const auto* keys = new std::map<std::string, Setter>{
      {"request_rate", Double([](RunConfig* c, double v) { c->set_request_rate(v); })},
      {"num_prompts", Uint([](RunConfig* c, uint64_t v) { c->set_num_prompts(v); })},
      {"max_concurrency", Uint([](RunConfig* c, uint64_t v) { c->set_max_concurrency(v); })},
      {"seed", Uint([](RunConfig* c, uint64_t v) { c->set_seed(v); })},
      {"workers",
       Uint([](RunConfig* c, uint64_t v) { c->set_workers(static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30))); })},
      {"output_dir", String([](RunConfig* c, const std::string& v) { c->set_output_dir(v); })},
      {"model",
       String([](RunConfig* c, const std::string& v) { c->mutable_target()->set_model(v); })},
      {"base_url",
       String([](RunConfig* c, const std::string& v) { c->mutable_target()->set_base_url(v); })},
      {"endpoint",
       String([](RunConfig* c, const std::string& v) { c->mutable_target()->set_endpoint(v); })},
      {"stream",
       [](const YAML::Node& n, const std::string& f, Errors& e, RunConfig* c) {
         bool v;
         if (ReadBool(n, f, e, &v)) c->mutable_target()->set_stream(v);
       }},
      {"request_timeout_s",
       Double([](RunConfig* c, double v) { c->mutable_target()->set_request_timeout_s(v); })},
      {"dataset_name", String([](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_dataset_name(v);
       })},
      {"dataset_path", String([](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_dataset_path(v);
       })},
      {"random_input_len", Uint([](RunConfig* c, uint64_t v) {
         c->mutable_dataset()->set_random_input_len(static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30)));
       })},
      {"random_output_len", Uint([](RunConfig* c, uint64_t v) {
         c->mutable_dataset()->set_random_output_len(static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30)));
       })},
      {"sim_ttft_ms", Double([](RunConfig* c, double v) { c->mutable_sim_server()->set_ttft_ms(v); })},
      {"sim_itl_ms", Double([](RunConfig* c, double v) { c->mutable_sim_server()->set_itl_ms(v); })},
  };
  return *keys;
}

std::string KeyList(const std::map<std::string, Setter>& keys) {
  std::vector<std::string> names;
  for (const auto& [k, _] : keys) names.push_back(k);
  return absl::StrJoin(names, ", ");
}

std::string Num(double v) { return absl::StrCat(v); }

}  // namespace

RunConfig DefaultRunConfig() {
  RunConfig c;
  c.set_request_rate(0);
  c.set_num_prompts(1000);
  c.set_seed(0);
  c.set_output_dir("outputs/default");
  c.mutable_target()->set_endpoint("/v1/chat/completions");
  c.mutable_target()->set_stream(true);
  c.mutable_target()->set_request_timeout_s(600);
  c.mutable_dataset()->set_dataset_name("synthetic");
  c.mutable_dataset()->set_random_input_len(1024);
  c.mutable_dataset()->set_random_output_len(128);
  c.mutable_sim_server()->set_ttft_ms(20);
  c.mutable_sim_server()->set_itl_ms(2);
  return c;
}

absl::Status LoadYamlConfig(const std::string& path, RunConfig* config) {
  YAML::Node root;
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
          errors.Add(field, Show(sub.second),
                     absl::StrCat("unknown key; allowed in traffic_cfg: ", KeyList(TrafficKeys())));
          continue;
        }
        it->second(sub.second, field, errors, config);
      }
      continue;
    }
    auto it = TopKeys().find(key);
    if (it == TopKeys().end()) {
      errors.Add(key, Show(item.second),
                 absl::StrCat("unknown key; allowed: traffic_cfg, ", KeyList(TopKeys())));
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
  non_negative("request_rate", "--request-rate", c.request_rate());
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
  if (c.num_prompts() < 1) {
    errors.Add("num_prompts", absl::StrCat(c.num_prompts()), "must be >= 1 (flag --num-prompts)");
  }
  if (c.workers() > 1024) {
    errors.Add("workers", absl::StrCat(c.workers()),
               "must be 0 (one per core) to 1024 (flag --workers)");
  }
  if (c.output_dir().empty()) {
    errors.Add("output_dir", "\"\"", "must be a folder path (flag --output-dir)");
  }
  const auto& target = c.target();
  const std::string& url = target.base_url();
  if (!url.empty() && url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    errors.Add("base_url", absl::StrCat("\"", url, "\""),
               "must start with http:// or https:// (flag --base-url)");
  }
  const std::string& ep = target.endpoint();
  auto ends_with = [](const std::string& a, const std::string& b) {
    return a.size() >= b.size() && a.compare(a.size() - b.size(), b.size(), b) == 0;
  };
  if (ep.empty() || ep[0] != '/' || !ends_with(ep, "/completions")) {
    errors.Add("endpoint", absl::StrCat("\"", ep, "\""),
               "must be an OpenAI-compatible path ending in /chat/completions or /completions, "
               "e.g. /v1/chat/completions (flag --endpoint)");
  }
  if (!std::isfinite(target.request_timeout_s()) || target.request_timeout_s() < 0) {
    errors.Add("request_timeout_s", Num(target.request_timeout_s()),
               "must be a finite number >= 0 seconds, 0 = no timeout");
  }
  const auto& d = c.dataset();
  const std::string& name = d.dataset_name();
  if (name != "synthetic" && name != "random" && name != "mooncake") {
    errors.Add("dataset_name", absl::StrCat("\"", name, "\""),
               "must be \"synthetic\" (alias \"random\") or \"mooncake\" (flag --dataset-name)");
  }
  if (name == "mooncake" && d.dataset_path().empty()) {
    errors.Add("dataset_path", "\"\"",
               "must name a Mooncake trace JSONL file when dataset_name is \"mooncake\" "
               "(flag --dataset-path)");
  }
  if (d.random_input_len() < 1) {
    errors.Add("random_input_len", "0", "must be >= 1 tokens (flag --random-input-len)");
  }
  if (d.random_output_len() < 1) {
    errors.Add("random_output_len", "0", "must be >= 1 tokens (flag --random-output-len)");
  }
  non_negative("sim_ttft_ms", "--sim-ttft-ms", c.sim_server().ttft_ms());
  non_negative("sim_itl_ms", "--sim-itl-ms", c.sim_server().itl_ms());
  return errors.ToStatus();
}

}  // namespace surge::coordinator
