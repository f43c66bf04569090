// Multi-turn sessions' sources (docs/DATASETS.md "Multi-turn sessions"):
// sharegpt conversations, synthetic sessions, think times.
#include "coordinator/dataset/session_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/math/distributions/exponential.hpp>
#include <boost/math/distributions/gamma.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/prompt_builder.h"
#include "coordinator/dataset/file_datasets.h"
#include "tests/testing/dataset_files.h"
#include "tests/testing/ks_statistic.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::DatasetAt;
using ::surge::testing::kKsCritical;
using ::surge::testing::KsStatistic;
using ::surge::testing::StatusMessage;
using ::surge::testing::WriteDatasetFile;
using ::testing::HasSubstr;

const fs::path kSessionsFile =
    fs::path(SURGE_SOURCE_DIR) / "tests/testdata/sharegpt_sessions_200.json";
const fs::path kNoHumanFile =
    fs::path(SURGE_SOURCE_DIR) / "tests/testdata/sharegpt_no_human_turn.json";

std::unique_ptr<SessionSource> Make(const surge::v1::DatasetConfig& d,
                                    const surge::v1::SessionConfig& s, uint64_t n, uint64_t seed) {
  auto source = MakeSessionSource(d, s, n, seed);
  EXPECT_TRUE(source.ok()) << source.status();
  return source.ok() ? *std::move(source) : nullptr;
}

surge::v1::DatasetConfig Synthetic(uint32_t input_len = 100, uint32_t output_len = 50) {
  surge::v1::DatasetConfig d;
  d.set_dataset_name("synthetic");
  d.set_random_input_len(input_len);
  d.set_random_output_len(output_len);
  return d;
}

surge::v1::SessionConfig Turns(const std::string& turns) {
  surge::v1::SessionConfig s;
  s.set_multi_turn(true);
  s.set_session_turns(turns);
  return s;
}

// What the file says, read independently of the reader: each
// conversation's human turns and the answer right after each ("" = none).
struct FileTurn {
  std::string human;
  std::string answer;
};
std::vector<std::vector<FileTurn>> HumanTurnsOf(const fs::path& path) {
  std::ifstream in(path);
  const nlohmann::json file = nlohmann::json::parse(in);
  std::vector<std::vector<FileTurn>> out;
  for (const nlohmann::json& conv : file) {
    const nlohmann::json& turns = conv["conversations"];
    std::vector<FileTurn> humans;
    for (size_t t = 0; t < turns.size(); ++t) {
      const std::string from = turns[t]["from"];
      if (from != "human" && from != "user") continue;
      FileTurn turn{turns[t]["value"], ""};
      if (t + 1 < turns.size() && turns[t + 1]["from"] == "gpt")
        turn.answer = turns[t + 1]["value"];
      humans.push_back(turn);
    }
    out.push_back(humans);
  }
  return out;
}

// ---------------------------------------------------------------- sharegpt

TEST(ShareGptSessionsTest, EveryHumanTurnOfEveryConversationInOrder) {
  const std::vector<std::vector<FileTurn>> file = HumanTurnsOf(kSessionsFile);
  ASSERT_EQ(file.size(), 200u);
  auto source = Make(DatasetAt("sharegpt", kSessionsFile), Turns(""), 200, 7);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->num_sessions(), 200u);
  EXPECT_EQ(source->name(), "sharegpt_sessions_200");
  EXPECT_TRUE(source->warnings().empty());
  std::set<uint32_t> counts;
  for (uint64_t i = 0; i < 200; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(source->TurnsOf(i), file[i].size());
    counts.insert(source->TurnsOf(i));
    const std::vector<SessionTurnPayload> turns = source->At(i);
    ASSERT_EQ(turns.size(), file[i].size());
    for (size_t k = 0; k < turns.size(); ++k) {
      const Payload& p = turns[k].payload;
      EXPECT_EQ(p.prompt_text, file[i][k].human);
      EXPECT_EQ(p.input_tokens, EstimateTokens(file[i][k].human));
      ASSERT_FALSE(file[i][k].answer.empty());
      EXPECT_EQ(p.max_tokens, EstimateTokens(file[i][k].answer));
      EXPECT_TRUE(p.prefix_block_ids.empty());
      EXPECT_EQ(p.prefix_tokens, 0u);
      EXPECT_EQ(turns[k].think_ns, 0);  // no think-time option: 0
    }
  }
  // The file's turn counts vary over 2..6.
  EXPECT_EQ(counts, (std::set<uint32_t>{2, 3, 4, 5, 6}));
}

