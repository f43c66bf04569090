// Dataset files (R-MET-3): jsonl, sharegpt, mooncake shared prefixes, and
// trace replay's offsets and plan.
#include "coordinator/dataset/payload_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/prompt_builder.h"
#include "common/utf8.h"
#include "coordinator/plan/replay_schedule.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

fs::path WriteFile(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("dataset_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return path;
}

surge::v1::DatasetConfig Dataset(const std::string& name, const fs::path& path) {
  surge::v1::DatasetConfig d;
  d.set_dataset_name(name);
  d.set_dataset_path(path.string());
  d.set_random_output_len(128);
  return d;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// ---------------------------------------------------------------- jsonl

TEST(JsonlDatasetTest, PromptsMessagesAndMaxTokens) {
  const fs::path path = WriteFile(
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
  auto source = MakePayloadSource(Dataset("jsonl", path), 4, 0);
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

TEST(JsonlDatasetTest, CyclesWithAWarningWhenNExceedsTheLines) {
  const fs::path path = WriteFile("two.jsonl", "{\"prompt\": \"a b\"}\n{\"prompt\": \"c d\"}\n");
  auto source = MakePayloadSource(Dataset("jsonl", path), 5, 0);
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
        WriteFile("bad.jsonl", absl::StrCat("{\"prompt\": \"ok\"}\n\n", c.third_line, "\n"));
    auto source = MakePayloadSource(Dataset("jsonl", path), 10, 0);
    ASSERT_FALSE(source.ok());
    EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(source.status()), HasSubstr(path.string()));
    EXPECT_THAT(Message(source.status()), HasSubstr("line 3"));
    EXPECT_THAT(Message(source.status()), HasSubstr(c.expected));
  }
  auto missing = MakePayloadSource(Dataset("jsonl", "/nonexistent/x.jsonl"), 1, 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(Message(missing.status()), HasSubstr("dataset_path = \"/nonexistent/x.jsonl\""));
}

TEST(JsonlDatasetTest, OnlyTheFirstNLinesAreRead) {
  // A bad line after the N-th is never read.
  const fs::path path = WriteFile("head.jsonl", "{\"prompt\": \"x\"}\n{broken\n");
  EXPECT_TRUE(MakePayloadSource(Dataset("jsonl", path), 1, 0).ok());
  EXPECT_FALSE(MakePayloadSource(Dataset("jsonl", path), 2, 0).ok());
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
  const fs::path path = WriteFile("sharegpt_small.json", kShareGpt);
  auto source = MakePayloadSource(Dataset("sharegpt", path), 3, 0);
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
  const fs::path path = WriteFile("sharegpt_cycle.json", kShareGpt);
  auto source = MakePayloadSource(Dataset("sharegpt", path), 5, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->At(3).prompt_text, "What is a prime number?");
  ASSERT_EQ((*source)->warnings().size(), 2u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("3 conversations"));  // b, c, f
  EXPECT_THAT((*source)->warnings()[1], HasSubstr("reused from the top"));
}

TEST(ShareGptDatasetTest, StreamsAndStopsAfterTheNthConversation) {
  // The second element is malformed, but only one conversation is needed.
  const fs::path path =
      WriteFile("sharegpt_stream.json",
                R"([{"conversations": [{"from": "human", "value": "hi"}]}, 17, {"broken")");
  auto one = MakePayloadSource(Dataset("sharegpt", path), 1, 0);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)->At(0).prompt_text, "hi");
  auto two = MakePayloadSource(Dataset("sharegpt", path), 2, 0);
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(Message(two.status()), HasSubstr("conversation 1 (0-based"));
  EXPECT_THAT(Message(two.status()), HasSubstr("\"conversations\" list"));
}

TEST(ShareGptDatasetTest, ErrorsNameTheFileAndWhere) {
  const fs::path syntax = WriteFile("sharegpt_syntax.json",
                                    "[\n  {\"conversations\": []},\n  {\"conversations\": [}\n]\n");
  auto s = MakePayloadSource(Dataset("sharegpt", syntax), 5, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s.status()), HasSubstr(syntax.string()));
  EXPECT_THAT(Message(s.status()), HasSubstr("line 3"));
  EXPECT_THAT(Message(s.status()), HasSubstr("not valid JSON"));

  const fs::path object = WriteFile("sharegpt_object.json", R"({"conversations": []})");
  auto o = MakePayloadSource(Dataset("sharegpt", object), 5, 0);
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(Message(o.status()), HasSubstr("one JSON array"));

  const fs::path turn =
      WriteFile("sharegpt_turn.json", R"([{"conversations": [{"from": "human", "value": 3}]}])");
  auto t = MakePayloadSource(Dataset("sharegpt", turn), 5, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(Message(t.status()), HasSubstr("conversation 0"));
  EXPECT_THAT(Message(t.status()), HasSubstr("conversations[0]"));

  const fs::path none =
      WriteFile("sharegpt_none.json", R"([{"conversations": [{"from": "gpt", "value": "x"}]}])");
  auto n = MakePayloadSource(Dataset("sharegpt", none), 5, 0);
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(Message(n.status()), HasSubstr("no conversation with a human turn"));

  // Invalid UTF-8 in a turn: a JSON error naming the line,
  // and the message itself is valid UTF-8.
  const fs::path bytes =
      WriteFile("sharegpt_utf8.json",
                "[\n{\"conversations\": [{\"from\": \"human\", \"value\": \"caf\xe9\"}]}\n]\n");
  auto u = MakePayloadSource(Dataset("sharegpt", bytes), 5, 0);
  ASSERT_FALSE(u.ok());
  EXPECT_THAT(Message(u.status()), HasSubstr("line 2"));
  EXPECT_THAT(Message(u.status()), HasSubstr("UTF-8"));
  EXPECT_TRUE(IsValidUtf8(Message(u.status())));
}

// ---------------------------------------------------------------- mooncake

TEST(MooncakeDatasetTest, HashIdsBecomeSharedPrefixBlocks) {
  const fs::path path =
      WriteFile("prefix_trace.jsonl",
                R"({"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [7, 8, 9]}
{"timestamp": 0, "input_length": 1300, "output_length": 5, "hash_ids": [7, 8, 10]}
{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [11, 12, 13]}
{"timestamp": 0, "input_length": 100, "output_length": 5}
)");
  auto source = MakePayloadSource(Dataset("mooncake", path), 4, 0);
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
      WriteFile("bad_ids.jsonl",
                "{\"input_length\": 5, \"output_length\": 2, \"hash_ids\": [1]}\n"
                "{\"input_length\": 5, \"output_length\": 2, \"hash_ids\": [-1]}\n");
  auto source = MakePayloadSource(Dataset("mooncake", path), 2, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(Message(source.status()), HasSubstr("line 2"));
  EXPECT_THAT(Message(source.status()), HasSubstr("hash_ids"));
}

TEST(MooncakeDatasetTest, TheRealTraceSharesPrefixes) {
  const fs::path path =
      fs::path(SURGE_SOURCE_DIR) / "data" / "traces" / "mooncake_conversation_trace.jsonl";
  auto source = MakePayloadSource(Dataset("mooncake", path), 3, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  // Its first lines all start with block 0.
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ((*source)->At(i).prefix_block_ids.at(0), 0u);
  EXPECT_EQ((*source)->At(0).prefix_block_ids.size(), 14u);
}

// ---------------------------------------------------------------- replay

surge::v1::DatasetConfig Replay(const fs::path& path, double scale) {
  surge::v1::DatasetConfig d = Dataset("mooncake", path);
  d.set_trace_replay(true);
  d.set_trace_time_scale(scale);
  return d;
}

std::string TraceLine(double timestamp_ms, int input_length) {
  return absl::StrCat("{\"timestamp\": ", timestamp_ms, ", \"input_length\": ", input_length,
                      ", \"output_length\": 3, \"hash_ids\": [1]}\n");
}

TEST(TraceReplayTest, OffsetsAreTimestampsTimesScaleExactly) {
  const fs::path path =
      WriteFile("replay_tiny.jsonl", TraceLine(5000, 10) + TraceLine(6000, 11) +
                                         TraceLine(6000, 12) + TraceLine(9000, 13));
  auto source = MakePayloadSource(Replay(path, 0.5), 4, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_NE((*source)->replay_offsets_s(), nullptr);
  // (t − t_first) · 0.5 / 1000: relative to the first line, the first at 0.
  EXPECT_THAT(*(*source)->replay_offsets_s(), ElementsAre(0.0, 0.5, 0.5, 2.0));
  EXPECT_TRUE((*source)->warnings().empty());

  auto plan = BuildReplaySchedule(*(*source)->replay_offsets_s(), 9);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->offset_s, ElementsAre(0.0, 0.5, 0.5, 2.0));
  EXPECT_THAT(plan->interval_s, ElementsAre(0.0, 0.5, 0.0, 1.5));  // Δ_0 = t_0
  // The trace's mean rate (N−1)/(t_last − t_first) = 3/2 for every request.
  EXPECT_THAT(plan->rate_rps, ElementsAre(1.5, 1.5, 1.5, 1.5));
  // R-ANOM against e = 1/1.5 s with burstiness anomalies on: 0 s → timing,
  // 0.5 s (25 % off) → normal, 1.5 s (125 % off) → burstiness.
  EXPECT_THAT(plan->anomaly, ElementsAre(Anomaly::kTiming, Anomaly::kNormal, Anomaly::kTiming,
                                         Anomaly::kBurstiness));
  EXPECT_EQ(plan->seed, 9u);
  const ResolvedTraffic& t = plan->traffic;
  EXPECT_TRUE(t.trace_replay);
  EXPECT_DOUBLE_EQ(t.target_rate_rps, 1.5);
  EXPECT_DOUBLE_EQ(t.request_rate_rps, 1.5);
  EXPECT_FALSE(t.ramp_active);
  EXPECT_FALSE(t.instant);
  EXPECT_TRUE(t.warnings.empty());
  // 1/CV² of Δ_1..Δ_3 = (0.5, 0, 1.5): mean 2/3, variance 7/18 → 8/7.
  EXPECT_NEAR(t.burstiness, 8.0 / 7.0, 1e-12);
  // `surge report` rebuilds the same facts from the plan file's offsets.
  const ResolvedTraffic again = ResolveReplayTraffic(plan->offset_s);
  EXPECT_EQ(again.target_rate_rps, t.target_rate_rps);
  EXPECT_EQ(again.burstiness, t.burstiness);
}

TEST(TraceReplayTest, UnsortedTraceIsSortedStablyWithAWarning) {
  const fs::path path = WriteFile("replay_unsorted.jsonl",
                                  TraceLine(0, 100) + TraceLine(3000, 101) + TraceLine(1000, 102) +
                                      TraceLine(2000, 103) + TraceLine(1000, 104));
  auto source = MakePayloadSource(Replay(path, 1.0), 5, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(*(*source)->replay_offsets_s(), ElementsAre(0.0, 1.0, 1.0, 2.0, 3.0));
  // Request i carries the payload of the i-th earliest line; equal times keep
  // file order (line 3 before line 5).
  std::vector<uint32_t> inputs;
  for (uint64_t i = 0; i < 5; ++i) inputs.push_back((*source)->At(i).input_tokens);
  EXPECT_THAT(inputs, ElementsAre(100, 102, 104, 103, 101));
  ASSERT_EQ((*source)->warnings().size(), 1u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("not in timestamp order"));
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("line 3"));
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("sorted stably"));
  // Without replay the file order is kept and timestamps are not read.
  auto plain = MakePayloadSource(Dataset("mooncake", path), 5, 0);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->At(1).input_tokens, 101u);
  EXPECT_EQ((*plain)->replay_offsets_s(), nullptr);
}

