#include "coordinator/cli/run_options.h"

#include <functional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/config/run_config.h"

namespace surge::coordinator {
namespace {

using surge::v1::RunConfig;

enum class Kind { kNumber, kCount, kText };

struct Flag {
  const char* name;   // without "--"
  const char* field;  // config field path
  Kind kind;
  const char* help;
  std::function<void(RunConfig*, const std::string&)> set;
};

double D(const std::string& s) {
  double v = 0;
  (void)absl::SimpleAtod(s, &v);
  return v;
}
uint64_t U(const std::string& s) {
  uint64_t v = 0;
  (void)absl::SimpleAtoi(s, &v);
  return v;
}
uint32_t U32(const std::string& s) { return static_cast<uint32_t>(std::min<uint64_t>(U(s), 1u << 30)); }

const std::vector<Flag>& Flags() {
  static const auto* flags = new std::vector<Flag>{
      {"request-rate", "request_rate", Kind::kNumber,
       "Target rate, requests/s (>= 0). Below 0.1 without ramp-up: all requests at once "
       "(instant mode). Default 0.",
       [](RunConfig* c, const std::string& v) { c->set_request_rate(D(v)); }},
      {"burstiness", "traffic_cfg.burstiness", Kind::kNumber,
       "Gamma shape β of the intervals: 0 fixed (default, as AISBench), 1 Poisson (vLLM's "
       "default), <1 bursty, >1 regular.",
       [](RunConfig* c, const std::string& v) { c->mutable_traffic_cfg()->set_burstiness(D(v)); }},
      {"ramp-up-strategy", "traffic_cfg.ramp_up_strategy", Kind::kText,
       "linear | exponential | none (default none).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_traffic_cfg()->set_ramp_up_strategy(v);
       }},
      {"ramp-up-start-rps", "traffic_cfg.ramp_up_start_rps", Kind::kNumber,
       "Ramp-up start rate, requests/s (> 0 for an active ramp).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_traffic_cfg()->set_ramp_up_start_rps(D(v));
       }},
      {"ramp-up-end-rps", "traffic_cfg.ramp_up_end_rps", Kind::kNumber,
       "Ramp-up end rate, requests/s (> 0.1 and >= start for an active ramp).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_traffic_cfg()->set_ramp_up_end_rps(D(v));
       }},
      {"num-prompts", "num_prompts", Kind::kCount, "Number of requests N (default 1000).",
       [](RunConfig* c, const std::string& v) { c->set_num_prompts(U(v)); }},
      {"max-concurrency", "max_concurrency", Kind::kCount,
       "Cap on requests in flight over all workers; 0 = no cap (default).",
       [](RunConfig* c, const std::string& v) { c->set_max_concurrency(U(v)); }},
      {"seed", "seed", Kind::kCount, "Seed of the schedule's generator (default 0).",
       [](RunConfig* c, const std::string& v) { c->set_seed(U(v)); }},
      {"workers", "workers", Kind::kCount,
       "Local worker processes; 0 = one per core (default).",
       [](RunConfig* c, const std::string& v) { c->set_workers(U32(v)); }},
      {"output-dir", "output_dir", Kind::kText, "Root of the run folders (default outputs/default).",
       [](RunConfig* c, const std::string& v) { c->set_output_dir(v); }},
      {"model", "model", Kind::kText,
       "Model name; default: the first model the server lists at /v1/models.",
       [](RunConfig* c, const std::string& v) { c->mutable_target()->set_model(v); }},
      {"base-url", "base_url", Kind::kText,
       "Server base URL, e.g. http://127.0.0.1:8000; default: start the built-in simulated "
       "server.",
       [](RunConfig* c, const std::string& v) { c->mutable_target()->set_base_url(v); }},
      {"endpoint", "endpoint", Kind::kText,
       "Request path: /v1/chat/completions (default) or /v1/completions.",
       [](RunConfig* c, const std::string& v) { c->mutable_target()->set_endpoint(v); }},
      {"dataset-name", "dataset_name", Kind::kText,
       "synthetic (alias random; default) or mooncake.",
       [](RunConfig* c, const std::string& v) { c->mutable_dataset()->set_dataset_name(v); }},
      {"dataset-path", "dataset_path", Kind::kText, "Dataset file (mooncake: the trace JSONL).",
       [](RunConfig* c, const std::string& v) { c->mutable_dataset()->set_dataset_path(v); }},
      {"random-input-len", "random_input_len", Kind::kCount,
       "Synthetic prompt length, tokens (default 1024).",
       [](RunConfig* c, const std::string& v) { c->mutable_dataset()->set_random_input_len(U32(v)); }},
      {"random-output-len", "random_output_len", Kind::kCount,
       "Synthetic max_tokens (default 128).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_random_output_len(U32(v));
       }},
      {"sim-ttft-ms", "sim_ttft_ms", Kind::kNumber,
       "Built-in server: time to first token, ms (default 20).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_ttft_ms(D(v)); }},
      {"sim-itl-ms", "sim_itl_ms", Kind::kNumber,
       "Built-in server: delay between tokens, ms (default 2).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_itl_ms(D(v)); }},
  };
  return *flags;
}

}  // namespace

void RunOptions::Register(CLI::App& command) {
  command.add_option("--config", config_path_,
                     "YAML file with the AISBench keys (request_rate, traffic_cfg, ...); flags "
                     "override it.");
  for (const Flag& f : Flags()) {
    auto& slot = values_[f.name];
    slot.first = command.add_option(absl::StrCat("--", f.name), slot.second, f.help);
  }
}

absl::StatusOr<RunConfig> RunOptions::Resolve() const {
  RunConfig config = DefaultRunConfig();
  if (!config_path_.empty()) {
    if (absl::Status s = LoadYamlConfig(config_path_, &config); !s.ok()) return s;
  }
  std::vector<std::string> errors;
  for (const Flag& f : Flags()) {
    const auto& [option, value] = values_.at(f.name);
    if (option == nullptr || option->count() == 0) continue;
    bool ok = true;
    if (f.kind == Kind::kNumber) {
      double v;
      ok = absl::SimpleAtod(value, &v);
      if (!ok) errors.push_back(absl::StrCat("  ", f.field, " = \"", value, "\": must be a number (flag --", f.name, ")"));
    } else if (f.kind == Kind::kCount) {
      uint64_t v;
      ok = !value.empty() && value[0] != '-' && value[0] != '+' && absl::SimpleAtoi(value, &v);
      if (!ok) errors.push_back(absl::StrCat("  ", f.field, " = \"", value, "\": must be a whole number >= 0 (flag --", f.name, ")"));
    }
    if (ok) f.set(&config, value);
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(errors, "\n")));
  }
  if (absl::Status s = ValidateRunConfig(config); !s.ok()) return s;
  return config;
}

}  // namespace surge::coordinator
