#include "worker/http/openai_request.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/http/response_metrics.h"

namespace surge::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST(ApiKindTest, ChatOnlyForChatCompletionsSuffix) {
  EXPECT_EQ(ApiKindForEndpoint("/v1/chat/completions"), ApiKind::kChat);
  EXPECT_EQ(ApiKindForEndpoint("/openai/v1/chat/completions/"), ApiKind::kChat);
  EXPECT_EQ(ApiKindForEndpoint("/v1/completions"), ApiKind::kCompletions);
  EXPECT_EQ(ApiKindForEndpoint("/generate"), ApiKind::kCompletions);
}

TEST(BuildRequestBodyTest, StreamingChat) {
  const Json body = Json::parse(BuildRequestBody(ApiKind::kChat, "m", "hi \"there\"", 7, true));
  EXPECT_EQ(body["model"], "m");
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"], "hi \"there\"");
  EXPECT_EQ(body["max_tokens"], 7);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_FALSE(body.contains("prompt"));
}

// A session turn sends its history before its prompt: as messages for a
// chat, as text joined by blank lines for a completion.
TEST(BuildRequestBodyTest, HistoryGoesBeforeThePrompt) {
  const std::vector<HistoryMessage> history = {{"user", "first"}, {"assistant", "answer one"}};
  const Json chat =
      Json::parse(BuildRequestBody(ApiKind::kChat, "m", "second", 5, true, nullptr, history));
  ASSERT_EQ(chat["messages"].size(), 3u);
  EXPECT_EQ(chat["messages"][0], (Json{{"role", "user"}, {"content", "first"}}));
  EXPECT_EQ(chat["messages"][1], (Json{{"role", "assistant"}, {"content", "answer one"}}));
  EXPECT_EQ(chat["messages"][2], (Json{{"role", "user"}, {"content", "second"}}));
  const Json completion = Json::parse(
      BuildRequestBody(ApiKind::kCompletions, "m", "second", 5, false, nullptr, history));
  EXPECT_EQ(completion["prompt"], "first\n\nanswer one\n\nsecond");
}

TEST(BuildRequestBodyTest, NonStreamingCompletionsWithoutModel) {
  const Json body = Json::parse(BuildRequestBody(ApiKind::kCompletions, "", "p", 3, false));
  EXPECT_FALSE(body.contains("model"));
  EXPECT_EQ(body["prompt"], "p");
  EXPECT_EQ(body["max_tokens"], 3);
  EXPECT_EQ(body["stream"], false);
  EXPECT_FALSE(body.contains("stream_options"));
  EXPECT_FALSE(body.contains("messages"));
}

TEST(ParseStreamEventTest, ChatDeltas) {
  auto role =
      ParseStreamEvent(ApiKind::kChat, R"({"choices":[{"delta":{"role":"assistant"},"index":0}]})");
  ASSERT_TRUE(role.ok());
  EXPECT_EQ(role->content, "");
  EXPECT_FALSE(role->usage.has_value());

  auto empty = ParseStreamEvent(ApiKind::kChat, R"({"choices":[{"delta":{"content":""}}]})");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->content, "");

  auto null_content =
      ParseStreamEvent(ApiKind::kChat, R"({"choices":[{"delta":{"content":null}}]})");
  ASSERT_TRUE(null_content.ok());
  EXPECT_EQ(null_content->content, "");

  auto token = ParseStreamEvent(ApiKind::kChat, R"({"choices":[{"delta":{"content":" a"}}]})");
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->content, " a");

  auto reasoning =
      ParseStreamEvent(ApiKind::kChat, R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})");
  ASSERT_TRUE(reasoning.ok());
  EXPECT_EQ(reasoning->content, "hmm");
}

TEST(ParseStreamEventTest, UsageOnlyChunkHasNoContent) {
  auto usage = ParseStreamEvent(
      ApiKind::kChat,
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}})");
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->content, "");
  ASSERT_TRUE(usage->usage.has_value());
  EXPECT_EQ(usage->usage->prompt_tokens, 12u);
  EXPECT_EQ(usage->usage->completion_tokens, 5u);
  // vLLM puts "usage": null on ordinary chunks.
  auto null_usage =
      ParseStreamEvent(ApiKind::kCompletions, R"({"choices":[{"text":"x"}],"usage":null})");
  ASSERT_TRUE(null_usage.ok());
  EXPECT_EQ(null_usage->content, "x");
  EXPECT_FALSE(null_usage->usage.has_value());
}