TEST(TraceReplayTest, CyclingKeepsTheMeanRate) {
  const fs::path path =
      WriteFile("replay_cycle.jsonl", TraceLine(0, 1) + TraceLine(1000, 2) + TraceLine(2000, 3));
  auto source = MakePayloadSource(Replay(path, 1.0), 7, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  // Period = span · L/(L−1) = 2 · 3/2 = 3 s.
  EXPECT_THAT(*(*source)->replay_offsets_s(), ElementsAre(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0));
  EXPECT_EQ((*source)->At(4).input_tokens, 2u);
  ASSERT_EQ((*source)->warnings().size(), 1u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("reused from the top"));
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("3 s"));
}

TEST(TraceReplayTest, AllAtOnceIsInstantAndMissingTimestampsNameTheLine) {
  const fs::path zero = WriteFile("replay_zero.jsonl", TraceLine(7, 1) + TraceLine(7, 2));
  auto source = MakePayloadSource(Replay(zero, 1.0), 2, 0);
  ASSERT_TRUE(source.ok());
  auto plan = BuildReplaySchedule(*(*source)->replay_offsets_s(), 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->traffic.instant);
  EXPECT_EQ(plan->traffic.target_rate_rps, 0);
  EXPECT_THAT(plan->anomaly, ElementsAre(Anomaly::kInstant, Anomaly::kInstant));
  EXPECT_THAT(plan->offset_s, ElementsAre(0.0, 0.0));

  const fs::path missing = WriteFile(
      "replay_missing.jsonl", TraceLine(0, 1) + "{\"input_length\": 5, \"output_length\": 2}\n");
  auto bad = MakePayloadSource(Replay(missing, 1.0), 2, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("line 2"));
  EXPECT_THAT(Message(bad.status()), HasSubstr("\"timestamp\""));
  // Replay needs timestamps: only mooncake has them.
  surge::v1::DatasetConfig jsonl = Replay(missing, 1.0);
  jsonl.set_dataset_name("jsonl");
  EXPECT_FALSE(MakePayloadSource(jsonl, 2, 0).ok());
}

