#include "coordinator/results/prefix_reuse_summary.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

constexpr char kShortfallCause[] =
    "the server's cache held less than the plan reuses: cache too small, eviction, or routing "
    "across replicas";

std::string Percent(double share) { return absl::StrFormat("%.1f%%", 100.0 * share); }

}  // namespace

surge::v1::PrefixReuseFact PrefixReuseFactOf(uint32_t block_tokens, uint64_t shared_tokens,
                                             uint64_t prompt_tokens) {
  surge::v1::PrefixReuseFact f;
  f.set_block_tokens(block_tokens);
  f.set_planned_shared_tokens(shared_tokens);
  f.set_planned_prompt_tokens(prompt_tokens);
  const double share = prompt_tokens == 0 ? 0.0
                                          : static_cast<double>(shared_tokens) /
                                                static_cast<double>(prompt_tokens);
  f.set_planned_reuse(std::round(share * 1e6) / 1e6);
  return f;
}

std::optional<double> MeasuredReuse(const RunSummary& s) {
  if (s.cached_reported == 0 || s.cached_input_tokens == 0) return std::nullopt;
  return static_cast<double>(s.cached_tokens) / static_cast<double>(s.cached_input_tokens);
}

bool HasPrefixReuse(const RunSummary& s, const surge::v1::RunFacts& facts) {
  return facts.has_prefix_reuse() || s.cached_reported > 0;
}

std::string ReuseShortfallWarning(const RunSummary& s, const surge::v1::RunFacts& facts) {
  const std::optional<double> measured = MeasuredReuse(s);
  if (!facts.has_prefix_reuse() || !measured.has_value()) return "";
  const double planned = facts.prefix_reuse().planned_reuse();
  const double points = 100.0 * (planned - *measured);
  if (points <= kReuseShortfallPoints) return "";
  return absl::StrFormat("measured prefix reuse %s is %.1f points below the planned %s: %s",
                         Percent(*measured), points, Percent(planned), kShortfallCause);
}

void AddPrefixReuseJson(const RunSummary& s, const surge::v1::RunFacts& facts,
                        nlohmann::json* summary_json) {
  if (!HasPrefixReuse(s, facts)) return;
  nlohmann::json j;
  if (facts.has_prefix_reuse()) {
    const surge::v1::PrefixReuseFact& p = facts.prefix_reuse();
    j["planned_reuse"] = p.planned_reuse();
    j["block_tokens"] = p.block_tokens();
  } else {
    j["planned_reuse"] = nullptr;
  }
  const std::optional<double> measured = MeasuredReuse(s);
  j["measured_reuse"] = measured.has_value() ? nlohmann::json(*measured) : nlohmann::json(nullptr);
  j["measured"] = measured.has_value() ? "reported" : "not reported";
  j["cached_tokens"] = s.cached_tokens;
  j["reported_requests"] = s.cached_reported;
  j["of_succeeded"] = s.succeeded;
  j["rule"] =
      "planned = prompt tokens repeating, in whole blocks, a prefix sent earlier in the plan / "
      "all prompt tokens; measured = sum of usage.prompt_tokens_details.cached_tokens / sum of "
      "input_tokens over the OK requests that reported it";
  if (std::string w = ReuseShortfallWarning(s, facts); !w.empty()) j["warning"] = w;
  (*summary_json)["prefix_reuse"] = std::move(j);
}

std::string PrefixReuseCsvRows(const RunSummary& s, const surge::v1::RunFacts& facts) {
  if (!HasPrefixReuse(s, facts)) return "";
  const std::optional<double> measured = MeasuredReuse(s);
  return absl::StrCat(
      "Planned Prefix Reuse (%),",
      facts.has_prefix_reuse()
          ? absl::StrFormat("%.4f", 100.0 * facts.prefix_reuse().planned_reuse())
          : std::string("n/a"),
      "\n", "Measured Prefix Reuse (%),",
      measured.has_value() ? absl::StrFormat("%.4f", 100.0 * *measured)
                           : std::string("not reported"),
      "\n", "Cached Prompt Tokens,", s.cached_tokens, "\n");
}

std::string PrefixReuseLines(const RunSummary& s, const surge::v1::RunFacts& facts) {
  if (!HasPrefixReuse(s, facts)) return "";
  const std::optional<double> measured = MeasuredReuse(s);
  std::string out = "prefix reuse: planned ";
  if (facts.has_prefix_reuse()) {
    absl::StrAppend(&out, Percent(facts.prefix_reuse().planned_reuse()), " (blocks of ",
                    facts.prefix_reuse().block_tokens(), " tokens)");
  } else {
    absl::StrAppend(&out, "n/a (no shared prefixes in the plan)");
  }
  absl::StrAppend(&out, ", measured ");
  if (measured.has_value()) {
    absl::StrAppend(&out, Percent(*measured), " (cached_tokens ", s.cached_tokens, " of ",
                    s.cached_input_tokens, " input tokens, ", s.cached_reported, " of ",
                    s.succeeded, " requests reported it)");
  } else {
    absl::StrAppend(&out, "not reported (the server sent no "
                          "usage.prompt_tokens_details.cached_tokens)");
  }
  absl::StrAppend(&out, "\n");
  if (std::string w = ReuseShortfallWarning(s, facts); !w.empty()) {
    absl::StrAppend(&out, "WARNING: ", w, "\n");
  }
  return out;
}

}  // namespace surge::coordinator