TEST(ShareGptSessionsTest, FewerSessionsReadTheHeadMoreReuseFromTheTop) {
  const std::vector<std::vector<FileTurn>> file = HumanTurnsOf(kSessionsFile);
  auto head = Make(DatasetAt("sharegpt", kSessionsFile), Turns(""), 10, 0);
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->num_sessions(), 10u);
  EXPECT_EQ(head->At(9).front().payload.prompt_text, file[9].front().human);

  auto cycled = Make(DatasetAt("sharegpt", kSessionsFile), Turns(""), 450, 0);
  ASSERT_NE(cycled, nullptr);
  EXPECT_EQ(cycled->num_sessions(), 450u);
  ASSERT_EQ(cycled->warnings().size(), 1u);
  EXPECT_THAT(cycled->warnings()[0], HasSubstr("has 200 conversations"));
  EXPECT_THAT(cycled->warnings()[0], HasSubstr("session i uses conversation i mod 200"));
  for (uint64_t i : {200u, 201u, 449u}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(cycled->TurnsOf(i), file[i % 200].size());
    const auto turns = cycled->At(i);
    ASSERT_EQ(turns.size(), file[i % 200].size());
    for (size_t k = 0; k < turns.size(); ++k) {
      EXPECT_EQ(turns[k].payload.prompt_text, file[i % 200][k].human);
    }
  }
}

TEST(ShareGptSessionsTest, EmptyHumanTurnsAndConversationsWithoutOneAreSkipped) {
  const fs::path path = WriteDatasetFile("sessions_mixed.json", R"([
  {"conversations": [{"from": "gpt", "value": "Hello."}]},
  {"conversations": [
      {"from": "system", "value": "Be brief."},
      {"from": "user", "value": "First question?"},
      {"from": "assistant", "value": "First answer, twenty-eight."},
      {"from": "human", "value": ""},
      {"from": "gpt", "value": "?"},
      {"from": "human", "value": "Second, no answer yet"},
      {"from": "human", "value": "Third."}]},
  {"conversations": [{"from": "human", "value": ""}]}
])");
  auto source = Make(DatasetAt("sharegpt", path), Turns(""), 1, 0);
  ASSERT_NE(source, nullptr);
  ASSERT_EQ(source->TurnsOf(0), 3u);
  const auto turns = source->At(0);
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[0].payload.prompt_text, "First question?");
  EXPECT_EQ(turns[0].payload.max_tokens, EstimateTokens("First answer, twenty-eight."));
  EXPECT_EQ(turns[1].payload.prompt_text, "Second, no answer yet");
  EXPECT_EQ(turns[1].payload.max_tokens, 128u);  // a human turn next: --random-output-len
  EXPECT_EQ(turns[2].payload.prompt_text, "Third.");
  EXPECT_EQ(turns[2].payload.max_tokens, 128u);  // the last turn: --random-output-len
  // The first conversation was skipped; the third was not reached (N = 1).
  ASSERT_EQ(source->warnings().size(), 1u);
  EXPECT_THAT(source->warnings()[0], HasSubstr("1 conversation without a non-empty human turn"));
}

