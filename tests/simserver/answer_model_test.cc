// The simulated server's answers without sockets: what a completion request
// is read as, the JSON of each answer, the checks of its options and the
// fault each request gets.
#include "simserver/answer_model.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/simserver/test_sim_server_config.h"

namespace surge::simserver {
namespace {

using ::surge::testing::TestSimServerConfig;
using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST(ParseCompletionRequestTest, ReadsChatAndCompletionBodies) {
  auto chat = ParseCompletionRequest(
      true,
      R"({"messages":[{"content":"abcd"},{"content":[{"text":"efgh"}]}],"max_tokens":3,)"
      R"("max_completion_tokens":5,"stream":true,"stream_options":{"include_usage":true}})",
      "surge-sim", SimTokenizer());
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_TRUE(chat->chat);
  EXPECT_TRUE(chat->stream);
  EXPECT_TRUE(chat->include_usage);
  EXPECT_EQ(chat->max_tokens, 5);      // max_completion_tokens wins
  // "abcd" and "efgh": a token each, plus the template's marks around two
  // messages and the assistant's start.
  EXPECT_EQ(chat->prompt_tokens, 2u + 2 * kChatTokensPerMessage + kChatGenerationTokens);
  EXPECT_EQ(chat->prompt_token_ids.size(), chat->prompt_tokens);
  EXPECT_EQ(chat->model, "surge-sim");

  auto tokens = ParseCompletionRequest(false, R"({"prompt":[1,2,3],"model":"m"})", "surge-sim",
                                       SimTokenizer());
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->prompt_tokens, 3u);
  EXPECT_EQ(tokens->prompt_token_ids, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(tokens->max_tokens, kDefaultMaxTokens);
  EXPECT_EQ(tokens->model, "m");
  EXPECT_FALSE(tokens->stream);
}

TEST(ParseCompletionRequestTest, SaysWhatIsWrong) {
  const std::map<std::string, std::string> bad = {
      {"not json", "request body is not valid JSON"},
      {"[1]", "request body must be a JSON object"},
      {R"({"prompt":"p","max_tokens":0})", "'max_tokens' must be an integer in 1..1048576"},
      {R"({"prompt":"p","stream":1})", "'stream' must be a boolean"},
      {R"({"prompt":{}})", "'prompt' must be a string or a list"},
      {R"({"prompt":[{}]})", "'prompt' must be a string, a list of strings or a list of token ids"},
      {R"({})", "'prompt' is required"},
      {R"({"prompt":"p","model":1})", "'model' must be a string"},
  };
  for (const auto& [body, message] : bad) {
    auto parsed = ParseCompletionRequest(false, body, "m", SimTokenizer());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_EQ(parsed.status().message(), message) << body;
  }
  EXPECT_EQ(ParseCompletionRequest(true, R"({"messages":[]})", "m", SimTokenizer()).status().message(),
            "'messages' must be a non-empty array");
  EXPECT_EQ(ParseCompletionRequest(true, R"({"messages":[1]})", "m", SimTokenizer()).status().message(),
            "each message must be an object");
}

TEST(AnswerWriterTest, ChunksUsageAndWholeAnswers) {
  CompletionRequest req;
  req.chat = true;
  req.max_tokens = 2;
  req.prompt_tokens = 5;
  req.model = "m";
  const AnswerWriter writer(req, 7, 1700000000);
  const Json chunk = Json::parse(writer.Chunk(Json{{"content", kTokenText}}, /*last=*/true));
  EXPECT_EQ(chunk["id"], "chatcmpl-sim-7");
  EXPECT_EQ(chunk["object"], "chat.completion.chunk");
  EXPECT_EQ(chunk["created"], 1700000000);
  EXPECT_EQ(chunk["choices"][0]["delta"]["content"], " tok");
  EXPECT_EQ(chunk["choices"][0]["finish_reason"], "length");
  const Json usage = Json::parse(writer.UsageChunk());
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 7);
  const Json whole = Json::parse(writer.Whole());
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], " tok tok");

  req.chat = false;
  const AnswerWriter completion(req, 8, 0);
  const Json text = Json::parse(completion.Chunk(Json{{"content", kTokenText}}, false));
  EXPECT_EQ(text["id"], "cmpl-sim-8");
  EXPECT_EQ(text["choices"][0]["text"], " tok");
  EXPECT_TRUE(text["choices"][0]["finish_reason"].is_null());
}