TEST(ParseStreamEventTest, CachedTokensFromPromptTokensDetails) {
  auto cached = ParseStreamEvent(
      ApiKind::kChat, R"({"choices":[],"usage":{"prompt_tokens":600,"completion_tokens":5,)"
                      R"("prompt_tokens_details":{"cached_tokens":512}}})");
  ASSERT_TRUE(cached.ok());
  ASSERT_TRUE(cached->usage.has_value());
  EXPECT_EQ(cached->usage->cached_tokens, std::optional<uint32_t>(512));
  // No details, details null, or no cached_tokens in them: not reported.
  for (
      const char* usage :
      {R"({"prompt_tokens":6,"completion_tokens":5})",
       R"({"prompt_tokens":6,"completion_tokens":5,"prompt_tokens_details":null})",
       R"({"prompt_tokens":6,"completion_tokens":5,"prompt_tokens_details":{"audio_tokens":0}})"}) {
    SCOPED_TRACE(usage);
    auto answer =
        ParseStreamEvent(ApiKind::kChat, std::string(R"({"choices":[],"usage":)") + usage + "}");
    ASSERT_TRUE(answer.ok());
    ASSERT_TRUE(answer->usage.has_value());
    EXPECT_FALSE(answer->usage->cached_tokens.has_value());
  }
}

TEST(ParseStreamEventTest, ErrorsAndGarbage) {
  auto bad = ParseStreamEvent(ApiKind::kChat, "{not json");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("bad JSON in event"));
  auto not_object = ParseStreamEvent(ApiKind::kChat, "[1,2]");
  EXPECT_FALSE(not_object.ok());
  auto server = ParseStreamEvent(ApiKind::kChat, R"({"error":{"message":"overloaded"}})");
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("overloaded"));
  // Wrong types do not throw.
  auto odd = ParseStreamEvent(ApiKind::kChat, R"({"choices":[{"delta":{"content":5}}],
                                                  "usage":{"completion_tokens":"x"}})");
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->content, "");
  EXPECT_FALSE(odd->usage.has_value());
}

TEST(ParseCompletionBodyTest, ChatAndCompletions) {
  auto chat =
      ParseCompletionBody(ApiKind::kChat,
                          R"({"choices":[{"message":{"role":"assistant","content":"hello"}}],
          "usage":{"prompt_tokens":3,"completion_tokens":2}})");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->content, "hello");
  EXPECT_EQ(chat->usage->completion_tokens, 2u);
  auto completion = ParseCompletionBody(ApiKind::kCompletions, R"({"choices":[{"text":"t"}]})");
  ASSERT_TRUE(completion.ok());
  EXPECT_EQ(completion->content, "t");
  EXPECT_FALSE(completion->usage.has_value());
  EXPECT_FALSE(ParseCompletionBody(ApiKind::kChat, R"({"id":"x"})").ok());
}

// finish_reason marks a complete answer; null or absent does not.
TEST(ParseStreamEventTest, FinishReason) {
  auto done =
      ParseStreamEvent(ApiKind::kChat, R"({"choices":[{"delta":{},"finish_reason":"stop"}]})");
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->finished);
  auto running = ParseStreamEvent(
      ApiKind::kChat, R"({"choices":[{"delta":{"content":"x"},"finish_reason":null}]})");
  ASSERT_TRUE(running.ok());
  EXPECT_FALSE(running->finished);
  auto text = ParseStreamEvent(ApiKind::kCompletions,
                               R"({"choices":[{"text":"x","finish_reason":"length"}]})");
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(text->finished);
  auto usage_only =
      ParseStreamEvent(ApiKind::kChat, R"({"choices":[],"usage":{"completion_tokens":1}})");
  ASSERT_TRUE(usage_only.ok());
  EXPECT_FALSE(usage_only->finished);
}

// Quoted server text is valid UTF-8 and cut at a character boundary.
TEST(ParseStreamEventTest, QuotedTextIsValidUtf8) {
  auto bad = ParseStreamEvent(ApiKind::kChat,
                              "{\"x\":\"A\xff"
                              "B\"}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "bad JSON in event: {\"x\":\"A\xEF\xBF\xBD"
            "B\"}");
  // 119 ASCII bytes then a 2-byte character: the 120-byte quote stops before it.
  const std::string long_event = std::string(119, '{') + "\xC3\xA9";
  auto cut = ParseStreamEvent(ApiKind::kChat, long_event);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().message(), "bad JSON in event: " + std::string(119, '{'));
}