TEST(ShareGptSessionsTest, AFileWithoutAHumanTurnIsAnErrorNamingIt) {
  auto source = MakeSessionSource(DatasetAt("sharegpt", kNoHumanFile), Turns(""), 5, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(StatusMessage(source.status()), HasSubstr("dataset_path " + kNoHumanFile.string()));
  EXPECT_THAT(StatusMessage(source.status()), HasSubstr("no conversation with a human turn"));

  auto missing =
      MakeSessionSource(DatasetAt("sharegpt", "/nonexistent/sessions.json"), Turns(""), 5, 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(StatusMessage(missing.status()),
              HasSubstr("dataset_path = \"/nonexistent/sessions.json\": no such file"));
}

TEST(ShareGptSessionsTest, SessionTurnsAndOtherDatasetsAreRefused) {
  auto turns = MakeSessionSource(DatasetAt("sharegpt", kSessionsFile), Turns("3"), 5, 0);
  ASSERT_FALSE(turns.ok());
  EXPECT_THAT(StatusMessage(turns.status()), HasSubstr("session_turns = \"3\""));
  for (const char* name : {"jsonl", "mooncake"}) {
    auto other = MakeSessionSource(DatasetAt(name, kSessionsFile), Turns(""), 5, 0);
    ASSERT_FALSE(other.ok()) << name;
    EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(StatusMessage(other.status()), HasSubstr("--dataset-name"));
    EXPECT_THAT(StatusMessage(other.status()), HasSubstr(name));
  }
}

// ---------------------------------------------------------------- synthetic

TEST(SyntheticSessionsTest, FixedTurnsAndTheDefaultOfThree) {
  auto fixed = Make(Synthetic(), Turns("4"), 50, 1);
  ASSERT_NE(fixed, nullptr);
  EXPECT_EQ(fixed->name(), "synthetic");
  EXPECT_EQ(fixed->num_sessions(), 50u);
  std::set<uint64_t> seeds;
  for (uint64_t i = 0; i < 50; ++i) {
    EXPECT_EQ(fixed->TurnsOf(i), 4u);
    const auto turns = fixed->At(i);
    ASSERT_EQ(turns.size(), 4u);
    for (uint32_t k = 0; k < 4; ++k) {
      const Payload& p = turns[k].payload;
      EXPECT_EQ(p.input_tokens, 100u);  // random_len_dist fixed
      EXPECT_EQ(p.max_tokens, 50u);
      EXPECT_TRUE(p.prompt_text.empty());
      EXPECT_EQ(p.prompt_seed, PromptSeed(1, SessionTurnIndex(i, k)));
      seeds.insert(p.prompt_seed);
    }
  }
  EXPECT_EQ(seeds.size(), 200u);  // a prompt seed of its own for every turn
  auto default_turns = Make(Synthetic(), Turns(""), 5, 1);
  ASSERT_NE(default_turns, nullptr);
  EXPECT_EQ(default_turns->TurnsOf(3), 3u);
  EXPECT_EQ(default_turns->At(3).size(), 3u);
}

TEST(SyntheticSessionsTest, MinMaxTurnsStayInRangeAndReachBothEnds) {
  auto source = Make(Synthetic(), Turns("2-5"), 2000, 3);
  ASSERT_NE(source, nullptr);
  std::map<uint32_t, int> seen;
  for (uint64_t i = 0; i < 2000; ++i) {
    const uint32_t n = source->TurnsOf(i);
    ASSERT_GE(n, 2u);
    ASSERT_LE(n, 5u);
    ++seen[n];
    if (i % 100 == 0) {
      EXPECT_EQ(source->At(i).size(), n);
    }
  }
  ASSERT_EQ(seen.size(), 4u);
  // Uniform: each count about 500 of 2000.
  for (const auto& [n, count] : seen) EXPECT_NEAR(count, 500, 100) << n;
}

TEST(SyntheticSessionsTest, LengthsAreDrawnAsSingleRequestsAre) {
  surge::v1::DatasetConfig d = Synthetic(100, 40);
  d.set_random_len_dist("uniform");
  d.set_random_range_ratio(0.5);
  auto source = Make(d, Turns("10"), 500, 5);
  ASSERT_NE(source, nullptr);
  double input_sum = 0, output_sum = 0;
  std::set<uint32_t> inputs;
  for (uint64_t i = 0; i < 500; ++i) {
    for (const SessionTurnPayload& t : source->At(i)) {
      ASSERT_GE(t.payload.input_tokens, 50u);
      ASSERT_LE(t.payload.input_tokens, 150u);
      ASSERT_GE(t.payload.max_tokens, 20u);
      ASSERT_LE(t.payload.max_tokens, 60u);
      input_sum += t.payload.input_tokens;
      output_sum += t.payload.max_tokens;
      inputs.insert(t.payload.input_tokens);
    }
  }
  EXPECT_NEAR(input_sum / 5000, 100, 2);
  EXPECT_NEAR(output_sum / 5000, 40, 1);
  EXPECT_EQ(inputs.size(), 101u);  // every length of 50..150 drawn
}

// Every field the worker uses, of every turn.
void ExpectSameTurns(const std::vector<SessionTurnPayload>& a,
                     const std::vector<SessionTurnPayload>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].payload.input_tokens, b[k].payload.input_tokens) << k;
    EXPECT_EQ(a[k].payload.max_tokens, b[k].payload.max_tokens) << k;
    EXPECT_EQ(a[k].payload.prompt_seed, b[k].payload.prompt_seed) << k;
    EXPECT_EQ(a[k].payload.prompt_text, b[k].payload.prompt_text) << k;
    EXPECT_EQ(a[k].think_ns, b[k].think_ns) << k;
  }
}

