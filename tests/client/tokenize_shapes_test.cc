// The three tokenize shapes: the bodies surge sends and the counts it reads
// from each server's answer.
#include "client/tokenize_shapes.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace surge::client {
namespace {

using Json = nlohmann::json;

TEST(TokenizeShapesTest, VllmBodiesCarryModelAndPromptOrTheChatRequestsMessages) {
  EXPECT_EQ(Json::parse(TokenizeRequestBody(TokenizeShape::kVllm, "m", false, "Hi there")),
            Json({{"model", "m"}, {"prompt", "Hi there"}}));
  EXPECT_EQ(Json::parse(TokenizeRequestBody(TokenizeShape::kVllm, "m", true, "Hi")),
            Json({{"model", "m"},
                  {"messages", Json::array({Json{{"role", "user"}, {"content", "Hi"}}})}}));
  EXPECT_EQ(Json::parse(TokenizeRequestBody(TokenizeShape::kVllm, "", false, "x")),
            Json({{"prompt", "x"}}));
}

TEST(TokenizeShapesTest, TgiAndLlamaCppBodiesCarryTheTextAlone) {
  EXPECT_EQ(Json::parse(TokenizeRequestBody(TokenizeShape::kTgi, "m", true, "a b")),
            Json({{"inputs", "a b"}}));
  EXPECT_EQ(Json::parse(TokenizeRequestBody(TokenizeShape::kLlamaCpp, "m", false, "a b")),
            Json({{"content", "a b"}}));
}

TEST(TokenizeShapesTest, VllmCountComesFromCountElseFromTheTokens) {
  EXPECT_EQ(*ParseTokenizeCount(TokenizeShape::kVllm,
                                R"({"count":3,"tokens":[1,2,3],"max_model_len":4096})"),
            3u);
  EXPECT_EQ(*ParseTokenizeCount(TokenizeShape::kVllm, R"({"tokens":[5,6]})"), 2u);
  EXPECT_FALSE(ParseTokenizeCount(TokenizeShape::kVllm, R"([1,2])").ok());
  EXPECT_FALSE(ParseTokenizeCount(TokenizeShape::kVllm, R"({"detail":"Not Found"})").ok());
}

TEST(TokenizeShapesTest, TgiCountIsTheArraysLength) {
  EXPECT_EQ(*ParseTokenizeCount(
                TokenizeShape::kTgi,
                R"([{"id":1,"text":"a","start":0,"stop":1},{"id":2,"text":" b","start":1,"stop":3}])"),
            2u);
  const auto bad = ParseTokenizeCount(TokenizeShape::kTgi, R"({"error":"x"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), R"(not a TGI tokenize answer: {"error":"x"})");
}

TEST(TokenizeShapesTest, LlamaCppCountIsTheTokensLengthWithoutACount) {
  EXPECT_EQ(*ParseTokenizeCount(TokenizeShape::kLlamaCpp, R"({"tokens":[9,8,7,6]})"), 4u);
  EXPECT_FALSE(ParseTokenizeCount(TokenizeShape::kLlamaCpp, R"({"count":1,"tokens":[1]})").ok());
  EXPECT_FALSE(ParseTokenizeCount(TokenizeShape::kLlamaCpp, "not json").ok());
}

TEST(TokenizeShapesTest, TheRootDropsATrailingV1) {
  EXPECT_EQ(TokenizeRoot(""), "");
  EXPECT_EQ(TokenizeRoot("/v1"), "");
  EXPECT_EQ(TokenizeRoot("/gw/v1"), "/gw");
  EXPECT_EQ(TokenizeRoot("/gw"), "/gw");
}

}  // namespace
}  // namespace surge::client
