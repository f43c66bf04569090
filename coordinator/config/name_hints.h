// Hints for names the configuration does not have: the closest key or flag
// ("did you mean"), and the sentence for a name AISBench or vLLM use where
// surge spells it otherwise. Pure.
#ifndef SURGE_COORDINATOR_CONFIG_NAME_HINTS_H_
#define SURGE_COORDINATOR_CONFIG_NAME_HINTS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace surge::coordinator {

// The candidate closest to `word` by edit distance (case-insensitive, '-'
// read as '_', a left-out "_unit" suffix counts 1), or "" when none is within
// max(2, len/3) edits. For "did you mean" hints on unknown keys and flags.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

// AISBench's and vLLM's names (keys as written, '_' between words) with the
// sentence that names surge's key; keys of AISBench model configs that
// surge has no use for say so instead.
const std::map<std::string, std::string>& ForeignKeyHints();

// For a name that AISBench or vLLM use and surge spells otherwise (e.g.
// "batch_size", "max_out_len", "host_ip"; '-' read as '_'), one sentence
// naming surge's key; "" for any other name. Used for unknown YAML keys and
// unknown flags alike.
std::string ForeignNameHint(std::string_view name);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CONFIG_NAME_HINTS_H_
