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
#include "common/enum_spelling.h"
#include "common/stats.h"
#include "common/utf8.h"
#include "coordinator/config/option_table.h"
#include "coordinator/dataset/session_source.h"
#include "coordinator/plan/steady_state.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/plan/traffic_classes.h"
#include "coordinator/plan/traffic_config.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

namespace {

using surge::v1::RunConfig;

const OptionTable& Table() { return OptionTable::For(RunConfig::descriptor()); }

// The built-in server's fault fractions by their configuration key: the
// fault_* fields bounded to [0, 1] (config.proto), in field order.
std::vector<std::pair<std::string, double>> SimFaultFractions(
    const surge::v1::SimServerConfig& sim) {
  std::vector<std::pair<std::string, double>> fractions;
  const std::string prefix =
      SpecOf(RunConfig::descriptor()->FindFieldByName("sim_server")).key_prefix();
  const auto* d = surge::v1::SimServerConfig::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    const auto& spec = SpecOf(f);
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE &&
        absl::StartsWith(f->name(), "fault_") && spec.has_max() && spec.max() == 1) {
      fractions.emplace_back(prefix + f->name(), sim.GetReflection()->GetDouble(sim, f));
    }
  }
  return fractions;
}

// Errors collected while reading one file, reported together. Unknown keys
// get a suggestion each; the list of allowed keys is added once at the end.
class Errors {
 public:
  void Add(const std::string& field, const std::string& value, const std::string& allowed) {
    lines_.push_back(absl::StrCat("  ", field, " = ", value, ": ", allowed));
  }
  // A line formatted elsewhere ("  <field> = <value>: ...").
  void AddRaw(std::string line) { lines_.push_back(std::move(line)); }
  ErrorLines* lines() { return &lines_; }
  // The text for `key` (under `section`, "" = top level), which is not a
  // configuration key.
  std::string UnknownKey(const std::string& section, const std::string& key);
  absl::Status ToStatus() const {
    if (lines_.empty()) return absl::OkStatus();
    std::vector<std::string> lines = lines_;
    if (unknown_keys_) {
      lines.push_back(absl::StrCat("  (allowed keys: ", Table().root().KeyList(), ")"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(lines, "\n")));
  }

 private:
  std::vector<std::string> lines_;
  bool unknown_keys_ = false;
};

// The section at a dotted key path ("traffic_cfg", "traffic_cfg.stages[0]").
const OptionSection* SectionAt(const std::string& path) {
  const OptionSection* section = &Table().root();
  if (path.empty()) return section;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    const OptionEntry* e = section->Find(std::string(part.substr(0, part.find('['))));
    if (e == nullptr || e->sub == nullptr) return nullptr;
    section = e->sub.get();
  }
  return section;
}

std::string Errors::UnknownKey(const std::string& section_path, const std::string& key) {
  unknown_keys_ = true;
  const OptionSection* section = SectionAt(section_path);
  std::vector<std::string> candidates = section->KeyNames();
  for (const OptionEntry& e : section->entries) {
    if (e.sub != nullptr) candidates.push_back(e.key);
  }
  if (section_path.empty()) {
    if (auto it = ForeignKeyHints().find(key); it != ForeignKeyHints().end()) {
      return absl::StrCat("unknown key; ", it->second);
    }
    // A key of a nested mapping at the top level (vLLM's flat layout).
    for (const OptionEntry& e : section->entries) {
      if (e.sub != nullptr && !e.field->is_repeated() && e.sub->Find(key) != nullptr) {
        return absl::StrCat("unknown key; ", key, " belongs under ", e.key, " (AISBench's layout)");
      }
    }
  }
  const std::string guess = DidYouMean(key, candidates);
  if (guess.empty() && section_path.empty()) {
    // A misspelt key of a nested mapping at the top level.
    for (const OptionEntry& e : section->entries) {
      if (e.sub == nullptr || e.field->is_repeated()) continue;
      if (const std::string nested = DidYouMean(key, e.sub->KeyNames()); !nested.empty()) {
        return absl::StrCat("unknown key; did you mean `", nested, "` (under ", e.key, ")?");
      }
    }
  }
  return guess.empty() ? std::string("unknown key")
                       : absl::StrCat("unknown key; did you mean `", guess, "`?");
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
  Table().SetDefaults(&c);  // each field's default_value (config.proto)
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
    errors.Add("(top level)", ShowYaml(root), "must be a mapping of configuration keys");
    return errors.ToStatus();
  }
  Table().ReadYaml(
      root,
      [&errors](const std::string& section, const std::string& key) {
        return errors.UnknownKey(section, key);
      },
      config, errors.lines());
  return errors.ToStatus();
}

