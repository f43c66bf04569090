#include "app/run_options.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "coordinator/config/run_config.h"

namespace surge::app {

// The configuration's reader, defaults and validator (coordinator/config).
using coordinator::ApplyImpliedOptions;
using coordinator::DefaultRunConfig;
using coordinator::DidYouMean;
using coordinator::ForeignNameHint;
using coordinator::LoadYamlConfig;
using coordinator::ValidateRunConfig;

namespace {

using surge::v1::RunConfig;

// kSwitch: a flag without value ("true"); kList: repeatable, `set` runs once
// per occurrence.
enum class Kind { kNumber, kCount, kText, kSwitch, kList };

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
       "Target rate, requests/s (>= 0), or inf. Below 0.1 or inf without ramp-up: all "
       "requests at once (instant mode; with --max-concurrency N, vLLM's closed loop of N in "
       "flight). Default 0.",
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
      // Composed traffic (docs/TRAFFIC.md); --stage and --spike are parsed
      // by ParseStageFlag / ParseSpikeFlag in Resolve.
      {"stage", "traffic_cfg.stages", Kind::kList,
       "A traffic stage LENGTH@RATE, repeatable, in order; replaces the --config file's "
       "stages. LENGTH 30s or 500r (requests), RATE 10, 10-50 (linear ramp) or 10-50:exp. "
       "With stages --num-prompts caps the run.",
       nullptr},
      {"spike", "traffic_cfg.spikes", Kind::kList,
       "A rate spike AT_S:DURATION_S:MULTIPLIER laid over the traffic, repeatable; replaces "
       "the --config file's spikes. E.g. 40:3:4.",
       nullptr},
      {"sampler", "traffic_cfg.sampler", Kind::kText,
       "Interval sampler: fixed, gamma (Gamma(--burstiness)) or mmpp (states from the "
       "--config file's traffic_cfg.mmpp_states). Default: gamma when --burstiness > 0, else "
       "fixed.",
       [](RunConfig* c, const std::string& v) { c->mutable_traffic_cfg()->set_sampler(v); }},
      {"num-prompts", "num_prompts", Kind::kCount,
       "Number of requests N (default 1000); with --stage the cap on the run's requests.",
       [](RunConfig* c, const std::string& v) { c->set_num_prompts(U(v)); }},
      {"max-concurrency", "max_concurrency", Kind::kCount,
       "Cap on requests in flight over all workers; 0 = no cap (default).",
       [](RunConfig* c, const std::string& v) { c->set_max_concurrency(U(v)); }},
      {"seed", "seed", Kind::kCount, "Seed of the schedule's generator (default 0).",
       [](RunConfig* c, const std::string& v) { c->set_seed(U(v)); }},
      {"workers", "workers", Kind::kCount, "Local worker processes; 0 = one per core (default).",
       [](RunConfig* c, const std::string& v) { c->set_workers(U32(v)); }},
      {"workers-force", "workers_force", Kind::kSwitch,
       "Allow more than 4 workers per core (or more workers than requests); without it "
       "--workers is capped there with a warning.",
       [](RunConfig* c, const std::string& v) { c->set_workers_force(v == "true"); }},
      {"assign", "assign", Kind::kText,
       "Which worker takes each request: round-robin (default; request i to worker i mod W) "
       "or least-loaded (fewest outstanding requests, ties rotated).",
       [](RunConfig* c, const std::string& v) { c->set_assign(v); }},
      {"late-policy", "late_policy", Kind::kText,
       "What the pacer does with a request it reaches more than --late-threshold-ms after "
       "its planned send: send (default: at once), skip (not sent; status skipped) or cap "
       "(late ones no faster than --catch-up-rps).",
       [](RunConfig* c, const std::string& v) { c->set_late_policy(v); }},
      {"late-threshold-ms", "late_threshold_ms", Kind::kNumber,
       "Release time - planned time above which a request is late, ms, > 0 (default 10).",
       [](RunConfig* c, const std::string& v) { c->set_late_threshold_ms(D(v)); }},
      {"catch-up-rps", "catch_up_rps", Kind::kNumber,
       "--late-policy cap (required with it): late requests are released no faster than this, "
       "requests/s over all workers, > 0.",
       [](RunConfig* c, const std::string& v) { c->set_catch_up_rps(D(v)); }},
      {"abort-after-connect-failures", "abort_after_connect_failures", Kind::kCount,
       "Stop (exit 1) when the first K requests all fail to connect; 0 = never (default 10).",
       [](RunConfig* c, const std::string& v) { c->set_abort_after_connect_failures(U32(v)); }},
      {"lateness-alarm-ms", "lateness_alarm_ms", Kind::kNumber,
       "Warn (naming the worker and the cause) when a worker's send lateness p99 over the last "
       "second exceeds this, ms; 0 = off (default 10).",
       [](RunConfig* c, const std::string& v) { c->set_lateness_alarm_ms(D(v)); }},
      {"stop-on-alarm", "stop_on_alarm", Kind::kSwitch,
       "End the run at the first lateness alarm, all files written (exit 3).",
       [](RunConfig* c, const std::string& v) { c->set_stop_on_alarm(v == "true"); }},
      {"output-dir", "output_dir", Kind::kText,
       "Root of the run folders (default outputs/default).",
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
       "synthetic (alias random; default), jsonl, sharegpt or mooncake.",
       [](RunConfig* c, const std::string& v) { c->mutable_dataset()->set_dataset_name(v); }},
      {"dataset-path", "dataset_path", Kind::kText,
       "Dataset file (jsonl, sharegpt JSON, mooncake trace JSONL).",
       [](RunConfig* c, const std::string& v) { c->mutable_dataset()->set_dataset_path(v); }},
      {"random-input-len", "random_input_len", Kind::kCount,
       "Synthetic prompt length, tokens (default 1024).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_random_input_len(U32(v));
       }},
      {"random-output-len", "random_output_len", Kind::kCount,
       "Synthetic max_tokens; also for jsonl/sharegpt requests without one (default 128).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_random_output_len(U32(v));
       }},
      // Datasets (R-MET-3, docs/DATASETS.md).
      {"random-len-dist", "random_len_dist", Kind::kText,
       "Synthetic lengths per request: fixed (default), uniform, gaussian or zipf.",
       [](RunConfig* c, const std::string& v) { c->mutable_dataset()->set_random_len_dist(v); }},
      {"random-range-ratio", "random_range_ratio", Kind::kNumber,
       "uniform: lengths in [len*(1-r), len*(1+r)], 0 <= r < 1 (default 0); without "
       "--random-len-dist it implies uniform.",
       [](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_random_range_ratio(D(v));
       }},
      {"random-len-stddev", "random_len_stddev", Kind::kNumber,
       "gaussian: standard deviation of both lengths, tokens (default 0); without "
       "--random-len-dist it implies gaussian.",
       [](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_random_len_stddev(D(v));
       }},
      {"random-zipf-s", "random_zipf_s", Kind::kNumber,
       "zipf: exponent s > 0 of P(k) ~ k^-s over k = 1..2*len (default 1); without "
       "--random-len-dist it implies zipf.",
       [](RunConfig* c, const std::string& v) { c->mutable_dataset()->set_random_zipf_s(D(v)); }},
      {"trace-replay", "trace_replay", Kind::kSwitch,
       "mooncake: send each request at the trace's timestamp instead of the generated "
       "schedule (request rate, burstiness and ramp-up are then ignored).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_trace_replay(v == "true");
       }},
      {"trace-time-scale", "trace_time_scale", Kind::kNumber,
       "Trace replay: multiply the trace's times by this, > 0 (0.5 = twice as fast; default 1).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_dataset()->set_trace_time_scale(D(v));
       }},
      {"sim-ttft-ms", "sim_ttft_ms", Kind::kNumber,
       "Built-in server: time to first token, ms (default 20).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_ttft_ms(D(v)); }},
      {"sim-itl-ms", "sim_itl_ms", Kind::kNumber,
       "Built-in server: delay between tokens, ms (default 2).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_itl_ms(D(v)); }},
      // Target options of R-REQ-1 (the API key only from a file or the environment).
      {"request-timeout-s", "request_timeout_s", Kind::kNumber,
       "Per-request timeout, seconds; 0 = none (default 600).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_target()->set_request_timeout_s(D(v));
       }},
      {"ca-cert", "ca_cert_path", Kind::kText,
       "https: PEM file of the CA certificate(s) to trust instead of the system store.",
       [](RunConfig* c, const std::string& v) { c->mutable_target()->set_ca_cert_path(v); }},
      {"insecure", "insecure_skip_verify", Kind::kSwitch,
       "https: do not verify the server's certificate (testing only).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_target()->set_insecure_skip_verify(v == "true");
       }},
      {"api-key-file", "api_key_file", Kind::kText,
       "File holding the API key (sent as a Bearer token; default: $OPENAI_API_KEY).",
       [](RunConfig* c, const std::string& v) { c->mutable_target()->set_api_key_file(v); }},
      {"header", "headers", Kind::kList,
       "Extra request header \"Name: value\"; repeatable; adds to the --config file's headers.",
       [](RunConfig* c, const std::string& v) { c->mutable_target()->add_headers(v); }},
      {"extra-body", "extra_body_json", Kind::kText,
       "JSON object merged into every request body, e.g. "
       "'{\"temperature\":0,\"ignore_eos\":true}'.",
       [](RunConfig* c, const std::string& v) { c->mutable_target()->set_extra_body_json(v); }},
      // Built-in server fault injection: fractions of requests in [0, 1], sum <= 1.
      {"sim-fault-429", "sim_fault_429", Kind::kNumber,
       "Built-in server: fraction of requests answered HTTP 429 (default 0).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_fault_429(D(v)); }},
      {"sim-fault-500", "sim_fault_500", Kind::kNumber,
       "Built-in server: fraction answered HTTP 500 (default 0).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_fault_500(D(v)); }},
      {"sim-fault-503", "sim_fault_503", Kind::kNumber,
       "Built-in server: fraction answered HTTP 503 (default 0).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_fault_503(D(v)); }},
      {"sim-fault-reset", "sim_fault_reset", Kind::kNumber,
       "Built-in server: fraction whose connection closes mid-stream (default 0).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_fault_reset(D(v)); }},
      {"sim-fault-malformed", "sim_fault_malformed", Kind::kNumber,
       "Built-in server: fraction with a non-JSON data line mid-stream (default 0).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_sim_server()->set_fault_malformed(D(v));
       }},
      {"sim-fault-stall", "sim_fault_stall", Kind::kNumber,
       "Built-in server: fraction that stall mid-stream for --sim-fault-stall-ms (default 0).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_fault_stall(D(v)); }},
      {"sim-fault-split", "sim_fault_split", Kind::kNumber,
       "Built-in server: fraction written in pieces at odd byte boundaries (default 0).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_fault_split(D(v)); }},
      {"sim-fault-error-event", "sim_fault_error_event", Kind::kNumber,
       "Built-in server: fraction with an {\"error\": ...} event mid-stream (default 0).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_sim_server()->set_fault_error_event(D(v));
       }},
      {"sim-fault-after-tokens", "sim_fault_after_tokens", Kind::kCount,
       "Built-in server: tokens sent before a mid-stream fault (default 1).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_sim_server()->set_fault_after_tokens(U32(v));
       }},
      {"sim-fault-stall-ms", "sim_fault_stall_ms", Kind::kNumber,
       "Built-in server: length of a stall, ms (default 1000).",
       [](RunConfig* c, const std::string& v) {
         c->mutable_sim_server()->set_fault_stall_ms(D(v));
       }},
      {"sim-fault-seed", "sim_fault_seed", Kind::kCount,
       "Built-in server: seed of the fault draws (default 0).",
       [](RunConfig* c, const std::string& v) { c->mutable_sim_server()->set_fault_seed(U(v)); }},
  };
  return *flags;
}

}  // namespace

