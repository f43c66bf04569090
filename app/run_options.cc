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
#include "coordinator/config/option_table.h"
#include "coordinator/config/run_config.h"
#include "coordinator/config/traffic_flags.h"

namespace surge::app {

// The configuration's reader, defaults and validator (coordinator/config).
using coordinator::ApplyImpliedOptions;
using coordinator::DefaultRunConfig;
using coordinator::DidYouMean;
using coordinator::ForeignNameHint;
using coordinator::LoadYamlConfig;
using coordinator::ValidateRunConfig;

using surge::v1::RunConfig;

namespace {

constexpr absl::string_view kProblemsHeader = "invalid configuration:\n";

// Appends the lines of a failed status (without its header) to `errors`.
void AddProblemLines(const absl::Status& s, std::vector<std::string>* errors) {
  if (s.ok()) return;
  for (absl::string_view line :
       absl::StrSplit(absl::StripPrefix(s.message(), kProblemsHeader), '\n')) {
    errors->emplace_back(line);
  }
}

}  // namespace

TableFlags::TableFlags(const google::protobuf::Descriptor* root)
    : table_(coordinator::OptionTable::For(root)) {}

void TableFlags::Register(CLI::App& command) {
  for (const coordinator::OptionFlag& f : table_.flags()) {
    auto& slot = values_[f.name];
    // CLI11 takes the names as one comma-separated list.
    std::vector<std::string> dashed;
    for (const std::string& name : f.Names()) dashed.push_back(absl::StrCat("--", name));
    const std::string names = absl::StrJoin(dashed, ",");
    if (f.entry->field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL) {
      // `--x` alone gives "true"; `--x=VALUE` is read as a boolean.
      slot.first = command.add_flag(names, slot.second, f.help);
    } else {
      slot.first = command.add_option(names, slot.second, f.help);
      // A flag that may stand alone (OptionSpec.flag_bare_value).
      if (!f.entry->spec->flag_bare_value().empty()) slot.first->expected(0, 1);
      if (f.entry->field->is_repeated()) {
        slot.first->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
      }
    }
    const surge::v1::OptionSpec& spec = *f.entry->spec;
    if (spec.required()) slot.first->required();
    // CLI11 lists an option of the group "" nowhere.
    if (!spec.help_group().empty()) {
      slot.first->group(spec.help_group() == "-" ? std::string() : spec.help_group());
    }
  }
}

std::vector<std::string> TableFlags::Names() const {
  std::vector<std::string> names;
  for (const coordinator::OptionFlag& f : table_.flags()) {
    for (const std::string& name : f.Names()) names.push_back(name);
  }
  return names;
}

void TableFlags::Apply(google::protobuf::Message* message, std::vector<std::string>* errors) const {
  for (const coordinator::OptionFlag& f : table_.flags()) {
    auto it = values_.find(f.name);
    if (it == values_.end()) continue;
    const auto& [option, value] = it->second;
    if (option == nullptr || option->count() == 0) continue;
    // A list flag adds each occurrence (to the --config file's list).
    std::vector<std::string> texts =
        f.entry->field->is_repeated() ? option->results() : std::vector<std::string>{value};
    // Given without a value: the spec's bare value.
    const std::string& bare = f.entry->spec->flag_bare_value();
    const std::vector<std::string>& given = option->results();
    if (!bare.empty() && (given.empty() || (given.size() == 1 && given[0].empty()))) {
      texts = {bare};
    }
    for (const std::string& text : texts) {
      if (std::string problem = table_.SetFlag(f, text, message); !problem.empty()) {
        errors->push_back(std::move(problem));
      }
    }
  }
}

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
  // Lists of mappings with a flag syntax of their own (docs/TRAFFIC.md); the
  // help is their declaration's (config.proto).
  const auto* traffic = surge::v1::TrafficCfg::descriptor();
  command
      .add_option("--stage", stages_,
                  coordinator::SpecOf(traffic->FindFieldByName("stages")).help())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command
      .add_option("--spike", spikes_,
                  coordinator::SpecOf(traffic->FindFieldByName("spikes")).help())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  flags_.Register(command);
}