namespace {

// The enum fields of `j` (a JSON object of `message`'s fields, by JSON or
// proto name) given by their spelling, rewritten to their proto names.
void SpellingsToEnumNames(const google::protobuf::Descriptor* message, nlohmann::json& j) {
  if (!j.is_object()) return;
  for (auto& [key, value] : j.items()) {
    const google::protobuf::FieldDescriptor* f = message->FindFieldByName(key);
    for (int i = 0; i < message->field_count() && f == nullptr; ++i) {
      if (message->field(i)->json_name() == key) f = message->field(i);
    }
    if (f == nullptr) continue;
    if (f->message_type() != nullptr) {
      if (value.is_array()) {
        for (auto& item : value) SpellingsToEnumNames(f->message_type(), item);
      } else {
        SpellingsToEnumNames(f->message_type(), value);
      }
    } else if (f->enum_type() != nullptr && value.is_string()) {
      for (int i = 0; i < f->enum_type()->value_count(); ++i) {
        const auto* v = f->enum_type()->value(i);
        if (EnumSpelling(v) == value.get<std::string>()) value = v->name();
      }
    }
  }
}

}  // namespace

absl::Status ParseProtoJsonConfig(const std::string& json, RunConfig* config) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  SpellingsToEnumNames(RunConfig::descriptor(), j);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (auto s = google::protobuf::util::JsonStringToMessage(j.dump(), config, options); !s.ok()) {
    return absl::InvalidArgumentError(std::string(s.message().data(), s.message().size()));
  }
  return absl::OkStatus();
}

