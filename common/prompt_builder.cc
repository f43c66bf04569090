#include "common/prompt_builder.h"

#include <vector>

extern "C" const char surge_corpus_begin[];
extern "C" const char surge_corpus_end[];

namespace surge {
namespace {

// Word boundaries of the corpus, computed once.
const std::vector<std::string_view>& Words() {
  static const std::vector<std::string_view>* words = [] {
    auto* out = new std::vector<std::string_view>();
    std::string_view text = Corpus();
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && static_cast<unsigned char>(text[i]) <= ' ') ++i;
      size_t start = i;
      while (i < text.size() && static_cast<unsigned char>(text[i]) > ' ') ++i;
      if (i > start) out->push_back(text.substr(start, i - start));
    }
    return out;
  }();
  return *words;
}

}  // namespace

std::string_view Corpus() {
  return std::string_view(surge_corpus_begin,
                          static_cast<size_t>(surge_corpus_end - surge_corpus_begin));
}

size_t CorpusWordCount() { return Words().size(); }

std::string CorpusWords(uint64_t first_word, size_t count) {
  const auto& words = Words();
  std::string text;
  size_t w = first_word % words.size();
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) text.push_back(' ');
    text.append(words[w]);
    w = (w + 1) % words.size();
  }
  return text;
}

std::string BuildPrompt(uint32_t input_tokens, uint64_t prompt_seed) {
  const size_t target = static_cast<size_t>(input_tokens) * kCharsPerToken;
  std::string prompt;
  if (target == 0) return prompt;
  prompt.reserve(target + 32);
  const auto& words = Words();
  size_t w = prompt_seed % words.size();
  while (true) {
    const std::string_view word = words[w];
    const size_t needed = prompt.empty() ? word.size() : word.size() + 1;
    if (prompt.size() + needed > target && !prompt.empty()) break;
    if (!prompt.empty()) prompt.push_back(' ');
    prompt.append(word);
    if (prompt.size() >= target) break;
    w = (w + 1) % words.size();
  }
  return prompt;
}

std::string BuildAssignmentPrompt(const surge::v1::Assignment& assignment) {
  if (!assignment.prompt_text().empty()) return assignment.prompt_text();
  if (assignment.prefix_tokens() > 0) {
    // The group's shared text, byte-identical for equal prefix seeds, then
    // the request's own words.
    std::string prompt = BuildPrompt(assignment.prefix_tokens(), assignment.prefix_seed());
    const uint32_t own = assignment.input_tokens() > assignment.prefix_tokens()
                             ? assignment.input_tokens() - assignment.prefix_tokens()
                             : 0;
    if (own > 0) {
      prompt.push_back(' ');
      prompt += BuildPrompt(own, assignment.prompt_seed());
    }
    return prompt;
  }
  if (assignment.prefix_block_ids_size() == 0) {
    return BuildPrompt(assignment.input_tokens(), assignment.prompt_seed());
  }
  // Shared blocks first (each a whole kPrefixBlockTokens-token text chosen by
  // its id alone), then the request's own words up to input_tokens.
  std::string prompt;
  uint32_t remaining = assignment.input_tokens();
  for (uint64_t id : assignment.prefix_block_ids()) {
    if (remaining == 0) break;
    const uint32_t tokens = remaining < kPrefixBlockTokens ? remaining : kPrefixBlockTokens;
    if (!prompt.empty()) prompt.push_back(' ');
    prompt += BuildPrompt(tokens, id * 104729ULL);
    remaining -= tokens;
  }
  if (remaining > 0) {
    if (!prompt.empty()) prompt.push_back(' ');
    prompt += BuildPrompt(remaining, assignment.prompt_seed());
  }
  return prompt;
}

uint32_t EstimateTokens(std::string_view text) { return EstimateTokensForBytes(text.size()); }

uint32_t EstimateTokensForBytes(uint64_t bytes) {
  const uint64_t tokens = (bytes + kCharsPerToken - 1) / kCharsPerToken;
  return tokens > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(tokens);
}

}  // namespace surge
