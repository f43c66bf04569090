// Prompts of a requested length from the built-in public-domain corpus
// (common/corpus/public_domain.txt), and the token estimate that goes with
// them. Pure and deterministic: the same (input_tokens, prompt_seed) gives
// the same text on every worker.
#ifndef SURGE_COMMON_PROMPT_BUILDER_H_
#define SURGE_COMMON_PROMPT_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "surge/v1/wire.pb.h"

namespace surge {

// Characters per token of the approximation: OpenAI's rule of thumb for
// English text ("1 token ≈ 4 characters"). Real tokenizers differ by ±25 %
// on this corpus; docs/DATASETS.md says so.
inline constexpr int kCharsPerToken = 4;

// The embedded corpus (UTF-8, plain words).
std::string_view Corpus();

// Number of words of the corpus (>= 1).
size_t CorpusWordCount();

// `count` corpus words starting at word `first_word mod CorpusWordCount()`,
// wrapping around, joined by single spaces ("" for 0): the words BuildPrompt
// takes, by number instead of by length (prompts fitted to a tokenizer,
// coordinator/dataset/prompt_fitter.h).
std::string CorpusWords(uint64_t first_word, size_t count);

// A prompt of about `input_tokens` tokens: whole corpus words, starting at
// word `prompt_seed mod words`, wrapping around, joined by single spaces, of
// kCharsPerToken * input_tokens characters (cut at a word end, so at most one
// word shorter). input_tokens = 0 gives "".
std::string BuildPrompt(uint32_t input_tokens, uint64_t prompt_seed);

// The prompt an assignment refers to: its prompt_text when set; else, with
// prefix_tokens, BuildPrompt(prefix_tokens, prefix_seed), a space and
// BuildPrompt(input_tokens - prefix_tokens, prompt_seed); else, with
// prefix_block_ids, those shared blocks followed by corpus words up to
// input_tokens; else BuildPrompt(input_tokens, prompt_seed). Pure.
std::string BuildAssignmentPrompt(const surge::v1::Assignment& assignment);

// Tokens per shared-prefix block (the Mooncake trace's block size).
inline constexpr uint32_t kPrefixBlockTokens = 512;

// ceil(bytes / kCharsPerToken): the token count surge assumes for a text it
// did not tokenize (dataset prompts' input tokens, sim server usage, and the
// output tokens of an answer whose server sent no usage, streamed or not).
// Bytes of UTF-8: the same as characters for English text.
uint32_t EstimateTokens(std::string_view text);

// The same estimate for `bytes` bytes of text (a streamed answer's content
// summed over its events). Saturates at UINT32_MAX.
uint32_t EstimateTokensForBytes(uint64_t bytes);

}  // namespace surge

#endif  // SURGE_COMMON_PROMPT_BUILDER_H_