surge::v1::SessionConfig DrawnSessions(const std::string& turns) {
  surge::v1::SessionConfig s = Turns(turns);
  s.set_think_time_dist("exponential");
  s.set_think_time_mean_s(2);
  return s;
}

TEST(SyntheticSessionsTest, DeterministicPerSessionAndIndependentOfTheOthers) {
  surge::v1::DatasetConfig d = Synthetic();
  d.set_random_len_dist("gaussian");
  d.set_random_len_stddev(30);
  auto a = Make(d, DrawnSessions("1-8"), 1000, 11);
  auto b = Make(d, DrawnSessions("1-8"), 1000, 11);
  auto shorter = Make(d, DrawnSessions("1-8"), 100, 11);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(shorter, nullptr);
  for (uint64_t i : {0u, 1u, 57u, 99u}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a->TurnsOf(i), b->TurnsOf(i));
    ExpectSameTurns(a->At(i), b->At(i));
    ExpectSameTurns(a->At(i), a->At(i));  // At again: the same
    ExpectSameTurns(a->At(i), shorter->At(i));
  }
  // Out of order, from the same source: the same as in order.
  const auto late = a->At(999);
  ExpectSameTurns(late, b->At(999));
}

TEST(SyntheticSessionsTest, DifferentSeedsDiffer) {
  surge::v1::DatasetConfig d = Synthetic();
  d.set_random_len_dist("uniform");
  d.set_random_range_ratio(0.9);
  auto one = Make(d, DrawnSessions("1-8"), 50, 1);
  auto two = Make(d, DrawnSessions("1-8"), 50, 2);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  int same_counts = 0, same_first_lengths = 0, same_first_think = 0;
  for (uint64_t i = 0; i < 50; ++i) {
    same_counts += one->TurnsOf(i) == two->TurnsOf(i);
    const auto x = one->At(i), y = two->At(i);
    same_first_lengths += x[0].payload.input_tokens == y[0].payload.input_tokens;
    EXPECT_NE(x[0].payload.prompt_seed, y[0].payload.prompt_seed);
    if (x.size() > 1 && y.size() > 1) same_first_think += x[1].think_ns == y[1].think_ns;
  }
  // By chance 1/8 of the counts and about 1/181 of the lengths agree.
  EXPECT_LT(same_counts, 20);
  EXPECT_LT(same_first_lengths, 5);
  EXPECT_EQ(same_first_think, 0);
  // Sessions of one seed differ from each other too.
  std::set<uint32_t> first_lengths;
  for (uint64_t i = 0; i < 50; ++i) first_lengths.insert(one->At(i)[0].payload.input_tokens);
  EXPECT_GT(first_lengths.size(), 30u);
}