namespace {

// Shared prefixes (docs/DATASETS.md "Shared prefixes and reuse"): only
// synthetic prompts have them, and prefix plus own length stays within the
// input length limit (the readers' and the length draws' bound).
void CheckPrefixRules(const surge::v1::DatasetConfig& d, Errors& errors) {
  constexpr uint64_t kMaxInputTokens = 1u << 24;
  if (d.random_prefix_len() == 0) return;
  if (!IsSynthetic(d)) {
    errors.Add("random_prefix_len", absl::StrCat(d.random_prefix_len()),
               absl::StrCat("shared prefixes are made only for synthetic prompts, not for "
                            "dataset_name \"",
                            d.dataset_name(),
                            "\" (a Mooncake trace has its own hash_ids); drop "
                            "--random-prefix-len or use --dataset-name synthetic"));
    return;
  }
  const uint64_t total = uint64_t{d.random_prefix_len()} + d.random_input_len();
  if (total > kMaxInputTokens) {
    errors.Add("random_prefix_len", absl::StrCat(d.random_prefix_len()),
               absl::StrCat("with random_input_len ", d.random_input_len(), " asks ", total,
                            " input tokens per request; prefix plus own tokens must be at most ",
                            kMaxInputTokens, " (flags --random-prefix-len, --random-input-len)"));
  }
}

// The dataset's rules across fields: a file for the file datasets, none
// for synthetic prompts, one length distribution, replay only of Mooncake.
void CheckDatasetRules(const RunConfig& c, Errors& errors) {
  const auto& d = c.dataset();
  const std::string& name = d.dataset_name();
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
  const std::string& dist = d.random_len_dist();
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
  CheckPrefixRules(d, errors);
  if (d.trace_replay() && name != "mooncake") {
    errors.Add("trace_replay", "true",
               absl::StrCat("only the \"mooncake\" dataset has timestamps to replay, not \"", name,
                            "\" (flag --trace-replay)"));
  }
}

// The flag of a configuration key: its underscores as dashes.
std::string FlagOf(std::string key) {
  for (char& ch : key) ch = ch == '_' ? '-' : ch;
  return "--" + key;
}

// The session options given, as (key, value as written).
std::vector<std::pair<std::string, std::string>> SessionOptionsGiven(
    const surge::v1::SessionConfig& s) {
  std::vector<std::pair<std::string, std::string>> given;
  if (!s.session_turns().empty()) {
    given.emplace_back("session_turns", absl::StrCat("\"", ToValidUtf8(s.session_turns()), "\""));
  }
  if (s.has_think_time_s()) given.emplace_back("think_time_s", Num(s.think_time_s()));
  if (!s.think_time_dist().empty()) {
    given.emplace_back("think_time_dist",
                       absl::StrCat("\"", ToValidUtf8(s.think_time_dist()), "\""));
  }
  if (s.has_think_time_mean_s())
    given.emplace_back("think_time_mean_s", Num(s.think_time_mean_s()));
  if (s.has_think_time_burstiness()) {
    given.emplace_back("think_time_burstiness", Num(s.think_time_burstiness()));
  }
  if (s.has_max_sessions()) given.emplace_back("max_sessions", absl::StrCat(s.max_sessions()));
  return given;
}

// The think-time options together (docs/DATASETS.md "Multi-turn sessions"):
// a fixed time or a distribution with its mean; a shape only for gamma.
void CheckThinkTimeRules(const surge::v1::SessionConfig& s, Errors& errors) {
  const std::string& dist = s.think_time_dist();
  const std::string quoted = absl::StrCat("\"", ToValidUtf8(dist), "\"");
  if (s.has_think_time_s() && !dist.empty()) {
    errors.Add("think_time_s", Num(s.think_time_s()),
               absl::StrCat("cannot be combined with think_time_dist ", quoted,
                            ": give a fixed think time (--think-time-s) or drawn ones "
                            "(--think-time-dist with --think-time-mean-s), not both"));
  }
  if (!dist.empty() && !s.has_think_time_mean_s()) {
    errors.Add("think_time_mean_s", "(not set)",
               absl::StrCat("is required with think_time_dist ", quoted,
                            ": the mean think time, s > 0 (flag --think-time-mean-s)"));
  }
  if (dist.empty() && s.has_think_time_mean_s()) {
    errors.Add("think_time_mean_s", Num(s.think_time_mean_s()),
               "is the mean of drawn think times, but think_time_dist is not given; give "
               "--think-time-dist fixed, exponential or gamma, or a fixed --think-time-s instead");
  }
  if (s.has_think_time_burstiness() && dist != "gamma") {
    errors.Add("think_time_burstiness", Num(s.think_time_burstiness()),
               absl::StrCat("only shapes gamma think times, but think_time_dist is ",
                            dist.empty() ? std::string("not given") : quoted,
                            "; give --think-time-dist gamma or drop --think-time-burstiness"));
  }
}

// Multi-turn sessions (docs/DATASETS.md "Multi-turn sessions"): every
// session option needs multi_turn; sessions come from a sharegpt file (which
// gives the turns) or synthetic prompts, and not yet with the features that
// plan single requests (trace replay, classes, shared prefixes).
void CheckSessionRules(const RunConfig& c, Errors& errors) {
  const surge::v1::SessionConfig& s = c.sessions();
  if (!s.multi_turn()) {
    for (const auto& [key, value] : SessionOptionsGiven(s)) {
      errors.Add(key, value,
                 absl::StrCat(FlagOf(key),
                              " needs --multi-turn (multi_turn: true): it shapes "
                              "multi-turn sessions, and none are sent without it"));
    }
    return;
  }
  CheckThinkTimeRules(s, errors);
  const auto& d = c.dataset();
  const std::string& name = d.dataset_name();
  if (!s.session_turns().empty()) {
    const std::string quoted = absl::StrCat("\"", ToValidUtf8(s.session_turns()), "\"");
    if (name == "sharegpt") {
      errors.Add("session_turns", quoted,
                 "a sharegpt file gives each session's turns (its conversation's human turns); "
                 "drop --session-turns");
    } else if (auto range = ParseSessionTurns(s.session_turns()); !range.ok()) {
      errors.Add("session_turns", quoted,
                 absl::StrCat(range.status().message(), " (flag --session-turns)"));
    }
  }
  if (name == "jsonl" || name == "mooncake") {
    errors.Add("multi_turn", "true",
               absl::StrCat("sessions are not available with dataset_name \"", name,
                            "\" yet: they come from --dataset-name sharegpt (a conversation's "
                            "human turns) or synthetic (--session-turns)"));
  }
  if (d.trace_replay()) {
    errors.Add("multi_turn", "true",
               "sessions are not available with trace_replay yet (flags --multi-turn, "
               "--trace-replay)");
  }
  if (c.classes_size() > 0) {
    errors.Add("multi_turn", "true",
               absl::StrCat("sessions are not available with traffic classes (", c.classes_size(),
                            " classes) yet; leave out classes or --multi-turn"));
  }
  if (d.random_prefix_len() > 0 && IsSynthetic(d)) {
    errors.Add("random_prefix_len", absl::StrCat(d.random_prefix_len()),
               "shared prefixes are not available with multi-turn sessions yet (a later turn "
               "starts with the session's history); drop --random-prefix-len or --multi-turn");
  }
}

// The request options' rules (the HTTP client's own checks of headers and
// extra body) and the built-in server's fault fractions together.
void CheckRequestRules(const RunConfig& c, Errors& errors) {
  const auto& target = c.target();
  // Target options (R-REQ-1): the same checks as the HTTP client's.
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
  for (const auto& [field, fraction] : fractions) fault_sum += fraction;
  if (fault_sum > 1 + 1e-9) {
    errors.Add("sim_fault_*", Num(fault_sum),
               "the fault fractions must add up to at most 1 (one fault per request)");
  }
  const auto& sim = c.sim_server();
  if (sim.max_num_seqs() > 0 && sim.decode_ms_base() + sim.decode_ms_per_seq() <= 0) {
    errors.Add("sim_decode_ms_base", Num(sim.decode_ms_base()),
               "with sim_max_num_seqs > 0 an engine step must take time: sim_decode_ms_base + "
               "sim_decode_ms_per_seq > 0 (flags --sim-decode-ms-base, --sim-decode-ms-per-seq)");
  }
}

// Ramp rates with no ramp-up strategy (none or not given): the user meant a
// ramp and forgot its strategy, and the run would go at request_rate instead
// (with the default request_rate inf, all at once). Refused, never warned:
// no configuration turns paced traffic into a burst by accident. (Trace
// replay warns that it ignores them; traffic_cfg.stages refuses them itself.)
void CheckRampRatesHaveStrategy(const RunConfig& c, Errors& errors) {
  const auto& t = c.traffic_cfg();
  const surge::v1::RampUpStrategy strategy = t.ramp_up_strategy();
  if (c.dataset().trace_replay() || t.stages_size() > 0 ||
      (strategy != surge::v1::RAMP_UP_STRATEGY_UNSPECIFIED &&
       strategy != surge::v1::RAMP_UP_STRATEGY_NONE)) {
    return;
  }
  std::vector<std::string> given;
  if (t.has_ramp_up_start_rps()) {
    given.push_back(absl::StrCat("traffic_cfg.ramp_up_start_rps = ", Num(t.ramp_up_start_rps())));
  }
  if (t.has_ramp_up_end_rps()) {
    given.push_back(absl::StrCat("traffic_cfg.ramp_up_end_rps = ", Num(t.ramp_up_end_rps())));
  }
  if (given.empty()) return;
  const bool burst = std::isinf(c.request_rate()) || c.request_rate() < kInstantModeBelowRps;
  const std::string rate = burst ? absl::StrCat(Num(c.request_rate()), ", instant mode: all ",
                                                c.num_prompts(), " requests at once")
                                 : absl::StrCat(Num(c.request_rate()), " RPS");
  errors.AddRaw(absl::StrCat(
      "  ", absl::StrJoin(given, ", "), ": a ramp-up needs traffic_cfg.ramp_up_strategy linear or ",
      "exponential (flag --ramp-up-strategy linear|exponential), which is ",
      strategy == surge::v1::RAMP_UP_STRATEGY_NONE ? "none" : "not given",
      "; without it the run would use request_rate = ", rate,
      ". Give the strategy, or remove the ramp-up rates (flags --ramp-up-start-rps, "
      "--ramp-up-end-rps)"));
}

// A class name: [A-Za-z0-9_.-]+.
bool IsClassName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
    return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
           ch == '-';
  });
}