TEST(AnswerWriterTest, CachedTokensOnlyWhenTheCacheIsOn) {
  CompletionRequest req;
  req.chat = true;
  req.max_tokens = 2;
  req.prompt_tokens = 40;
  const AnswerWriter off(req, 1, 0);
  EXPECT_FALSE(Json::parse(off.UsageChunk())["usage"].contains("prompt_tokens_details"));
  EXPECT_FALSE(Json::parse(off.Whole())["usage"].contains("prompt_tokens_details"));
  req.cached_tokens = 32;
  const AnswerWriter on(req, 2, 0);
  EXPECT_EQ(Json::parse(on.UsageChunk())["usage"]["prompt_tokens_details"]["cached_tokens"], 32);
  EXPECT_EQ(Json::parse(on.Whole())["usage"]["prompt_tokens_details"]["cached_tokens"], 32);
}

TEST(ParseCompletionRequestTest, ToolsAskForAToolCall) {
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"get_weather"}},)"
                            R"({"type":"function","function":{"name":"get_time"}}])";
  const std::string messages = R"("messages":[{"role":"user","content":"hi"}])";
  auto first =
      ParseCompletionRequest(true, "{" + messages + "," + tools + "}", "m", SimTokenizer());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->tool_calls);
  EXPECT_EQ(first->tool_name, "get_weather");

  auto named = ParseCompletionRequest(
      true,
      "{" + messages + "," + tools +
          R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}}})",
      "m", SimTokenizer());
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->tool_name, "get_time");

  auto none = ParseCompletionRequest(
      true, "{" + messages + "," + tools + R"(,"tool_choice":"none"})", "m", SimTokenizer());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->tool_calls);

  auto unnamed = ParseCompletionRequest(true, "{" + messages + R"(,"tools":[{"type":"function"}]})",
                                        "m", SimTokenizer());
  ASSERT_TRUE(unnamed.ok());
  EXPECT_EQ(unnamed->tool_name, kDefaultToolName);

  auto empty =
      ParseCompletionRequest(true, "{" + messages + R"(,"tools":[]})", "m", SimTokenizer());
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->tool_calls);

  // Tools belong to chat; /v1/completions ignores them.
  auto completion =
      ParseCompletionRequest(false, R"({"prompt":"p",)" + tools + "}", "m", SimTokenizer());
  ASSERT_TRUE(completion.ok());
  EXPECT_FALSE(completion->tool_calls);

  EXPECT_EQ(ParseCompletionRequest(true, "{" + messages + R"(,"tools":{}})", "m", SimTokenizer())
                .status()
                .message(),
            "'tools' must be an array");
}

