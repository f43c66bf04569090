// The built-in server's POST /tokenize (vLLM's shape): its count is the
// usage.prompt_tokens of the same prompt sent as a completion request.
#include "simserver/tokenize_endpoint.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "simserver/answer_model.h"

namespace surge::simserver {
namespace {

using Json = nlohmann::json;

TEST(TokenizeEndpointTest, APromptIsCountedByTheRule) {
  SimTokenizer tokenizer;
  auto answer = TokenizeAnswer(R"({"model":"m","prompt":"Hello, world!"})", "surge-sim", tokenizer);
  ASSERT_TRUE(answer.ok()) << answer.status();
  const Json json = Json::parse(*answer);
  EXPECT_EQ(json["count"], 4);
  EXPECT_EQ(json["tokens"].size(), 4u);
  EXPECT_EQ(json["max_model_len"], kSimMaxModelLen);
  for (const Json& id : json["tokens"]) EXPECT_LT(id.get<uint64_t>(), kSimVocabularySize);
}

TEST(TokenizeEndpointTest, MessagesAreCountedWithTheChatTemplateAsTheChatUsageIs) {
  SimTokenizer tokenizer;
  const std::string body =
      R"({"model":"m","messages":[{"role":"user","content":"It was the best of times."}]})";
  auto answer = TokenizeAnswer(body, "surge-sim", tokenizer);
  ASSERT_TRUE(answer.ok());
  auto chat = ParseCompletionRequest(true, body, "surge-sim", tokenizer);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(Json::parse(*answer)["count"], chat->prompt_tokens);
  EXPECT_EQ(chat->prompt_tokens, 7u + kChatTokensPerMessage + kChatGenerationTokens);
}

TEST(TokenizeEndpointTest, ABadBodyIsRefusedWithTheCompletionsMessage) {
  SimTokenizer tokenizer;
  auto answer = TokenizeAnswer(R"({"prompt":7})", "surge-sim", tokenizer);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace surge::simserver