// Traffic classes (docs/TRAFFIC.md "Traffic classes"): each name valid and
// its own, each class with a rate, no trace replay; then each class as a run
// of its own (ClassRunConfig) through ValidateRunConfig, its lines prefixed
// "classes[i]." (those the top level has already are not repeated).
void CheckClasses(const RunConfig& c, Errors& errors) {
  const std::vector<std::string> top_lines = *errors.lines();
  if (c.dataset().trace_replay()) {
    errors.Add("classes", absl::StrCat("(", c.classes_size(), " classes)"),
               "cannot be combined with trace_replay: a trace's timestamps are one stream");
  }
  std::map<std::string, int> first_with_name;
  for (int i = 0; i < c.classes_size(); ++i) {
    const surge::v1::TrafficClass& k = c.classes(i);
    const std::string at = absl::StrCat("classes[", i, "].");
    const std::string quoted = absl::StrCat("\"", ToValidUtf8(k.name()), "\"");
    if (!IsClassName(k.name())) {
      errors.Add(at + "name", k.name().empty() ? std::string("(not set)") : quoted,
                 "is required: a name of letters, digits, '_', '.' and '-' (e.g. chat)");
    } else if (auto [it, added] = first_with_name.emplace(k.name(), i); !added) {
      errors.Add(at + "name", quoted,
                 absl::StrCat("is used twice (also classes[", it->second,
                              "].name): each class needs a name of its own"));
    }
    const auto strategy = k.traffic_cfg().ramp_up_strategy();
    const bool ramp = strategy == surge::v1::RAMP_UP_STRATEGY_LINEAR ||
                      strategy == surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL;
    if (!k.has_request_rate() && !ramp && k.traffic_cfg().stages_size() == 0) {
      errors.Add(at + "request_rate", "(not set)",
                 "is required for every class: its rate, requests/s (or a ramp-up or stages "
                 "under its traffic_cfg)");
    }
    const absl::Status own = ValidateRunConfig(ClassRunConfig(c, i));
    if (own.ok()) continue;
    for (absl::string_view line : absl::StrSplit(own.message(), '\n')) {
      if (!absl::ConsumePrefix(&line, "  ")) continue;  // the heading
      if (std::find(top_lines.begin(), top_lines.end(), absl::StrCat("  ", line)) !=
          top_lines.end()) {
        continue;
      }
      errors.AddRaw(absl::StrCat("  ", at, line));
    }
  }
}

}  // namespace