TEST(ResponseMetricsTest, StreamTimeline) {
  ResponseMetrics metrics(1000);
  metrics.OnLastByte(1500);  // header-only read: no content yet
  metrics.OnContentEvent(2000, 5);
  metrics.OnContentEvent(2100, 4);
  metrics.OnContentEvent(2350, 3);
  metrics.OnLastByte(2400);
  surge::v1::RequestRecord record;
  metrics.FillRecord(/*estimated_input_tokens=*/9, record);
  EXPECT_EQ(record.sent_ns(), 1000);
  EXPECT_EQ(record.ttft_ns(), 1000);
  EXPECT_THAT(record.itl_ns(), ElementsAre(100, 250));
  EXPECT_EQ(record.e2el_ns(), 1400);
  // No usage: ceil(12 content bytes / 4) = 3, not one per event.
  EXPECT_EQ(record.output_tokens(), 3u);
  EXPECT_TRUE(record.output_tokens_estimated());
  EXPECT_EQ(record.input_tokens(), 9u);

  metrics.OnUsage(Usage{40, 30, std::nullopt});
  metrics.FillRecord(9, record);
  EXPECT_EQ(record.output_tokens(), 30u);
  EXPECT_FALSE(record.output_tokens_estimated());
  EXPECT_EQ(record.input_tokens(), 40u);
  EXPECT_THAT(record.itl_ns(), ElementsAre(100, 250));  // not appended twice
}

// One estimator for streamed and whole answers, over the
// text: many tokens per event (a batching server) are not undercounted.
TEST(ResponseMetricsTest, EstimateIsOverTheTextForBothPaths) {
  ResponseMetrics streamed(0);
  for (int i = 0; i < 82; ++i) streamed.OnContentEvent(1000 + i, i < 81 ? 50 : 46);
  surge::v1::RequestRecord a;
  streamed.FillRecord(0, a);
  EXPECT_EQ(a.output_tokens(), 1024u);  // ceil(4096 / 4), not 82
  EXPECT_TRUE(a.output_tokens_estimated());
  ResponseMetrics whole(0);
  whole.OnWholeAnswer(1000, 4096);
  surge::v1::RequestRecord b;
  whole.FillRecord(0, b);
  EXPECT_EQ(b.output_tokens(), 1024u);
  // Rounding up: 1 byte is 1 token, 5 bytes 2.
  ResponseMetrics one(0);
  one.OnContentEvent(5, 1);
  surge::v1::RequestRecord c;
  one.FillRecord(0, c);
  EXPECT_EQ(c.output_tokens(), 1u);
  one.OnContentEvent(6, 4);
  one.FillRecord(0, c);
  EXPECT_EQ(c.output_tokens(), 2u);
}

TEST(ResponseMetricsTest, NoContentMeansNoTtft) {
  ResponseMetrics metrics(1000);
  surge::v1::RequestRecord record;
  metrics.FillRecord(1, record);
  EXPECT_EQ(record.output_tokens(), 0u);
  EXPECT_EQ(record.ttft_ns(), 0);
  EXPECT_EQ(record.e2el_ns(), 0);
  EXPECT_TRUE(record.itl_ns().empty());
}

TEST(BuildRequestBodyTest, ExtraBodyIsAMergePatch) {
  const nlohmann::json extra = nlohmann::json::parse(
      R"({"temperature":0,"max_tokens":5,"stream_options":{"continuous_usage_stats":true},
          "model":null})");
  const nlohmann::json body = nlohmann::json::parse(
      BuildRequestBody(ApiKind::kCompletions, "m", "hello", 9, /*stream=*/true, &extra));
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["max_tokens"], 5);  // replaced
  EXPECT_EQ(body["prompt"], "hello");
  EXPECT_FALSE(body.contains("model"));  // null removes
  EXPECT_EQ(body["stream_options"],
            nlohmann::json::parse(R"({"include_usage":true,"continuous_usage_stats":true})"));
  // No extra: the plain body.
  EXPECT_EQ(BuildRequestBody(ApiKind::kChat, "m", "x", 1, false, nullptr),
            BuildRequestBody(ApiKind::kChat, "m", "x", 1, false));
}

// Reasoning and answer content are told apart; both are
// generated text.
TEST(ParseStreamEventTest, ReasoningAndAnswerContentAreToldApart) {
  auto reasoning =
      ParseStreamEvent(ApiKind::kChat, R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})");
  ASSERT_TRUE(reasoning.ok());
  EXPECT_EQ(reasoning->content, "hmm");
  EXPECT_EQ(reasoning->answer_bytes, 0u);
  auto both = ParseStreamEvent(ApiKind::kChat,
                               R"({"choices":[{"delta":{"reasoning":"ab","content":"cde"}}]})");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->content, "abcde");
  EXPECT_EQ(both->answer_bytes, 3u);
  auto text = ParseStreamEvent(ApiKind::kCompletions, R"({"choices":[{"text":"xy"}]})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->answer_bytes, 2u);
  auto whole = ParseCompletionBody(
      ApiKind::kChat,
      R"({"choices":[{"message":{"reasoning_content":"r","content":"c"},"finish_reason":"stop"}]})");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->content, "rc");
  EXPECT_EQ(whole->answer_bytes, 1u);
}

