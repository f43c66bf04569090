// Dataset files (R-MET-3): jsonl, sharegpt and mooncake's shared prefixes.
#include "coordinator/dataset/payload_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/prompt_builder.h"
#include "common/utf8.h"
#include "tests/testing/dataset_files.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::DatasetAt;
using ::surge::testing::StatusMessage;
using ::surge::testing::WriteDatasetFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---------------------------------------------------------------- jsonl

TEST(JsonlDatasetTest, PromptsMessagesAndMaxTokens) {
  const fs::path path = WriteDatasetFile(
      "prompts.jsonl",
      R"({"prompt": "Tell me a story."})"
      "\n"
      R"({"prompt": "Count to ten.", "max_tokens": 20})"
      "\n\n"
      R"({"messages": [{"role": "system", "content": "Be brief."},)"
      R"( {"role": "user", "content": "Why is the sky blue?"}]})"
      "\n"
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "Part one, "},)"
      R"( {"type": "text", "text": "part two."}]}], "max_tokens": 7})"
      "\n");
  auto source = MakePayloadSource(DatasetAt("jsonl", path), 4, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  const PayloadSource& s = **source;
  EXPECT_EQ(s.name(), "prompts");
  EXPECT_TRUE(s.warnings().empty());
  EXPECT_EQ(s.At(0).prompt_text, "Tell me a story.");
  EXPECT_EQ(s.At(0).input_tokens, EstimateTokens("Tell me a story."));
  EXPECT_EQ(s.At(0).input_tokens, 4u);  // 16 characters
  EXPECT_EQ(s.At(0).max_tokens, 128u);  // --random-output-len
  EXPECT_EQ(s.At(1).max_tokens, 20u);
  // A chat list: every content, in order, joined by a blank line.
  EXPECT_EQ(s.At(2).prompt_text, "Be brief.\n\nWhy is the sky blue?");
  EXPECT_EQ(s.At(2).input_tokens, EstimateTokens("Be brief.\n\nWhy is the sky blue?"));
  EXPECT_EQ(s.At(3).prompt_text, "Part one, part two.");
  EXPECT_EQ(s.At(3).max_tokens, 7u);
  EXPECT_TRUE(s.At(0).prefix_block_ids.empty());
  EXPECT_EQ(s.replay_offsets_s(), nullptr);

  // The text goes inline and is what the worker sends.
  surge::v1::Assignment a;
  FillAssignmentPayload(s.At(2), &a);
  EXPECT_EQ(a.prompt_text(), "Be brief.\n\nWhy is the sky blue?");
  EXPECT_EQ(BuildAssignmentPrompt(a), a.prompt_text());
}

TEST(SharedPrefixPayloadTest, EqualPrefixSeedsGiveByteIdenticalLeadingText) {
  Payload a(300, 16, 11);
  a.prefix_tokens = 100;
  a.prefix_seed = 42;
  Payload b(250, 16, 99);
  b.prefix_tokens = 100;
  b.prefix_seed = 42;
  surge::v1::Assignment first;
  surge::v1::Assignment second;
  FillAssignmentPayload(a, &first);
  FillAssignmentPayload(b, &second);
  EXPECT_EQ(first.prefix_tokens(), 100u);
  EXPECT_EQ(first.prefix_seed(), 42u);
  const std::string prefix = BuildPrompt(100, 42);
  // The shared text, a space, then the request's own 200 (150) tokens.
  EXPECT_EQ(BuildAssignmentPrompt(first), prefix + " " + BuildPrompt(200, 11));
  EXPECT_EQ(BuildAssignmentPrompt(second), prefix + " " + BuildPrompt(150, 99));
  // A payload without a prefix leaves the fields unset.
  surge::v1::Assignment plain;
  FillAssignmentPayload(Payload(300, 16, 11), &plain);
  EXPECT_EQ(plain.prefix_tokens(), 0u);
  EXPECT_EQ(BuildAssignmentPrompt(plain), BuildPrompt(300, 11));
}

TEST(JsonlDatasetTest, CyclesWithAWarningWhenNExceedsTheLines) {
  const fs::path path =
      WriteDatasetFile("two.jsonl", "{\"prompt\": \"a b\"}\n{\"prompt\": \"c d\"}\n");
  auto source = MakePayloadSource(DatasetAt("jsonl", path), 5, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->At(4).prompt_text, "a b");
  EXPECT_EQ((*source)->At(3).prompt_text, "c d");
  ASSERT_EQ((*source)->warnings().size(), 1u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("reused from the top"));
}

