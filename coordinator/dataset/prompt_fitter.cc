#include "coordinator/dataset/prompt_fitter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "common/prompt_builder.h"

namespace surge::coordinator {
namespace {

// Calibration: windows of corpus words (start word, words) and the short
// words tried as one-token fillers.
constexpr uint64_t kWindowStarts[] = {0, 600, 1200};
constexpr size_t kWindowWords = 120;
constexpr const char* kFillerCandidates[] = {"a", "the", "I", "of", "and", "to"};
constexpr int kFillerProbe = 8;

std::string Fillers(const std::string& filler, uint32_t n) {
  std::string text;
  for (uint32_t i = 0; i < n; ++i) {
    text.push_back(' ');
    text += filler;
  }
  return text;
}

std::string Joined(const std::string& head, const std::string& rest) {
  if (head.empty()) return rest;
  if (rest.empty()) return head;
  std::string text;
  text.reserve(head.size() + 1 + rest.size());
  text += head;
  text.push_back(' ');
  text += rest;
  return text;
}

}  // namespace

absl::StatusOr<PromptFitter> PromptFitter::Create(TextTokenCounter* counter) {
  PromptFitter fitter(counter);
  if (absl::Status s = fitter.Calibrate(); !s.ok()) return s;
  return fitter;
}

absl::StatusOr<uint32_t> PromptFitter::Count(std::string_view text) {
  ++stats_.calls;
  return counter_->Count(text);
}

absl::StatusOr<uint32_t> PromptFitter::OwnTokens(std::string_view text) {
  absl::StatusOr<uint32_t> n = Count(text);
  if (!n.ok()) return n.status();
  return *n > empty_tokens_ ? *n - empty_tokens_ : 0;
}

absl::Status PromptFitter::Calibrate() {
  // The empty prompt: what a chat template or a BOS token adds to every one.
  absl::StatusOr<uint32_t> empty = Count("");
  if (!empty.ok()) return empty.status();
  empty_tokens_ = *empty;
  uint64_t tokens = 0;
  uint64_t words = 0;
  std::string window;
  for (uint64_t start : kWindowStarts) {
    window = CorpusWords(start, kWindowWords);
    absl::StatusOr<uint32_t> n = OwnTokens(window);
    if (!n.ok()) return n.status();
    tokens += *n;
    words += kWindowWords;
  }
  if (tokens > 0) tokens_per_word_ = static_cast<double>(tokens) / static_cast<double>(words);
  // The filler: a short word that adds exactly one token each time it is
  // appended to ordinary text.
  absl::StatusOr<uint32_t> base = OwnTokens(window);
  if (!base.ok()) return base.status();
  for (const char* candidate : kFillerCandidates) {
    absl::StatusOr<uint32_t> with = OwnTokens(window + Fillers(candidate, kFillerProbe));
    if (!with.ok()) return with.status();
    if (*with == *base + kFillerProbe) {
      filler_ = candidate;
      break;
    }
  }
  stats_.calibration_calls = stats_.calls;
  return absl::OkStatus();
}

absl::StatusOr<FittedText> PromptFitter::FitText(uint64_t first_word, uint32_t tokens) {
  ++stats_.texts;
  stats_.shared_texts += !in_prompt_;
  if (tokens == 0) return FittedText{"", 0, true};
  // Largest word count known to be below the asked tokens, smallest known
  // above, with their counts.
  size_t lo_words = 0;
  uint32_t lo_tokens = 0;
  size_t hi_words = std::numeric_limits<size_t>::max();
  size_t words = std::max<size_t>(
      1, static_cast<size_t>(std::llround(static_cast<double>(tokens) / tokens_per_word_)));
  std::string text;
  for (int step = 0; step < kMaxWordSteps && hi_words - lo_words > 1; ++step) {
    text = CorpusWords(first_word, words);
    absl::StatusOr<uint32_t> n = OwnTokens(text);
    if (!n.ok()) return n.status();
    if (*n == tokens) return FittedText{std::move(text), tokens, true};
    if (*n < tokens) {
      lo_words = words;
      lo_tokens = *n;
    } else {
      hi_words = words;
    }
    // A secant step on this text's own tokens per word, kept strictly
    // between the bounds.
    const double per_word = *n > 0 ? static_cast<double>(*n) / words : tokens_per_word_;
    const double step_words = (static_cast<double>(tokens) - *n) / per_word;
    long long next = static_cast<long long>(words) + std::llround(step_words);
    if (next == static_cast<long long>(words)) next += *n < tokens ? 1 : -1;
    next = std::max<long long>(next, static_cast<long long>(lo_words) + 1);
    if (hi_words != std::numeric_limits<size_t>::max()) {
      next = std::min<long long>(next, static_cast<long long>(hi_words) - 1);
    }
    words = static_cast<size_t>(next);
  }
  // Whole words step over the count (or the steps ran out): the largest
  // text below it, finished with fillers.
  return Finish(CorpusWords(first_word, lo_words), lo_tokens, tokens);
}

absl::StatusOr<FittedText> PromptFitter::Finish(std::string base, uint32_t base_tokens,
                                                uint32_t tokens) {
  if (filler_.empty()) return FittedText{std::move(base), base_tokens, false};
  uint32_t fillers = tokens - base_tokens;
  FittedText best{base, base_tokens, false};
  for (int step = 0; step < kMaxFillerSteps; ++step) {
    std::string text = base.empty() ? Fillers(filler_, fillers).substr(1)
                                    : base + Fillers(filler_, fillers);
    absl::StatusOr<uint32_t> n = OwnTokens(text);
    if (!n.ok()) return n.status();
    if (*n == tokens) return FittedText{std::move(text), tokens, true};
    if (*n < tokens && *n > best.tokens) best = FittedText{text, *n, false};
    const long long next = static_cast<long long>(fillers) + (static_cast<long long>(tokens) - *n);
    if (next < 0 || next == fillers) break;
    fillers = static_cast<uint32_t>(next);
  }
  return best;
}

absl::StatusOr<FittedText> PromptFitter::FitPrompt(const std::string& head, uint32_t head_tokens,
                                                   uint64_t first_word, uint32_t tokens) {
  const uint64_t calls_before = stats_.calls;
  ++stats_.prompts;
  in_prompt_ = true;
  auto done = [&](FittedText fitted) {
    stats_.inexact_prompts += !fitted.exact;
    stats_.prompt_calls += stats_.calls - calls_before;
    in_prompt_ = false;
    stats_.max_calls_per_prompt = std::max(stats_.max_calls_per_prompt, stats_.calls - calls_before);
    return fitted;
  };
  const int64_t fixed = static_cast<int64_t>(empty_tokens_) + head_tokens;
  int64_t rest = static_cast<int64_t>(tokens) - fixed;
  if (rest < 0) {
    return done(FittedText{head, head_tokens, false});
  }
  if (head.empty()) {
    absl::StatusOr<FittedText> own = FitText(first_word, static_cast<uint32_t>(rest));
    if (!own.ok()) return own.status();
    return done(*std::move(own));
  }
  // With a head: fit the rest to the tokens left, then count the whole
  // prompt (a join can merge or split a token at the boundary).
  FittedText whole{head, head_tokens, false};
  for (int round = 0; round < kMaxWholeRounds && rest >= 0; ++round) {
    absl::StatusOr<FittedText> own = FitText(first_word, static_cast<uint32_t>(rest));
    if (!own.ok()) return own.status();
    std::string text = Joined(head, own->text);
    absl::StatusOr<uint32_t> n = Count(text);
    if (!n.ok()) return n.status();
    whole = FittedText{std::move(text), *n > empty_tokens_ ? *n - empty_tokens_ : 0, *n == tokens};
    if (whole.exact) break;
    rest += static_cast<int64_t>(tokens) - *n;
  }
  return done(std::move(whole));
}

}  // namespace surge::coordinator