absl::Status TableFlags::Resolve(google::protobuf::Message* message) const {
  table_.SetDefaults(message);
  std::vector<std::string> errors;
  Apply(message, &errors);
  // Range checks on the values that did parse.
  table_.Check(*message, &errors);
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(kProblemsHeader, absl::StrJoin(errors, "\n")));
}

absl::Status ParseGoodput(const std::vector<std::string>& values, surge::v1::GoodputConfig* out) {
  // The metrics are GoodputConfig's fields without their "_ms" (config.proto).
  std::vector<std::string> metrics;
  const auto* descriptor = surge::v1::GoodputConfig::descriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    metrics.emplace_back(absl::StripSuffix(descriptor->field(i)->name(), "_ms"));
  }
  std::string listed = metrics.back();
  if (metrics.size() > 1) {
    listed = absl::StrCat(
        absl::StrJoin(std::vector<std::string>(metrics.begin(), metrics.end() - 1), ", "), " or ",
        listed);
  }
  std::vector<std::string> errors;
  for (const std::string& value : values) {
    // "ttft:25 e2el:1000" as one argument (the README's form) or several.
    for (absl::string_view objective :
         absl::StrSplit(value, absl::ByAnyChar(" \t,"), absl::SkipEmpty())) {
      const std::string item(objective);
      const size_t colon = item.find(':');
      const std::string key = absl::AsciiStrToLower(item.substr(0, colon));
      if (colon == std::string::npos) {
        errors.push_back(absl::StrCat("  goodput = \"", item, "\": must be METRIC:MS with METRIC ",
                                      listed, ", e.g. ", metrics[0], ":25 (flag --goodput)"));
        continue;
      }
      if (std::find(metrics.begin(), metrics.end(), key) == metrics.end()) {
        const std::string guess = DidYouMean(key, metrics);
        errors.push_back(absl::StrCat(
            "  goodput = \"", item, "\": unknown metric \"", key, "\"",
            guess.empty() ? std::string() : absl::StrCat(" (did you mean `", guess, "`?)"),
            "; allowed: ", absl::StrJoin(metrics, ", "), " (flag --goodput)"));
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
      out->GetReflection()->SetDouble(out, descriptor->FindFieldByName(key + "_ms"), ms);
    }
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(kProblemsHeader, absl::StrJoin(errors, "\n")));
}

absl::Status JoinProblems(const std::vector<absl::Status>& statuses) {
  std::vector<std::string> errors;
  for (const absl::Status& s : statuses) AddProblemLines(s, &errors);
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(kProblemsHeader, absl::StrJoin(errors, "\n")));
}

absl::StatusOr<RunConfig> RunOptions::Resolve() const {
  // Every problem in one pass: the file's, the flags' and the validator's.
  RunConfig config = DefaultRunConfig();
  std::vector<std::string> errors;
  auto add_status = [&errors](const absl::Status& s) { AddProblemLines(s, &errors); };
  if (command_ != nullptr) {
    std::vector<std::string> names = flags_.Names();
    names.push_back("config");
    names.push_back("goodput");
    names.push_back("stage");
    names.push_back("spike");
    names.insert(names.end(), other_names_.begin(), other_names_.end());
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
  flags_.Apply(&config, &errors);
  // --stage, --spike: the flags' list replaces the file's.
  if (!stages_.empty()) {
    config.mutable_traffic_cfg()->clear_stages();
    for (const std::string& item : stages_) {
      add_status(coordinator::ParseStageFlag(item, config.mutable_traffic_cfg()));
    }
  }
  if (!spikes_.empty()) {
    config.mutable_traffic_cfg()->clear_spikes();
    for (const std::string& item : spikes_) {
      add_status(coordinator::ParseSpikeFlag(item, config.mutable_traffic_cfg()));
    }
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
    return absl::InvalidArgumentError(absl::StrCat(kProblemsHeader, absl::StrJoin(errors, "\n")));
  }
  return config;
}

}  // namespace surge::app