TEST(JsonlDatasetTest, BadLinesNameTheFileAndLine) {
  struct Case {
    std::string third_line, expected;
  };
  const Case cases[] = {
      {"{not json", "not a JSON object"},
      {"[1, 2]", "not a JSON object"},
      {"{\"max_tokens\": 3}", "exactly one of \"prompt\""},
      {"{\"prompt\": \"x\", \"messages\": []}", "exactly one of \"prompt\""},
      {"{\"prompt\": 5}", "\"prompt\" must be a string"},
      {"{\"prompt\": \"\"}", "the prompt is empty"},
      {"{\"prompt\": \"x\", \"max_tokens\": 0}", "\"max_tokens\" must be a whole number"},
      {"{\"prompt\": \"x\", \"max_tokens\": 2.5}", "\"max_tokens\" must be a whole number"},
      {"{\"messages\": []}", "non-empty list"},
      {"{\"messages\": [{\"role\": \"user\"}]}", "messages[0].content is missing"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}",
       "only text content parts"},
      // A raw byte that is not UTF-8: named as such, quoted
      // with U+FFFD.
      {"{\"prompt\": \"caf\xe9\"}",
       "not valid UTF-8 text (JSON must be UTF-8): \"{\"prompt\": \"caf\xEF\xBF\xBD\"}\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.third_line);
    const fs::path path =
        WriteDatasetFile("bad.jsonl", absl::StrCat("{\"prompt\": \"ok\"}\n\n", c.third_line, "\n"));
    auto source = MakePayloadSource(DatasetAt("jsonl", path), 10, 0);
    ASSERT_FALSE(source.ok());
    EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(StatusMessage(source.status()), HasSubstr(path.string()));
    EXPECT_THAT(StatusMessage(source.status()), HasSubstr("line 3"));
    EXPECT_THAT(StatusMessage(source.status()), HasSubstr(c.expected));
  }
  auto missing = MakePayloadSource(DatasetAt("jsonl", "/nonexistent/x.jsonl"), 1, 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(StatusMessage(missing.status()),
              HasSubstr("dataset_path = \"/nonexistent/x.jsonl\""));
}

TEST(JsonlDatasetTest, OnlyTheFirstNLinesAreRead) {
  // A bad line after the N-th is never read.
  const fs::path path = WriteDatasetFile("head.jsonl", "{\"prompt\": \"x\"}\n{broken\n");
  EXPECT_TRUE(MakePayloadSource(DatasetAt("jsonl", path), 1, 0).ok());
  EXPECT_FALSE(MakePayloadSource(DatasetAt("jsonl", path), 2, 0).ok());
}

// ---------------------------------------------------------------- sharegpt

constexpr char kShareGpt[] = R"([
  {"id": "a", "conversations": [
      {"from": "human", "value": "What is a prime number?"},
      {"from": "gpt", "value": "A whole number above one with no divisors but one and itself."},
      {"from": "human", "value": "Give an example."},
      {"from": "gpt", "value": "7"}]},
  {"id": "b", "conversations": [{"from": "gpt", "value": "Hello, how can I help?"}]},
  {"id": "c", "conversations": []},
  {"id": "d", "conversations": [
      {"from": "system", "value": "You are terse."},
      {"from": "gpt", "value": "Ready."},
      {"from": "human", "value": "Name a color."},
      {"from": "gpt", "value": "Blue."}]},
  {"id": "e", "conversations": [{"from": "human", "value": "Unanswered question"}]},
  {"id": "f", "conversations": [{"from": "human", "value": ""}, {"from": "gpt", "value": "?"}]}
])";

