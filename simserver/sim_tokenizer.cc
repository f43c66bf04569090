#include "simserver/sim_tokenizer.h"

#include <utility>

namespace surge::simserver {
namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = kFnvOffset;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
  return h;
}

bool IsSpace(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

bool IsWordByte(unsigned char c) {
  return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// True when byte `i` of `text` starts a UTF-8 character (is not a
// continuation byte 10xxxxxx).
bool StartsCharacter(std::string_view text, size_t i) {
  return (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
}

// Calls `emit(piece)` for every token of the rule, in order.
template <typename Emit>
void ForEachRuleToken(std::string_view text, Emit emit) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    if (!IsWordByte(c)) {
      emit(text.substr(i, 1));
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && IsWordByte(static_cast<unsigned char>(text[end]))) ++end;
    // Cut the word run into pieces of at most kWordBytesPerToken bytes, each
    // cut moved back to the nearest character start.
    while (i < end) {
      size_t cut = i + kWordBytesPerToken < end ? i + kWordBytesPerToken : end;
      while (cut < end && cut > i + 1 && !StartsCharacter(text, cut)) --cut;
      emit(text.substr(i, cut - i));
      i = cut;
    }
  }
}

void AppendTemplateToken(std::string_view mark, std::vector<uint64_t>* ids) {
  // Marks hash with a byte no text token starts with, so a message can
  // never spell a template token.
  std::string key = "\x01";
  key += mark;
  ids->push_back(Fnv1a64(key));
}

}  // namespace

SimTokenizer::SimTokenizer(std::shared_ptr<const SentencePieceModel> model)
    : model_(std::move(model)) {}

std::vector<uint64_t> SimTokenizer::Tokenize(std::string_view text) const {
  std::vector<uint64_t> ids;
  if (model_) {
    for (int id : model_->Encode(text)) ids.push_back(static_cast<uint64_t>(id));
    return ids;
  }
  ForEachRuleToken(text, [&ids](std::string_view piece) { ids.push_back(Fnv1a64(piece)); });
  return ids;
}

uint32_t SimTokenizer::Count(std::string_view text) const {
  if (model_) return model_->Count(text);
  uint32_t n = 0;
  ForEachRuleToken(text, [&n](std::string_view) { ++n; });
  return n;
}

std::vector<uint64_t> SimTokenizer::TokenizeChat(const std::vector<ChatMessage>& messages) const {
  std::vector<uint64_t> ids;
  for (const ChatMessage& message : messages) {
    AppendTemplateToken("start", &ids);
    AppendTemplateToken(message.role, &ids);
    std::vector<uint64_t> content = Tokenize(message.content);
    ids.insert(ids.end(), content.begin(), content.end());
    AppendTemplateToken("end", &ids);
  }
  AppendTemplateToken("assistant", &ids);
  return ids;
}

}  // namespace surge::simserver
