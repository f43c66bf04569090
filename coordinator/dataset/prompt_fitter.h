// Prompts of an exact token count (`--tokenizer server` or FILE.model;
// docs/DATASETS.md "Token counters"): corpus words, as many as make the
// counter give the asked count, finished with short words known to be one
// token each when whole words step over it. The fitting itself is pure
// logic; every count goes through a TextTokenCounter (the target's tokenize
// endpoint, or a SentencePiece model).
#ifndef SURGE_COORDINATOR_DATASET_PROMPT_FITTER_H_
#define SURGE_COORDINATOR_DATASET_PROMPT_FITTER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace surge::coordinator {

// Counts the tokens of a request whose prompt is a given text, as the
// server will (for a chat endpoint whose counter knows the template: the
// template included). Not thread-safe: one caller at a time.
class TextTokenCounter {
 public:
  virtual ~TextTokenCounter() = default;
  // Errors: whatever the counter's I/O gives (the run's preparation fails).
  virtual absl::StatusOr<uint32_t> Count(std::string_view text) = 0;
};

// Search calls per fitted text: whole-word steps, then filler steps. A
// text with a head (a shared prefix or Mooncake blocks before it) adds one
// check of the whole prompt per round, at most kMaxWholeRounds rounds, so a
// prompt takes at most kMaxWholeRounds * (kMaxCallsPerText + 1) calls, and
// a shared text (prefix, block) kMaxCallsPerText once.
inline constexpr int kMaxWordSteps = 6;
inline constexpr int kMaxFillerSteps = 2;
inline constexpr int kMaxCallsPerText = kMaxWordSteps + kMaxFillerSteps;
inline constexpr int kMaxWholeRounds = 3;

// One fitted text.
struct FittedText {
  std::string text;
  // Its own tokens, as counted: Count(text) - Count("").
  uint32_t tokens = 0;
  // False when the bounded search ended without the asked count.
  bool exact = false;
};

// What the fitting cost so far.
struct FitStats {
  uint64_t calls = 0;         // counter calls, calibration included
  uint64_t calibration_calls = 0;
  uint64_t texts = 0;         // fitted texts (prompts and shared texts)
  uint64_t prompts = 0;       // whole prompts
  uint64_t inexact_prompts = 0;
  uint64_t prompt_calls = 0;          // calls of whole prompts (shared texts not included)
  uint64_t max_calls_per_prompt = 0;  // a prompt's own calls (shared texts not included)
  uint64_t shared_texts = 0;          // texts fitted outside a prompt (prefixes, blocks)
};

class PromptFitter {
 public:
  // Calibrates on the corpus with a few calls: the tokens of an empty
  // prompt (the chat template, a BOS token), tokens per word over three
  // corpus windows, and the first of a few short words ("a", "the", ...)
  // that counts exactly one token per repetition after a window (none:
  // fillers are not used and some prompts may stay one or two tokens off).
  // `counter` must outlive the fitter. Errors: the counter's.
  static absl::StatusOr<PromptFitter> Create(TextTokenCounter* counter);

  // Corpus words from word `first_word` (mod the corpus's words) whose own
  // tokens are exactly `tokens`: the count is searched by whole words
  // (secant steps on the tokens per word seen so far), then finished with
  // fillers. 0 tokens gives "". Errors: the counter's.
  absl::StatusOr<FittedText> FitText(uint64_t first_word, uint32_t tokens);

  // A whole prompt of `tokens` tokens as the counter counts it: `head` (""
  // or a shared text whose own tokens are `head_tokens`), a space, then
  // corpus words from `first_word`. Without a head it is FitText of the
  // asked tokens less the empty prompt's; with one, the rest is fitted to
  // the tokens left and the whole prompt counted, the rest refitted by the
  // difference when the join changed the count (at most kMaxWholeRounds).
  // `exact` is false when the count could not be reached (also when the
  // head and the empty prompt's tokens already exceed it). Errors: the
  // counter's.
  absl::StatusOr<FittedText> FitPrompt(const std::string& head, uint32_t head_tokens,
                                       uint64_t first_word, uint32_t tokens);

  // Tokens of an empty prompt (template or BOS tokens; 0 for a raw counter).
  uint32_t empty_prompt_tokens() const { return empty_tokens_; }
  // Calibrated tokens per corpus word.
  double tokens_per_word() const { return tokens_per_word_; }
  // The one-token filler word; "" when none was found.
  const std::string& filler() const { return filler_; }
  const FitStats& stats() const { return stats_; }

 private:
  explicit PromptFitter(TextTokenCounter* counter) : counter_(counter) {}
  absl::StatusOr<uint32_t> Count(std::string_view text);
  // Own tokens (Count - empty prompt), 0 when below.
  absl::StatusOr<uint32_t> OwnTokens(std::string_view text);
  absl::Status Calibrate();
  absl::StatusOr<FittedText> Finish(std::string base, uint32_t base_tokens, uint32_t tokens);

  TextTokenCounter* counter_;
  uint32_t empty_tokens_ = 0;
  double tokens_per_word_ = 1.3;
  std::string filler_;
  FitStats stats_;
  bool in_prompt_ = false;  // FitPrompt is running
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_PROMPT_FITTER_H_