namespace {

// Server telemetry's source (docs/METRICS.md "Server telemetry"): empty
// (off), "auto" (the target's /metrics) or an http(s) URL, read by the
// base URL's parser.
void CheckServerMetricsUrl(const RunConfig& c, Errors& errors) {
  const std::string& url = c.server_metrics();
  if (url.empty() || url == "auto") return;
  absl::StatusOr<surge::client::ParsedUrl> parsed = surge::client::ParseBaseUrl(url);
  if (parsed.ok()) return;
  errors.Add("server_metrics", absl::StrCat("\"", ToValidUtf8(url), "\""),
             absl::StrCat("must be \"auto\" (the target's /metrics; also the flag alone) or an "
                          "http or https URL such as http://127.0.0.1:8000/metrics: ",
                          absl::StripPrefix(parsed.status().message(), "base_url: "),
                          " (flag --server-metrics)"));
}

}  // namespace

absl::Status ValidateRunConfig(const RunConfig& c) {
  Errors errors;
  // Every single field's own rule (bounds, allowed values, UTF-8, files):
  // declared in config.proto. What follows are the rules across fields. The
  // classes' fields are checked as runs of their own (CheckClasses).
  if (c.classes_size() == 0) {
    Table().Check(c, errors.lines());
  } else {
    RunConfig top = c;
    top.clear_classes();
    Table().Check(top, errors.lines());
  }
  // Composed traffic: stages, spikes, sampler, mmpp states (docs/TRAFFIC.md).
  if (!c.dataset().trace_replay()) {
    for (std::string& line : TrafficConfigProblems(c)) errors.AddRaw(std::move(line));
  }
  // R-RAMP + R-INST: a configured ramp that is inactive must not fall back to
  // instant mode (one burst of every request).
  if (absl::Status s = CheckTrafficConfig(c); !s.ok()) {
    errors.AddRaw(std::string(absl::StripPrefix(s.message(), "invalid configuration:\n")));
  }
  CheckRampRatesHaveStrategy(c, errors);
  // Late-send policy (docs/DESIGN.md "Late-send policy").
  const surge::v1::LatePolicy late = c.late_policy();
  if (c.has_catch_up_rps()) {
    if (late != surge::v1::LATE_POLICY_CAP) {
      // (As given: a text that is no policy is named too.)
      const std::string given =
          EnumText(c, RunConfig::descriptor()->FindFieldByName("late_policy"));
      errors.Add("catch_up_rps", Num(c.catch_up_rps()),
                 absl::StrCat("is used only with late_policy \"cap\", not \"", ToValidUtf8(given),
                              "\" (flags --catch-up-rps, --late-policy cap)"));
    } else if (!(std::isfinite(c.catch_up_rps()) && c.catch_up_rps() > 0)) {
      errors.Add("catch_up_rps", Num(c.catch_up_rps()),
                 "must be a finite rate > 0, requests/s (flag --catch-up-rps)");
    }
  } else if (late == surge::v1::LATE_POLICY_CAP) {
    errors.Add("catch_up_rps", "(not set)",
               "is required with late_policy \"cap\": the fastest rate, requests/s, at which "
               "late requests are released (flag --catch-up-rps)");
  }
  // A host name has no spaces or slashes (a URL given by mistake).
  if (c.metrics_host().find_first_of(" \t/") != std::string::npos) {
    errors.Add("metrics_host", absl::StrCat("\"", ToValidUtf8(c.metrics_host()), "\""),
               "must be an IP address or a host name, e.g. 127.0.0.1 (flag --metrics-host)");
  }
  const auto& target = c.target();
  const std::string& url = target.base_url();
  if (!url.empty()) {
    // The same parser the workers use, so a URL that passes here connects.
    if (absl::StatusOr<surge::client::ParsedUrl> parsed = surge::client::ParseBaseUrl(url);
        !parsed.ok()) {
      errors.Add("base_url", absl::StrCat("\"", url, "\""),
                 absl::StrCat(std::string(parsed.status().message()), " (flag --base-url)"));
    }
  }
  CheckServerMetricsUrl(c, errors);
  const std::string& ep = target.endpoint();
  auto ends_with = [](const std::string& a, const std::string& b) {
    return a.size() >= b.size() && a.compare(a.size() - b.size(), b.size(), b) == 0;
  };
  if (ep.empty() || ep[0] != '/' || !ends_with(ep, "/completions")) {
    errors.Add("endpoint", absl::StrCat("\"", ep, "\""),
               "must be an OpenAI-compatible path ending in /chat/completions or /completions, "
               "e.g. /v1/chat/completions (flag --endpoint)");
  }
  if (c.stop_on_alarm() && c.has_lateness_alarm_ms() && c.lateness_alarm_ms() == 0) {
    errors.Add("stop_on_alarm", "true",
               "needs a lateness alarm: lateness_alarm_ms is 0 (off); give it a threshold > 0 "
               "(flag --lateness-alarm-ms) or leave --stop-on-alarm out");
  }
  // The steady-state window's form (its place in the plan is checked once
  // the plan exists, app/warmup_prepare.cc).
  if (auto spec = ParseSteadyState(c.steady_state_s()); !spec.ok()) {
    errors.Add("steady_state_s", absl::StrCat("\"", ToValidUtf8(c.steady_state_s()), "\""),
               absl::StrCat(spec.status().message(), " (flag --steady-state-s)"));
  }
  if (auto ps = ParseMetricPercentiles(c.metric_percentiles()); !ps.ok()) {
    errors.Add("metric_percentiles", absl::StrCat("\"", ToValidUtf8(c.metric_percentiles()), "\""),
               absl::StrCat(ps.status().message(), " (flag --metric-percentiles)"));
  }
  CheckDatasetRules(c, errors);
  CheckSessionRules(c, errors);
  CheckRequestRules(c, errors);
  if (c.classes_size() > 0) CheckClasses(c, errors);
  return errors.ToStatus();
}