void RunOptions::Register(CLI::App& command) {
  command_ = &command;
  // Unknown flags are collected and reported with every other problem
  // (Resolve) instead of stopping the parse at the first one.
  command.allow_extras();
  command.add_option("--config", config_path_,
                     "YAML file with the AISBench keys (request_rate, traffic_cfg, ...); flags "
                     "override it. A run folder's run_config.json is such a file.");
  command
      .add_option("--goodput", goodput_,
                  "Service-level objectives for goodput, vLLM's syntax: ttft:MS tpot:MS e2el:MS "
                  "(any of them; as separate values, one quoted value, or repeated).")
      ->expected(1, 3)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  for (const Flag& f : Flags()) {
    auto& slot = values_[f.name];
    if (f.kind == Kind::kSwitch) {
      slot.first = command.add_flag(absl::StrCat("--", f.name), slot.second, f.help);
    } else {
      slot.first = command.add_option(absl::StrCat("--", f.name), slot.second, f.help);
      if (f.kind == Kind::kList) slot.first->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
  }
}

absl::Status ParseGoodput(const std::vector<std::string>& values, surge::v1::GoodputConfig* out) {
  std::vector<std::string> errors;
  for (const std::string& value : values) {
    // "ttft:25 e2el:1000" as one argument (the README's form) or several.
    for (absl::string_view objective :
         absl::StrSplit(value, absl::ByAnyChar(" \t,"), absl::SkipEmpty())) {
      const std::string item(objective);
      const size_t colon = item.find(':');
      const std::string key = absl::AsciiStrToLower(item.substr(0, colon));
      if (colon == std::string::npos) {
        errors.push_back(absl::StrCat("  goodput = \"", item,
                                      "\": must be METRIC:MS with METRIC ttft, tpot or e2el, "
                                      "e.g. ttft:25 (flag --goodput)"));
        continue;
      }
      if (key != "ttft" && key != "tpot" && key != "e2el") {
        const std::string guess = DidYouMean(key, {"ttft", "tpot", "e2el"});
        errors.push_back(absl::StrCat(
            "  goodput = \"", item, "\": unknown metric \"", key, "\"",
            guess.empty() ? std::string() : absl::StrCat(" (did you mean `", guess, "`?)"),
            "; allowed: ttft, tpot, e2el (flag --goodput)"));
        continue;
      }
      double ms = 0;
      const std::string number = item.substr(colon + 1);
      if (!absl::SimpleAtod(number, &ms) || !std::isfinite(ms) || ms < 0) {
        errors.push_back(absl::StrCat("  goodput = \"", item, "\": ", key,
                                      " needs a number of milliseconds >= 0, got \"", number,
                                      "\" (flag --goodput)"));
        continue;
      }
      if (key == "ttft") out->set_ttft_ms(ms);
      if (key == "tpot") out->set_tpot_ms(ms);
      if (key == "e2el") out->set_e2el_ms(ms);
    }
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("invalid configuration:\n", absl::StrJoin(errors, "\n")));
}

absl::StatusOr<RunConfig> RunOptions::Resolve() const {
  // Every problem in one pass: the file's, the flags' and the validator's.
  RunConfig config = DefaultRunConfig();
  std::vector<std::string> errors;
  auto add_status = [&errors](const absl::Status& s) {
    if (s.ok()) return;
    for (absl::string_view line :
         absl::StrSplit(absl::StripPrefix(s.message(), "invalid configuration:\n"), '\n')) {
      errors.emplace_back(line);
    }
  };
  if (command_ != nullptr) {
    std::vector<std::string> names;
    for (const Flag& f : Flags()) names.push_back(f.name);
    names.push_back("config");
    names.push_back("goodput");
    const std::vector<std::string> extras = command_->remaining();
    for (size_t i = 0; i < extras.size(); ++i) {
      std::string extra = extras[i];
      if (extra.rfind('-', 0) == 0) {
        // Its value, when it has one, is shown with it, not as a second error.
        if (extra.find('=') == std::string::npos && i + 1 < extras.size() &&
            extras[i + 1].rfind('-', 0) != 0) {
          extra = absl::StrCat(extra, " ", extras[++i]);
        }
        const std::string name = extra.substr(extra.rfind("--", 0) == 0 ? 2 : 1);
        const std::string bare = name.substr(0, name.find_first_of("= "));
        std::string guess = DidYouMean(bare, names);
        for (char& ch : guess) ch = ch == '_' ? '-' : ch;
        const std::string hint = ForeignNameHint(bare);
        errors.push_back(absl::StrCat("  ", extra, ": unknown flag",
                                      !hint.empty() ? absl::StrCat("; ", hint)
                                      : guess.empty()
                                          ? std::string()
                                          : absl::StrCat("; did you mean --", guess, "?"),
                                      " (surge ", command_->get_name(), " --help lists them)"));
      } else {
        errors.push_back(absl::StrCat("  \"", extra, "\": unexpected argument (surge ",
                                      command_->get_name(), " takes flags only)"));
      }
    }
  }
  if (!config_path_.empty()) add_status(LoadYamlConfig(config_path_, &config));
  for (const Flag& f : Flags()) {
    const auto& [option, value] = values_.at(f.name);
    if (option == nullptr || option->count() == 0) continue;
    if (f.kind == Kind::kList && f.set == nullptr) {
      // --stage, --spike: the flags' list replaces the file's.
      const bool stage = std::string(f.name) == "stage";
      auto* traffic = config.mutable_traffic_cfg();
      stage ? traffic->clear_stages() : traffic->clear_spikes();
      for (const std::string& item : option->results()) {
        add_status(stage ? coordinator::ParseStageFlag(item, traffic)
                         : coordinator::ParseSpikeFlag(item, traffic));
      }
      continue;
    }
    if (f.kind == Kind::kList) {
      for (const std::string& item : option->results()) f.set(&config, item);
      continue;
    }
    bool ok = true;
    std::string text = value;
    if (f.kind == Kind::kSwitch) {
      // `--x` alone gives "true"; `--x=VALUE` must be a clear boolean.
      bool on = false;
      ok = absl::SimpleAtob(value, &on);
      if (!ok) {
        errors.push_back(absl::StrCat("  ", f.field, " = \"", value,
                                      "\": must be true or false (flag --", f.name, ")"));
      }
      text = on ? "true" : "false";
    } else if (f.kind == Kind::kNumber) {
      double v;
      ok = absl::SimpleAtod(value, &v);
      if (!ok) {
        errors.push_back(absl::StrCat("  ", f.field, " = \"", value,
                                      "\": must be a number (flag --", f.name, ")"));
      }
    } else if (f.kind == Kind::kCount) {
      uint64_t v;
      ok = !value.empty() && value[0] != '-' && value[0] != '+' && absl::SimpleAtoi(value, &v);
      if (!ok) {
        errors.push_back(absl::StrCat("  ", f.field, " = \"", value,
                                      "\": must be a whole number >= 0 (flag --", f.name, ")"));
      }
    }
    if (ok) f.set(&config, text);
  }
  add_status(ParseGoodput(goodput_, config.mutable_goodput()));
  // vLLM's rule: a distribution's parameter given alone names it.
  notes_ = ApplyImpliedOptions(&config);
  // Range checks on everything that did parse (values that did not keep
  // their defaults, so they add no second, misleading line).
  add_status(ValidateRunConfig(config));
  if (!errors.empty()) {
    // The list of allowed keys (present when a key was unknown) goes last.
    std::stable_partition(errors.begin(), errors.end(), [](const std::string& line) {
      return line.rfind("  (allowed keys:", 0) != 0;
    });
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(errors, "\n")));
  }
  return config;
}

}  // namespace surge::app
