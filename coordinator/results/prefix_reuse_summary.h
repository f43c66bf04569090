// Planned and measured prefix reuse in the run's summary (docs/DATASETS.md
// "Shared prefixes and reuse"): the summary JSON's "prefix_reuse" block, the
// CSV's rows, the console lines and the warning when the server's cache held
// clearly less than the plan reuses. All of it only when the plan has shared
// prefixes or the server reported cached tokens. Pure.
#ifndef SURGE_COORDINATOR_RESULTS_PREFIX_REUSE_SUMMARY_H_
#define SURGE_COORDINATOR_RESULTS_PREFIX_REUSE_SUMMARY_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "coordinator/results/summary.h"
#include "surge/v1/run_facts.pb.h"

namespace surge::coordinator {

// Points by which the measured reuse may fall short of the planned one
// before the summary warns.
inline constexpr double kReuseShortfallPoints = 10.0;

// The run fact of a planned reuse: shared and prompt tokens in blocks of
// block_tokens, the share rounded to 1e-6.
surge::v1::PrefixReuseFact PrefixReuseFactOf(uint32_t block_tokens, uint64_t shared_tokens,
                                             uint64_t prompt_tokens);

// Σ cached_tokens / Σ input_tokens over the OK requests whose server
// reported cached_tokens; nullopt when none did ("not reported") or they
// had no input tokens.
std::optional<double> MeasuredReuse(const RunSummary& summary);

// True when the summary has something to say: a planned reuse, or cached
// tokens reported.
bool HasPrefixReuse(const RunSummary& summary, const surge::v1::RunFacts& facts);

// The warning when measured reuse is more than kReuseShortfallPoints below
// the planned one; empty otherwise (also when either is missing).
std::string ReuseShortfallWarning(const RunSummary& summary, const surge::v1::RunFacts& facts);

// Adds "prefix_reuse" to the summary JSON when HasPrefixReuse.
void AddPrefixReuseJson(const RunSummary& summary, const surge::v1::RunFacts& facts,
                        nlohmann::json* summary_json);

// The CSV's rows ("Planned Prefix Reuse (%)", "Measured Prefix Reuse (%)",
// "Cached Prompt Tokens"), each "name,value\n"; empty unless HasPrefixReuse.
std::string PrefixReuseCsvRows(const RunSummary& summary, const surge::v1::RunFacts& facts);

// The console lines under the summary table: the reuse line, and the
// warning line when there is one; empty unless HasPrefixReuse.
std::string PrefixReuseLines(const RunSummary& summary, const surge::v1::RunFacts& facts);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_PREFIX_REUSE_SUMMARY_H_