// ---------------------------------------------------------------- think times

// The think times of turns 1.. of `sessions` sessions, s; turn 0's is 0.
std::vector<double> ThinkTimesS(const SessionSource& source, uint64_t sessions) {
  std::vector<double> xs;
  for (uint64_t i = 0; i < sessions; ++i) {
    const auto turns = source.At(i);
    EXPECT_EQ(turns[0].think_ns, 0) << i;
    for (size_t k = 1; k < turns.size(); ++k) xs.push_back(turns[k].think_ns / 1e9);
  }
  return xs;
}

TEST(ThinkTimesTest, FixedIsExactAndTurnZeroWaitsNothing) {
  surge::v1::SessionConfig s = Turns("5");
  s.set_think_time_s(1.5);
  auto fixed = Make(Synthetic(), s, 20, 0);
  ASSERT_NE(fixed, nullptr);
  for (uint64_t i = 0; i < 20; ++i) {
    const auto turns = fixed->At(i);
    EXPECT_EQ(turns[0].think_ns, 0);
    for (size_t k = 1; k < turns.size(); ++k) EXPECT_EQ(turns[k].think_ns, 1'500'000'000);
  }
  surge::v1::SessionConfig dist = Turns("3");
  dist.set_think_time_dist("fixed");
  dist.set_think_time_mean_s(0.25);
  auto fixed_dist = Make(Synthetic(), dist, 5, 0);
  ASSERT_NE(fixed_dist, nullptr);
  const auto turns = fixed_dist->At(4);
  EXPECT_EQ(turns[0].think_ns, 0);
  EXPECT_EQ(turns[1].think_ns, 250'000'000);
  EXPECT_EQ(turns[2].think_ns, 250'000'000);
  // Nothing given: no think time.
  auto none = Make(Synthetic(), Turns("3"), 5, 0);
  ASSERT_NE(none, nullptr);
  for (const auto& t : none->At(2)) EXPECT_EQ(t.think_ns, 0);
  // The same for sharegpt sessions.
  surge::v1::SessionConfig file_config = Turns("");
  file_config.set_think_time_s(3);
  auto file = Make(DatasetAt("sharegpt", kSessionsFile), file_config, 3, 0);
  ASSERT_NE(file, nullptr);
  const auto file_turns = file->At(1);
  ASSERT_GE(file_turns.size(), 2u);
  EXPECT_EQ(file_turns[0].think_ns, 0);
  EXPECT_EQ(file_turns[1].think_ns, 3'000'000'000);
}

TEST(ThinkTimesTest, ExponentialHasItsMeanAndDistribution) {
  // 200 sessions of 101 turns: 20,000 think times.
  auto source = Make(Synthetic(), DrawnSessions("101"), 200, 42);
  ASSERT_NE(source, nullptr);
  const std::vector<double> xs = ThinkTimesS(*source, 200);
  ASSERT_EQ(xs.size(), 20000u);
  double sum = 0;
  for (double x : xs) sum += x;
  // Mean 2 s; its standard error is 2/√20000 ≈ 0.014 s.
  EXPECT_NEAR(sum / xs.size(), 2.0, 0.08);
  const boost::math::exponential_distribution<double> exponential(0.5);
  const double d = KsStatistic(xs, [&](double x) { return boost::math::cdf(exponential, x); });
  EXPECT_LT(std::sqrt(static_cast<double>(xs.size())) * d, kKsCritical);
}

TEST(ThinkTimesTest, GammaHasItsMeanShapeAndDistribution) {
  surge::v1::SessionConfig s = Turns("101");
  s.set_think_time_dist("gamma");
  s.set_think_time_mean_s(3);
  s.set_think_time_burstiness(0.5);
  auto source = Make(Synthetic(), s, 200, 43);
  ASSERT_NE(source, nullptr);
  const std::vector<double> xs = ThinkTimesS(*source, 200);
  ASSERT_EQ(xs.size(), 20000u);
  double sum = 0, sq = 0;
  for (double x : xs) {
    sum += x;
    sq += x * x;
  }
  const double mean = sum / xs.size();
  // Mean 3 s, variance mean²/shape = 18 s²; the mean's standard error ≈ 0.03 s.
  EXPECT_NEAR(mean, 3.0, 0.15);
  EXPECT_NEAR(sq / xs.size() - mean * mean, 18.0, 2.5);
  const boost::math::gamma_distribution<double> gamma(0.5, 6.0);
  const double d = KsStatistic(xs, [&](double x) { return boost::math::cdf(gamma, x); });
  EXPECT_LT(std::sqrt(static_cast<double>(xs.size())) * d, kKsCritical);
  // Shape 1 by default: the exponential's coefficient of variation, 1.
  s.clear_think_time_burstiness();
  auto shape_one = Make(Synthetic(), s, 200, 43);
  ASSERT_NE(shape_one, nullptr);
  const std::vector<double> ys = ThinkTimesS(*shape_one, 200);
  const boost::math::exponential_distribution<double> exponential(1.0 / 3);
  const double d1 = KsStatistic(ys, [&](double x) { return boost::math::cdf(exponential, x); });
  EXPECT_LT(std::sqrt(static_cast<double>(ys.size())) * d1, kKsCritical);
}

TEST(ThinkTimesTest, ThinkTimesDoNotChangeTheLengths) {
  surge::v1::DatasetConfig d = Synthetic();
  d.set_random_len_dist("uniform");
  d.set_random_range_ratio(0.5);
  auto plain = Make(d, Turns("4"), 10, 9);
  auto thinking = Make(d, DrawnSessions("4"), 10, 9);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(thinking, nullptr);
  for (uint64_t i = 0; i < 10; ++i) {
    const auto a = plain->At(i), b = thinking->At(i);
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].payload.input_tokens, b[k].payload.input_tokens);
      EXPECT_EQ(a[k].payload.max_tokens, b[k].payload.max_tokens);
    }
  }
}

