// Asked against server-reported prompt lengths (docs/DATASETS.md "Token
// counters"): records say the plan's length (asked_input_tokens), the
// counter that sized the prompt (token_counter) and whether input_tokens is
// the server's usage.prompt_tokens (input_tokens_estimated false). The
// summary compares the two over OK records the server counted whose prompt
// surge sized (the estimate, --tokenizer server or FILE.model: not a
// dataset's own text), and warns when prompts fitted to a tokenizer are
// more than 1 % off. Pure.
#ifndef SURGE_COORDINATOR_RESULTS_INPUT_LENGTHS_H_
#define SURGE_COORDINATOR_RESULTS_INPUT_LENGTHS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// "estimate", "server", "sentencepiece", "dataset"; "" for UNSPECIFIED.
const char* TokenCounterLabel(surge::v1::TokenCounter counter);
// The counter of a label; UNSPECIFIED for "" and unknown labels.
surge::v1::TokenCounter TokenCounterFromLabel(std::string_view label);

// The comparison over the records added.
struct InputLengthSummary {
  // Records sized by a tokenizer (SERVER or SENTENCEPIECE), any status: the
  // warning is given only then.
  uint64_t fitted = 0;
  // The counter of the records surge sized (ESTIMATE, SERVER or
  // SENTENCEPIECE: the run's --tokenizer).
  surge::v1::TokenCounter counter = surge::v1::TOKEN_COUNTER_UNSPECIFIED;
  // OK records with an asked length and the server's own count.
  uint64_t compared = 0;
  uint64_t asked_sum = 0, reported_sum = 0, abs_diff_sum = 0;
  uint64_t max_abs_diff = 0;
  // Compared records whose two lengths differ.
  uint64_t mismatches = 0;

  double mean_asked() const;
  double mean_reported() const;
  double mean_abs_diff() const;
  // True when the mean absolute difference exceeds 1 % of the mean asked
  // length (with fitted > 0: the summary's warning).
  bool off_by_more_than_1_percent() const;
  // True when the summary shows the comparison: some OK record surge sized
  // was counted by the server.
  bool shown() const { return compared > 0 && counter != surge::v1::TOKEN_COUNTER_UNSPECIFIED; }
};

// Adds one final record.
void AddInputLength(const surge::v1::RequestRecord& record, InputLengthSummary* summary);

// The summary JSON's "input_lengths" block: counter, compared, mean_asked,
// mean_reported, mean_abs_diff, max_abs_diff, mismatches, rule.
nlohmann::json InputLengthsToJson(const InputLengthSummary& summary);

// The CSV's common rows, (name, value).
std::vector<std::pair<std::string, nlohmann::json>> InputLengthRows(const InputLengthSummary& s);

// The console lines (each "  ...\n"), the warning line included when
// prompts were fitted to a tokenizer and differ by more than 1 %.
std::string InputLengthLines(const InputLengthSummary& summary);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_INPUT_LENGTHS_H_