// finish_reason and the choice index are read.
TEST(ParseStreamEventTest, FinishReasonAndChoiceIndex) {
  auto end = ParseStreamEvent(ApiKind::kChat,
                              R"({"choices":[{"index":1,"delta":{},"finish_reason":"length"}]})");
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->finished);
  EXPECT_EQ(end->finish_reason, "length");
  EXPECT_EQ(end->choice_index, 1u);
  auto open = ParseStreamEvent(ApiKind::kChat,
                               R"({"choices":[{"delta":{"content":"a"},"finish_reason":null}]})");
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->finished);
  EXPECT_EQ(open->finish_reason, "");
  EXPECT_EQ(open->choice_index, 0u);
}

// The max_tokens the body asks for.
TEST(RequestedMaxTokensTest, ExtraBodyOverridesAsTheServerReadsIt) {
  auto parse = [](const char* text) { return nlohmann::json::parse(text); };
  EXPECT_EQ(RequestedMaxTokens(8, nullptr), 8u);
  const nlohmann::json none = parse(R"({"temperature":0})");
  EXPECT_EQ(RequestedMaxTokens(8, &none), 8u);
  const nlohmann::json mt = parse(R"({"max_tokens":16})");
  EXPECT_EQ(RequestedMaxTokens(8, &mt), 16u);
  const nlohmann::json mct = parse(R"({"max_tokens":16,"max_completion_tokens":32})");
  EXPECT_EQ(RequestedMaxTokens(8, &mct), 32u);
  const nlohmann::json removed = parse(R"({"max_tokens":null})");
  EXPECT_EQ(RequestedMaxTokens(8, &removed), 0u);
  const nlohmann::json yes = parse(R"({"ignore_eos":true})");
  const nlohmann::json no = parse(R"({"ignore_eos":false})");
  EXPECT_TRUE(AsksIgnoreEos(&yes));
  EXPECT_FALSE(AsksIgnoreEos(&no));
  EXPECT_FALSE(AsksIgnoreEos(&none));
  EXPECT_FALSE(AsksIgnoreEos(nullptr));
}

// TTFT is the first generated token on any channel, TTFC
// the first answer-content token; finish_reason goes into the record.
TEST(ResponseMetricsTest, FirstTokenAndFirstContent) {
  ResponseMetrics metrics(1000);
  metrics.OnContentEvent(1200, 5, /*has_answer=*/false);
  metrics.OnContentEvent(1300, 4, /*has_answer=*/false);
  metrics.OnContentEvent(1600, 3, /*has_answer=*/true);
  metrics.OnContentEvent(1700, 3, /*has_answer=*/true);
  metrics.OnFinishReason("stop");
  metrics.OnLastByte(1800);
  surge::v1::RequestRecord record;
  metrics.FillRecord(1, record);
  EXPECT_EQ(record.ttft_ns(), 200);
  EXPECT_EQ(record.ttfc_ns(), 600);
  EXPECT_THAT(record.itl_ns(), ElementsAre(100, 300, 100));
  EXPECT_EQ(record.finish_reason(), "stop");

  ResponseMetrics reasoning_only(0);
  reasoning_only.OnContentEvent(0, 5, /*has_answer=*/false);
  surge::v1::RequestRecord r2;
  reasoning_only.FillRecord(1, r2);
  EXPECT_EQ(r2.ttfc_ns(), 0);
  EXPECT_EQ(r2.finish_reason(), "");
}

// The short-output rule.
TEST(IsShortOutputTest, IgnoreEosAnswersThatStopBeforeMaxTokens) {
  surge::v1::RequestRecord r;
  r.set_status(surge::v1::OK);
  r.set_max_tokens(8);
  r.set_output_tokens(3);
  r.set_finish_reason("stop");
  EXPECT_TRUE(IsShortOutput(r, /*ignore_eos=*/true));
  EXPECT_FALSE(IsShortOutput(r, /*ignore_eos=*/false));
  r.set_output_tokens(8);
  EXPECT_TRUE(IsShortOutput(r, true));  // 8 tokens, but it says it stopped
  r.set_finish_reason("length");
  EXPECT_FALSE(IsShortOutput(r, true));
  r.set_output_tokens(3);
  EXPECT_TRUE(IsShortOutput(r, true));  // the server's count is below the cap
  r.set_output_tokens_estimated(true);  // an estimate alone is not evidence
  EXPECT_FALSE(IsShortOutput(r, true));
  r.set_finish_reason("");
  EXPECT_FALSE(IsShortOutput(r, true));
  r.set_output_tokens_estimated(false);
  r.set_status(surge::v1::FAILED);
  EXPECT_FALSE(IsShortOutput(r, true));  // only OK answers
  r.set_status(surge::v1::OK);
  r.set_max_tokens(0);  // nothing asked
  EXPECT_FALSE(IsShortOutput(r, true));
}

}  // namespace
}  // namespace surge::worker