TEST(ShareGptDatasetTest, FirstHumanTurnIsThePromptAndTheAnswerSizesMaxTokens) {
  const fs::path path = WriteDatasetFile("sharegpt_small.json", kShareGpt);
  auto source = MakePayloadSource(DatasetAt("sharegpt", path), 3, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  const PayloadSource& s = **source;
  EXPECT_EQ(s.name(), "sharegpt_small");
  EXPECT_EQ(s.At(0).prompt_text, "What is a prime number?");
  EXPECT_EQ(s.At(0).input_tokens, EstimateTokens("What is a prime number?"));
  EXPECT_EQ(s.At(0).max_tokens,
            EstimateTokens("A whole number above one with no divisors but one and itself."));
  EXPECT_EQ(s.At(1).prompt_text, "Name a color.");  // after a system and a gpt turn
  EXPECT_EQ(s.At(1).max_tokens, 2u);                // "Blue." = 5 characters
  EXPECT_EQ(s.At(2).prompt_text, "Unanswered question");
  EXPECT_EQ(s.At(2).max_tokens, 128u);  // no answer: --random-output-len
  // b, c (no human turn) skipped; f was not reached (N = 3 usable ones).
  ASSERT_EQ(s.warnings().size(), 1u);
  EXPECT_THAT(s.warnings()[0], HasSubstr("2 conversations without a non-empty human turn"));
}

TEST(ShareGptDatasetTest, SkipsEmptyHumanTurnsAndCycles) {
  const fs::path path = WriteDatasetFile("sharegpt_cycle.json", kShareGpt);
  auto source = MakePayloadSource(DatasetAt("sharegpt", path), 5, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->At(3).prompt_text, "What is a prime number?");
  ASSERT_EQ((*source)->warnings().size(), 2u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("3 conversations"));  // b, c, f
  EXPECT_THAT((*source)->warnings()[1], HasSubstr("reused from the top"));
}

TEST(ShareGptDatasetTest, StreamsAndStopsAfterTheNthConversation) {
  // The second element is malformed, but only one conversation is needed.
  const fs::path path =
      WriteDatasetFile("sharegpt_stream.json",
                       R"([{"conversations": [{"from": "human", "value": "hi"}]}, 17, {"broken")");
  auto one = MakePayloadSource(DatasetAt("sharegpt", path), 1, 0);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)->At(0).prompt_text, "hi");
  auto two = MakePayloadSource(DatasetAt("sharegpt", path), 2, 0);
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(StatusMessage(two.status()), HasSubstr("conversation 1 (0-based"));
  EXPECT_THAT(StatusMessage(two.status()), HasSubstr("\"conversations\" list"));
}

