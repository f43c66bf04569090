#include "simserver/tokenize_endpoint.h"

#include "nlohmann/json.hpp"
#include "simserver/answer_model.h"

namespace surge::simserver {

absl::StatusOr<std::string> TokenizeAnswer(const std::string& body,
                                           const std::string& default_model,
                                           const SimTokenizer& tokenizer) {
  using Json = nlohmann::json;
  const Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  // Messages are a chat prompt; anything else is read as a completion's.
  const bool chat = json.is_object() && json.contains("messages");
  absl::StatusOr<CompletionRequest> parsed =
      ParseCompletionRequest(chat, body, default_model, tokenizer);
  if (!parsed.ok()) return parsed.status();
  // Ids as small as a vocabulary's (the rule's are 64-bit hashes), which
  // keeps the answer short.
  Json tokens = Json::array();
  for (uint64_t id : parsed->prompt_token_ids) tokens.push_back(id % kSimVocabularySize);
  Json answer = {{"count", parsed->prompt_tokens},
                 {"max_model_len", kSimMaxModelLen},
                 {"tokens", std::move(tokens)}};
  return answer.dump();
}

}  // namespace surge::simserver
