// How the built-in server counts tokens: its own deterministic rule, or a
// SentencePiece model. Deliberately not surge's 4-characters estimate, so a
// plan built by the estimate shows a mismatch against this server and a
// plan built with `--tokenizer server` shows none. Pure; thread-safe.
//
// The rule: the text is cut at whitespace; a run of word bytes (ASCII
// letters and digits, and every byte of a non-ASCII UTF-8 character) is one
// token per 8 bytes or part of it (cut only between characters), and every
// other visible ASCII character (punctuation) is a token of its own.
// "Hello, world!" is 4 tokens; "extraordinarily" (15 letters) is 2.
//
// Chat requests are counted through a fixed template, as a server applies
// its chat template: every message adds kChatTokensPerMessage tokens (its
// start mark, its role, its end mark) around its content's tokens, and the
// prompt ends with kChatGenerationTokens token (the assistant's start).
#ifndef SURGE_SIMSERVER_SIM_TOKENIZER_H_
#define SURGE_SIMSERVER_SIM_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/sentencepiece_model.h"

namespace surge::simserver {

// Bytes of word characters per token of the rule.
inline constexpr size_t kWordBytesPerToken = 8;
// Template tokens around each chat message, and at the end of a chat prompt.
inline constexpr uint32_t kChatTokensPerMessage = 3;
inline constexpr uint32_t kChatGenerationTokens = 1;

// One chat message as the template sees it.
struct ChatMessage {
  std::string role;
  std::string content;
};

class SimTokenizer {
 public:
  // The rule above.
  SimTokenizer() = default;
  // Token ids from `model` instead (the chat template stays the same).
  explicit SimTokenizer(std::shared_ptr<const SentencePieceModel> model);

  // The token ids of `text`: with the rule, FNV-1a 64 of each token's bytes
  // (equal text, equal ids); with a model, the model's piece ids.
  std::vector<uint64_t> Tokenize(std::string_view text) const;
  // The token ids of a chat prompt, template included.
  std::vector<uint64_t> TokenizeChat(const std::vector<ChatMessage>& messages) const;
  // Tokenize(text).size(), without building the ids.
  uint32_t Count(std::string_view text) const;

  // "rule" or "sentencepiece": for the log and the tokenize endpoint.
  const char* name() const { return model_ ? "sentencepiece" : "rule"; }

 private:
  std::shared_ptr<const SentencePieceModel> model_;
};

}  // namespace surge::simserver

#endif  // SURGE_SIMSERVER_SIM_TOKENIZER_H_