TEST(ShareGptDatasetTest, ErrorsNameTheFileAndWhere) {
  const fs::path syntax = WriteDatasetFile(
      "sharegpt_syntax.json", "[\n  {\"conversations\": []},\n  {\"conversations\": [}\n]\n");
  auto s = MakePayloadSource(DatasetAt("sharegpt", syntax), 5, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(StatusMessage(s.status()), HasSubstr(syntax.string()));
  EXPECT_THAT(StatusMessage(s.status()), HasSubstr("line 3"));
  EXPECT_THAT(StatusMessage(s.status()), HasSubstr("not valid JSON"));

  const fs::path object = WriteDatasetFile("sharegpt_object.json", R"({"conversations": []})");
  auto o = MakePayloadSource(DatasetAt("sharegpt", object), 5, 0);
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(StatusMessage(o.status()), HasSubstr("one JSON array"));

  const fs::path turn = WriteDatasetFile("sharegpt_turn.json",
                                         R"([{"conversations": [{"from": "human", "value": 3}]}])");
  auto t = MakePayloadSource(DatasetAt("sharegpt", turn), 5, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(StatusMessage(t.status()), HasSubstr("conversation 0"));
  EXPECT_THAT(StatusMessage(t.status()), HasSubstr("conversations[0]"));

  const fs::path none = WriteDatasetFile("sharegpt_none.json",
                                         R"([{"conversations": [{"from": "gpt", "value": "x"}]}])");
  auto n = MakePayloadSource(DatasetAt("sharegpt", none), 5, 0);
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(StatusMessage(n.status()), HasSubstr("no conversation with a human turn"));

  // Invalid UTF-8 in a turn: a JSON error naming the line,
  // and the message itself is valid UTF-8.
  const fs::path bytes = WriteDatasetFile(
      "sharegpt_utf8.json",
      "[\n{\"conversations\": [{\"from\": \"human\", \"value\": \"caf\xe9\"}]}\n]\n");
  auto u = MakePayloadSource(DatasetAt("sharegpt", bytes), 5, 0);
  ASSERT_FALSE(u.ok());
  EXPECT_THAT(StatusMessage(u.status()), HasSubstr("line 2"));
  EXPECT_THAT(StatusMessage(u.status()), HasSubstr("UTF-8"));
  EXPECT_TRUE(IsValidUtf8(StatusMessage(u.status())));
}

// ---------------------------------------------------------------- mooncake

TEST(MooncakeDatasetTest, HashIdsBecomeSharedPrefixBlocks) {
  const fs::path path = WriteDatasetFile(
      "prefix_trace.jsonl",
      R"({"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [7, 8, 9]}
{"timestamp": 0, "input_length": 1300, "output_length": 5, "hash_ids": [7, 8, 10]}
{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [11, 12, 13]}
{"timestamp": 0, "input_length": 100, "output_length": 5}
)");
  auto source = MakePayloadSource(DatasetAt("mooncake", path), 4, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  const PayloadSource& s = **source;
  EXPECT_THAT(s.At(0).prefix_block_ids, ElementsAre(7, 8, 9));
  EXPECT_THAT(s.At(1).prefix_block_ids, ElementsAre(7, 8, 10));
  EXPECT_TRUE(s.At(3).prefix_block_ids.empty());
  EXPECT_EQ(s.At(0).input_tokens, 1100u);
  EXPECT_TRUE(s.At(0).prompt_text.empty());  // a reference, not text

  // Through the dispatcher's copy into the Assignment, to the worker's text.
  std::string prompts[4];
  for (int i = 0; i < 4; ++i) {
    surge::v1::Assignment a;
    a.set_index(i);
    FillAssignmentPayload(s.At(i), &a);
    EXPECT_EQ(static_cast<size_t>(a.prefix_block_ids_size()), s.At(i).prefix_block_ids.size());
    prompts[i] = BuildAssignmentPrompt(a);
  }
  auto common_prefix = [](const std::string& x, const std::string& y) {
    size_t n = 0;
    while (n < x.size() && n < y.size() && x[n] == y[n]) ++n;
    return n;
  };
  // Two shared 512-token blocks = about 2·512·4 characters of equal text.
  const std::string two_blocks = BuildPrompt(kPrefixBlockTokens, 7 * 104729ULL) + " " +
                                 BuildPrompt(kPrefixBlockTokens, 8 * 104729ULL);
  EXPECT_GT(two_blocks.size(), 2 * kPrefixBlockTokens * kCharsPerToken - 40);
  EXPECT_EQ(prompts[0].substr(0, two_blocks.size()), two_blocks);
  EXPECT_EQ(prompts[1].substr(0, two_blocks.size()), two_blocks);
  EXPECT_GE(common_prefix(prompts[0], prompts[1]), two_blocks.size());
  // The third blocks differ, and other ids share nothing.
  EXPECT_LT(common_prefix(prompts[0], prompts[1]), two_blocks.size() + 200);
  EXPECT_LT(common_prefix(prompts[0], prompts[2]), 100u);
  // Lengths follow input_length (4 characters per token, cut at words).
  EXPECT_NEAR(static_cast<double>(prompts[1].size()), 1300.0 * kCharsPerToken, 40);
}

TEST(MooncakeDatasetTest, BadHashIdsNameTheLine) {
  const fs::path path =
      WriteDatasetFile("bad_ids.jsonl",
                       "{\"input_length\": 5, \"output_length\": 2, \"hash_ids\": [1]}\n"
                       "{\"input_length\": 5, \"output_length\": 2, \"hash_ids\": [-1]}\n");
  auto source = MakePayloadSource(DatasetAt("mooncake", path), 2, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(StatusMessage(source.status()), HasSubstr("line 2"));
  EXPECT_THAT(StatusMessage(source.status()), HasSubstr("hash_ids"));
}

TEST(MooncakeDatasetTest, TheRealTraceSharesPrefixes) {
  const fs::path path =
      fs::path(SURGE_SOURCE_DIR) / "data" / "traces" / "mooncake_conversation_trace.jsonl";
  auto source = MakePayloadSource(DatasetAt("mooncake", path), 3, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  // Its first lines all start with block 0.
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ((*source)->At(i).prefix_block_ids.at(0), 0u);
  EXPECT_EQ((*source)->At(0).prefix_block_ids.size(), 14u);
}

}  // namespace
}  // namespace surge::coordinator