TEST(AnswerWriterTest, ToolCallStreamPiecesAddUpToTheWholeCall) {
  CompletionRequest req;
  req.chat = true;
  req.max_tokens = 4;
  req.prompt_tokens = 5;
  req.tool_calls = true;
  req.tool_name = "get_weather";
  const AnswerWriter writer(req, 7, 0);
  const TokenEvents events(writer, req.max_tokens);
  std::string name;
  std::string arguments;
  for (int64_t k = 0; k < req.max_tokens; ++k) {
    const Json chunk = Json::parse(events.Event(k));
    const Json& choice = chunk["choices"][0];
    EXPECT_FALSE(choice["delta"].contains("content")) << k;
    const Json& call = choice["delta"]["tool_calls"][0];
    EXPECT_EQ(call["index"], 0);
    if (k == 0) {
      EXPECT_EQ(call["id"], "call_sim_7");
      EXPECT_EQ(call["type"], "function");
      name = call["function"]["name"];
    } else {
      EXPECT_FALSE(call["function"].contains("name")) << k;
    }
    arguments += call["function"]["arguments"].get<std::string>();
    EXPECT_EQ(choice["finish_reason"], k == 3 ? Json("tool_calls") : Json(nullptr)) << k;
  }
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(arguments, R"({"text":" tok tok tok"})");

  const Json whole = Json::parse(writer.Whole());
  const Json& choice = whole["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  EXPECT_EQ(choice["message"]["tool_calls"][0]["id"], "call_sim_7");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], arguments);
  EXPECT_EQ(whole["usage"]["completion_tokens"], 4);

  // One token: the name with empty-object arguments, the last event too.
  req.max_tokens = 1;
  const AnswerWriter one(req, 8, 0);
  const Json only = Json::parse(TokenEvents(one, 1).Event(0));
  EXPECT_EQ(only["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"], "{}");
  EXPECT_EQ(only["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(
      Json::parse(one.Whole())["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
      "{}");
}

TEST(AnswerWriterTest, TextTokenEventsAreTheSameButTheLast) {
  CompletionRequest req;
  req.chat = true;
  req.max_tokens = 3;
  const AnswerWriter writer(req, 1, 0);
  const TokenEvents events(writer, 3);
  EXPECT_EQ(events.Event(0), events.Event(1));
  EXPECT_EQ(Json::parse(events.Event(2))["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(Json::parse(events.Event(2))["choices"][0]["delta"]["content"], " tok");
}

TEST(CheckSimServerConfigTest, NamesTheBadField) {
  EXPECT_TRUE(CheckSimServerConfig(TestSimServerConfig()).ok());
  auto config = TestSimServerConfig();
  config.set_itl_ms(-1);
  EXPECT_EQ(CheckSimServerConfig(config).message(), "itl_ms: -1 must be a finite number >= 0");
  config = TestSimServerConfig();
  config.set_model("");
  EXPECT_EQ(CheckSimServerConfig(config).message(), "model: must not be empty");
  config = TestSimServerConfig();
  config.set_fault_split(2);
  EXPECT_EQ(CheckSimServerConfig(config).message(), "fault_split: 2 must be a fraction in [0, 1]");
  config = TestSimServerConfig();
  config.set_fault_500(0.5);
  config.set_fault_error_event(0.75);
  EXPECT_EQ(CheckSimServerConfig(config).message(),
            "fault_429 + fault_500 + fault_503 + fault_reset + fault_malformed + fault_stall + "
            "fault_split + fault_error_event = 1.25 must be <= 1 (one fault per request)");
}

// Each kind takes its slice in Fault's order; the draws depend only on the
// seed and the request number.
TEST(FaultPlanTest, KindsTakeTheirSlicesInOrder) {
  auto config = TestSimServerConfig();
  EXPECT_EQ(FaultPlan(config).Draw(0), Fault::kNone);
  config.set_fault_error_event(1);
  EXPECT_EQ(FaultPlan(config).Draw(5), Fault::kErrorEvent);
  config.set_fault_error_event(0);
  config.set_fault_429(0.5);
  config.set_fault_split(0.5);
  const FaultPlan plan(config);
  int by_kind[2] = {0, 0};
  for (uint64_t n = 0; n < 200; ++n) {
    const Fault f = plan.Draw(n);
    ASSERT_TRUE(f == Fault::k429 || f == Fault::kSplit);
    ++by_kind[f == Fault::k429 ? 0 : 1];
    EXPECT_EQ(f, FaultPlan(config).Draw(n));
  }
  EXPECT_GT(by_kind[0], 60);
  EXPECT_GT(by_kind[1], 60);
  EXPECT_TRUE(IsMidStream(Fault::kStall));
  EXPECT_FALSE(IsMidStream(Fault::kSplit));
  EXPECT_FALSE(IsMidStream(Fault::k503));
}

TEST(FaultPlanTest, SplitPiecesAreSmallAndRepeatable) {
  const FaultPlan plan(TestSimServerConfig());
  PieceSizes a = plan.SplitPieces(3);
  PieceSizes b = plan.SplitPieces(3);
  for (int i = 0; i < 100; ++i) {
    const size_t n = a.Next();
    EXPECT_GE(n, 1u);
    EXPECT_LE(n, 11u);
    EXPECT_EQ(n, b.Next());
  }
  EXPECT_THAT(ErrorBody("x", "t", 400), HasSubstr(R"("code":400)"));
}

}  // namespace
}  // namespace surge::simserver