TEST(TraceReplayTest, ScheduleRejectsBadOffsets) {
  EXPECT_FALSE(BuildReplaySchedule({}, 0).ok());
  EXPECT_FALSE(BuildReplaySchedule({0.0, 2.0, 1.0}, 0).ok());
  EXPECT_FALSE(BuildReplaySchedule({-1.0, 2.0}, 0).ok());
  EXPECT_FALSE(BuildReplaySchedule({0.0, std::numeric_limits<double>::quiet_NaN()}, 0).ok());
  auto bad = BuildReplaySchedule({0.0, 2.0, 1.0}, 0);
  EXPECT_THAT(Message(bad.status()), HasSubstr("request 2"));
  // A sparse trace stays paced (not instant) even below 0.1 RPS.
  auto sparse = BuildReplaySchedule({0.0, 60.0}, 0);
  ASSERT_TRUE(sparse.ok());
  EXPECT_FALSE(sparse->traffic.instant);
  EXPECT_DOUBLE_EQ(sparse->traffic.target_rate_rps, 1.0 / 60.0);
}

TEST(TraceReplayTest, TheProductionTraceIsMostlyTimingAnomalies) {
  const fs::path path =
      fs::path(SURGE_SOURCE_DIR) / "data" / "traces" / "mooncake_conversation_trace.jsonl";
  auto source = MakePayloadSource(Replay(path, 1.0), 12031, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_TRUE((*source)->warnings().empty());  // in order, no reuse
  auto plan = BuildReplaySchedule(*(*source)->replay_offsets_s(), 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 12031u);
  EXPECT_EQ(plan->offset_s.front(), 0.0);
  EXPECT_EQ(plan->offset_s.back(), 3536999 * 1.0 / 1000.0);
  EXPECT_DOUBLE_EQ(plan->traffic.target_rate_rps, 12030 / 3536.999);
  // 10,851 intervals are exactly 0, plus Δ_0 = 0: timing anomalies, the
  // truth of a trace on a ~3 s grid.
  EXPECT_EQ(plan->Count(Anomaly::kTiming), 10852u);
  EXPECT_EQ(plan->Count(Anomaly::kTiming) + plan->Count(Anomaly::kBurstiness) +
                plan->Count(Anomaly::kNormal),
            12031u);
}

}  // namespace
}  // namespace surge::coordinator