// ---------------------------------------------------------------- session_turns

TEST(SessionTurnsTest, ParsesNAndMinMaxWithinOneToAThousand) {
  for (const auto& [text, lo, hi] :
       std::vector<std::tuple<std::string, uint32_t, uint32_t>>{{"", 3, 3},
                                                                {"1", 1, 1},
                                                                {"7", 7, 7},
                                                                {"1000", 1000, 1000},
                                                                {"2-6", 2, 6},
                                                                {"5-5", 5, 5},
                                                                {"1-1000", 1, 1000}}) {
    auto range = ParseSessionTurns(text);
    ASSERT_TRUE(range.ok()) << text << ": " << range.status();
    EXPECT_EQ(range->min_turns, lo) << text;
    EXPECT_EQ(range->max_turns, hi) << text;
  }
  for (const char* bad : {"0", "1001", "0-3", "5-2", "2-1001", "a", "2-", "-2", "+3", " 3", "3 ",
                          "1-2-3", "2.5", "99999999999"}) {
    auto range = ParseSessionTurns(bad);
    ASSERT_FALSE(range.ok()) << bad;
    EXPECT_THAT(StatusMessage(range.status()), HasSubstr("1 <= MIN <= MAX <= 1000")) << bad;
  }
  auto source = MakeSessionSource(Synthetic(), Turns("0-3"), 5, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(StatusMessage(source.status()), HasSubstr("session_turns = \"0-3\": must be N or"));
  EXPECT_THAT(StatusMessage(source.status()), HasSubstr("(flag --session-turns)"));
}

}  // namespace
}  // namespace surge::coordinator