namespace {

// Options that shape traffic or prompts but have no effect in this run.
void AddIneffectiveTrafficWarnings(const RunConfig& c, std::vector<std::string>& warnings) {
  // Options that have no effect in this run (docs/DESIGN.md "No option is
  // silently ignored"): warned, the run goes on, and run_config.json leaves
  // them out (SavedConfigJson).
  const auto& d = c.dataset();
  const auto& t = c.traffic_cfg();
  const bool replay = d.trace_replay();
  if (t.burstiness() != 0) {
    if (PlansInstantMode(c)) {
      warnings.push_back(absl::StrCat("traffic_cfg.burstiness ", t.burstiness(),
                                      " ignored: in instant mode every request is due at once "
                                      "(flags --burstiness, --request-rate)"));
    }
  }
  // Late-send policy in instant mode: every request is planned at 0, so all
  // but the first few are late; allowed (the user may mean it), said aloud.
  if ((c.late_policy() == surge::v1::LATE_POLICY_SKIP ||
       c.late_policy() == surge::v1::LATE_POLICY_CAP) &&
      PlansInstantMode(c)) {
    warnings.push_back(absl::StrCat(
        "late_policy ", EnumSpelling(c.late_policy()),
        " in instant mode: every request is planned at 0, so every one released more than "
        "late_threshold_ms after the start is late and ",
        c.late_policy() == surge::v1::LATE_POLICY_SKIP ? "skipped" : "spaced at catch_up_rps",
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
}

// TLS and built-in server options that have no effect with this target.
void AddIneffectiveServerWarnings(const RunConfig& c, std::vector<std::string>& warnings) {
  const auto& target = c.target();
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
    // Every built-in server option changed from its default.
    const auto& sim = c.sim_server();
    const auto defaults = DefaultRunConfig().sim_server();
    const std::string prefix =
        SpecOf(RunConfig::descriptor()->FindFieldByName("sim_server")).key_prefix();
    std::vector<std::string> keys;
    const auto* descriptor = surge::v1::SimServerConfig::descriptor();
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const auto* f = descriptor->field(i);
      if (!google::protobuf::util::MessageDifferencer().CompareWithFields(sim, defaults, {f},
                                                                          {f})) {
        keys.push_back(prefix + f->name());
      }
    }
    if (!keys.empty()) {
      warnings.push_back(absl::StrCat(
          absl::StrJoin(keys, ", "), " ignored: they set up the built-in server, and base_url ",
          target.base_url(), " is used instead (flags --sim-*, --base-url)"));
    }
  }
}

}  // namespace

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
  if (!c.metrics_host().empty() && c.metrics_port() == 0) {
    warnings.push_back(absl::StrCat("metrics_host \"", c.metrics_host(),
                                    "\" is unused: live metrics are off without a metrics_port "
                                    "(flag --metrics-port)"));
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
  AddIneffectiveTrafficWarnings(c, warnings);
  AddIneffectiveServerWarnings(c, warnings);
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

// `saved`'s "headers": the lines of `headers` without the credential ones
// (their names go to `left_out`), or no key when none is left.
void KeepHeadersWithoutSecrets(const google::protobuf::RepeatedPtrField<std::string>& headers,
                               nlohmann::ordered_json& saved, std::vector<std::string>* left_out) {
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  for (const std::string& line : headers) {
    if (SecretHeaderName(line)) {
      if (left_out != nullptr) left_out->push_back(line.substr(0, line.find(':')));
    } else {
      kept.push_back(line);
    }
  }
  if (kept.empty()) {
    saved.erase("headers");
  } else {
    saved["headers"] = kept;
  }
}

}  // namespace

std::string SavedConfigJson(const RunConfig& c, std::vector<std::string>* left_out) {
  // Every option as its save policy says (config.proto), then the keys that
  // had no effect in this run are taken out and the values that were implied
  // are written as used.
  nlohmann::ordered_json j = Table().Save(c);
  const auto& t = c.traffic_cfg();
  const bool replay = c.dataset().trace_replay();
  const bool strategy_set = t.ramp_up_strategy() != surge::v1::RAMP_UP_STRATEGY_UNSPECIFIED &&
                            t.ramp_up_strategy() != surge::v1::RAMP_UP_STRATEGY_NONE;
  // Traffic keys (AISBench's); none for a trace replay, whose timestamps set
  // the schedule. request_rate has no effect under an active ramp (R-TGT).
  // An inactive ramp's keys had no effect (R-RAMP: request_rate was used),
  // nor has burstiness in instant mode (R-INST: every offset is 0).
  if (replay) {
    j.erase("request_rate");
    j.erase("traffic_cfg");
  } else {
    // With stages (docs/TRAFFIC.md) the stages' rates replace request_rate
    // and the seed's ramp keys.
    const ResolvedTraffic traffic_used = ResolveSeedTraffic(c);
    const bool stages = t.stages_size() > 0;
    if (traffic_used.ramp_active || stages) j.erase("request_rate");
    if (j.contains("traffic_cfg")) {
      nlohmann::ordered_json& traffic = j["traffic_cfg"];
      if (traffic_used.instant && !UsesComposedTraffic(c)) traffic.erase("burstiness");
      if (!(strategy_set && traffic_used.ramp_active) || stages) {
        for (const char* key : {"ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps"}) {
          traffic.erase(key);
        }
      }
      if (traffic.empty()) j.erase("traffic_cfg");
    }
  }
  const auto& target = c.target();
  if (!IsHttps(target)) {
    j.erase("ca_cert_path");
    j.erase("insecure_skip_verify");
  }
  // Headers whose name suggests a credential are never saved.
  if (j.contains("headers")) KeepHeadersWithoutSecrets(target.headers(), j, left_out);
  // With classes the top-level traffic keys are unused; the classes' headers
  // that may hold a secret are left out as the top level's are.
  if (c.classes_size() > 0 && j.contains("classes")) {
    j.erase("request_rate");
    j.erase("traffic_cfg");
    for (int i = 0; i < c.classes_size(); ++i) {
      nlohmann::ordered_json& saved = j["classes"][i];
      if (saved.contains("headers")) {
        KeepHeadersWithoutSecrets(c.classes(i).headers(), saved, left_out);
      }
    }
  }
  const auto& d = c.dataset();
  const bool synthetic = IsSynthetic(d);
  if (!synthetic) j.erase("random_input_len");
  // A Mooncake trace gives every request's output length itself.
  if (d.dataset_name() == "mooncake") j.erase("random_output_len");
  // Only the distribution used, with its one parameter (as used).
  const std::string& dist = d.random_len_dist();
  for (const auto& [param, owner] :
       std::vector<std::pair<std::string, std::string>>{{"random_range_ratio", "uniform"},
                                                        {"random_len_stddev", "gaussian"},
                                                        {"random_zipf_s", "zipf"}}) {
    if (!synthetic || dist != owner) j.erase(param);
  }
  if (!synthetic) {
    j.erase("random_len_dist");
  } else {
    if (dist.empty()) j["random_len_dist"] = "fixed";
    if (dist == "uniform") j["random_range_ratio"] = d.random_range_ratio();
    if (dist == "gaussian") j["random_len_stddev"] = d.random_len_stddev();
    if (dist == "zipf") j["random_zipf_s"] = d.has_random_zipf_s() ? d.random_zipf_s() : 1.0;
  }
  if (replay) {
    j["trace_time_scale"] = d.has_trace_time_scale() ? d.trace_time_scale() : 1.0;
  } else {
    j.erase("trace_time_scale");
  }
  // The built-in server's options only when it served the run, and its
  // fault settings only when it injected faults.
  const std::string sim_prefix =
      SpecOf(RunConfig::descriptor()->FindFieldByName("sim_server")).key_prefix();
  bool faults = false;
  for (const auto& [key, fraction] : SimFaultFractions(c.sim_server())) faults |= fraction != 0;
  for (auto it = j.begin(); it != j.end();) {
    const bool sim_key = absl::StartsWith(it.key(), sim_prefix);
    const bool fault_setting = absl::StartsWith(it.key(), sim_prefix + "fault_");
    if (sim_key && (!target.base_url().empty() || (fault_setting && !faults))) {
      it = j.erase(it);
    } else {
      ++it;
    }
  }
  return j.dump(2) + "\n";
}

std::vector<std::string> PlanDefiningDifferences(const RunConfig& made_with,
                                                 const RunConfig& given) {
  const nlohmann::json a = nlohmann::json::parse(SavedConfigJson(made_with, nullptr));
  const nlohmann::json b = nlohmann::json::parse(SavedConfigJson(given, nullptr));
  // The keys that make the plan or the payloads; their flags from the table.
  static const char* const kKeys[] = {
      "request_rate",    "traffic_cfg",        "num_prompts",       "seed",
      "dataset_name",    "dataset_path",       "random_input_len",  "random_output_len",
      "random_len_dist", "random_range_ratio", "random_len_stddev", "random_zipf_s",
      "trace_replay",    "trace_time_scale",   "random_prefix_len", "random_prefix_groups",
      "classes",
  };
  std::vector<std::string> out;
  for (const std::string key : kKeys) {
    std::vector<std::string> flags;
    for (const OptionFlag& f : Table().flags()) {
      if (f.field == key || absl::StartsWith(f.field, key + ".")) flags.push_back("--" + f.name);
    }
    // Lists of mappings have no flag of their own; some have a flag with a
    // syntax of its own (--stage, --spike), named by their flag_text.
    if (const auto* field = RunConfig::descriptor()->FindFieldByName(key);
        field != nullptr && field->message_type() != nullptr) {
      for (int i = 0; i < field->message_type()->field_count(); ++i) {
        const std::string& text = SpecOf(field->message_type()->field(i)).flag_text();
        if (text.rfind("--", 0) == 0 && text != "--config") flags.push_back(text);
      }
    }
    const std::string flag = flags.empty() ? std::string("--config") : absl::StrJoin(flags, ", ");
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
