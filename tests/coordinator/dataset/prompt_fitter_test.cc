// Prompt fitting against real counters: the built-in server's rule (with
// its chat template) and a SentencePiece model trained on the corpus. Every
// prompt must come out at exactly its asked count, within the call bound.
#include "coordinator/dataset/prompt_fitter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/prompt_builder.h"
#include "common/sentencepiece_model.h"
#include "coordinator/dataset/fitted_payloads.h"
#include "simserver/sim_tokenizer.h"
#include "tests/testing/tiny_tokenizer_model.h"

namespace surge::coordinator {
namespace {

using ::testing::StartsWith;

// The built-in server's count of a chat request with one user message.
class SimChatCounter final : public TextTokenCounter {
 public:
  absl::StatusOr<uint32_t> Count(std::string_view text) override {
    ++calls;
    return tokenizer_.Count(text) + simserver::kChatTokensPerMessage +
           simserver::kChatGenerationTokens;
  }
  uint64_t calls = 0;

 private:
  simserver::SimTokenizer tokenizer_;
};

class SentencePieceCounter final : public TextTokenCounter {
 public:
  explicit SentencePieceCounter(std::unique_ptr<SentencePieceModel> model)
      : model_(std::move(model)) {}
  absl::StatusOr<uint32_t> Count(std::string_view text) override { return model_->Count(text); }

 private:
  std::unique_ptr<SentencePieceModel> model_;
};

std::unique_ptr<SentencePieceCounter> TinyModelCounter() {
  const auto path = surge::testing::TrainTinyTokenizerModel("prompt_fitter_test");
  if (path.empty()) return nullptr;
  auto model = SentencePieceModel::Load(path.string(), "tokenizer");
  if (!model.ok()) return nullptr;
  return std::make_unique<SentencePieceCounter>(*std::move(model));
}

class VectorSource final : public PayloadSource {
 public:
  explicit VectorSource(std::vector<Payload> rows) : rows_(std::move(rows)) {}
  Payload At(uint64_t index) const override { return rows_[index]; }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 private:
  std::vector<Payload> rows_;
  std::string name_ = "synthetic";
  std::vector<std::string> warnings_;
};

TEST(PromptFitterTest, CalibratesTheTemplateTheWordRateAndAOneTokenFiller) {
  SimChatCounter counter;
  auto fitter = PromptFitter::Create(&counter);
  ASSERT_TRUE(fitter.ok()) << fitter.status();
  EXPECT_EQ(fitter->empty_prompt_tokens(), 4u);
  EXPECT_GT(fitter->tokens_per_word(), 1.0);
  EXPECT_LT(fitter->tokens_per_word(), 2.0);
  EXPECT_EQ(fitter->filler(), "a");
  // The empty prompt, three windows, the filler's base and its probe.
  EXPECT_EQ(fitter->stats().calibration_calls, 6u);
}

TEST(PromptFitterTest, EveryChatLengthIsExactWithinTheCallBound) {
  SimChatCounter counter;
  auto fitter = PromptFitter::Create(&counter);
  ASSERT_TRUE(fitter.ok());
  simserver::SimTokenizer rule;
  for (uint32_t tokens = 5; tokens <= 700; ++tokens) {
    const uint64_t before = counter.calls;
    auto fitted = fitter->FitPrompt("", 0, tokens * 7919ULL, tokens);
    ASSERT_TRUE(fitted.ok());
    ASSERT_TRUE(fitted->exact) << tokens;
    ASSERT_EQ(rule.Count(fitted->text) + 4, tokens);
    ASSERT_LE(counter.calls - before, static_cast<uint64_t>(kMaxCallsPerText)) << tokens;
  }
  const FitStats& s = fitter->stats();
  EXPECT_EQ(s.prompts, 696u);
  EXPECT_EQ(s.inexact_prompts, 0u);
  const double per_prompt =
      static_cast<double>(s.calls - s.calibration_calls) / static_cast<double>(s.prompts);
  EXPECT_LT(per_prompt, 3.5);
}

TEST(PromptFitterTest, ALengthBelowTheTemplateCannotBeMetAndSaysSo) {
  SimChatCounter counter;
  auto fitter = PromptFitter::Create(&counter);
  ASSERT_TRUE(fitter.ok());
  auto fitted = fitter->FitPrompt("", 0, 0, 3);
  ASSERT_TRUE(fitted.ok());
  EXPECT_FALSE(fitted->exact);
  EXPECT_EQ(fitted->text, "");
  EXPECT_EQ(fitter->stats().inexact_prompts, 1u);
}

TEST(PromptFitterTest, SentencePieceLengthsAreExactWithinTheCallBound) {
  auto counter = TinyModelCounter();
  ASSERT_NE(counter, nullptr) << "spm_train failed";
  auto fitter = PromptFitter::Create(counter.get());
  ASSERT_TRUE(fitter.ok());
  EXPECT_EQ(fitter->empty_prompt_tokens(), 0u);
  EXPECT_FALSE(fitter->filler().empty());
  for (uint32_t tokens = 1; tokens <= 600; tokens += 3) {
    auto fitted = fitter->FitPrompt("", 0, tokens * 104729ULL, tokens);
    ASSERT_TRUE(fitted.ok());
    ASSERT_TRUE(fitted->exact) << tokens;
    ASSERT_EQ(*counter->Count(fitted->text), tokens);
  }
  EXPECT_LE(fitter->stats().max_calls_per_prompt, static_cast<uint64_t>(kMaxCallsPerText));
}

TEST(FittedPayloadsTest, APrefixIsFittedOnceAndByteIdenticalAndTheWholePromptIsExact) {
  auto counter = TinyModelCounter();
  ASSERT_NE(counter, nullptr);
  auto fitter = PromptFitter::Create(counter.get());
  ASSERT_TRUE(fitter.ok());
  std::vector<Payload> rows;
  for (uint64_t i = 0; i < 20; ++i) {
    Payload p(150 + static_cast<uint32_t>(i) * 7, 10, 1000 + i * 31);
    p.prefix_tokens = 100;
    p.prefix_seed = i % 2 == 0 ? 5 : 900;  // two groups
    rows.push_back(p);
  }
  FitReport report;
  auto source = FitPayloads(std::make_unique<VectorSource>(rows), rows.size(), *fitter,
                            surge::v1::TOKEN_COUNTER_SENTENCEPIECE, &report);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ(report.fitted_prompts, 20u);
  EXPECT_EQ(report.shared_texts, 2u);
  EXPECT_EQ(report.stats.inexact_prompts, 0u);
  // The group's prefix: its corpus words fitted to exactly 100 tokens (the
  // fitting is deterministic), byte-identical at the start of every prompt.
  const FittedText prefix_a = *fitter->FitText(5, 100);
  const FittedText prefix_b = *fitter->FitText(900, 100);
  ASSERT_TRUE(prefix_a.exact && prefix_b.exact);
  EXPECT_EQ(*counter->Count(prefix_a.text), 100u);
  for (uint64_t i = 0; i < rows.size(); ++i) {
    const Payload p = (*source)->At(i);
    ASSERT_EQ(*counter->Count(p.prompt_text), rows[i].input_tokens) << i;
    EXPECT_EQ((*source)->Sizing(i).asked_input_tokens, rows[i].input_tokens);
    EXPECT_EQ((*source)->Sizing(i).counter, surge::v1::TOKEN_COUNTER_SENTENCEPIECE);
    EXPECT_EQ(p.prefix_tokens, 100u);  // the payload's own fields stay
    EXPECT_THAT(p.prompt_text, StartsWith((p.prefix_seed == 5 ? prefix_a : prefix_b).text + " "));
  }
}

TEST(FittedPayloadsTest, MooncakeBlocksAreSharedByIdAndEveryPromptIsExact) {
  SimChatCounter counter;
  auto fitter = PromptFitter::Create(&counter);
  ASSERT_TRUE(fitter.ok());
  std::vector<Payload> rows;
  Payload a(1500, 10, 11);
  a.prefix_block_ids = {0, 1, 2};
  Payload b(1100, 10, 12);
  b.prefix_block_ids = {0, 1, 3};
  Payload c(1024, 10, 13);  // exactly two blocks' worth: the template leaves a partial one
  c.prefix_block_ids = {0, 4};
  rows = {a, b, c};
  FitReport report;
  auto source = FitPayloads(std::make_unique<VectorSource>(rows), rows.size(), *fitter,
                            surge::v1::TOKEN_COUNTER_SERVER, &report);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ(report.stats.inexact_prompts, 0u);
  EXPECT_EQ(report.shared_texts, 2u);  // blocks 0 and 1 (whole in a and b; c has 0 whole)
  simserver::SimTokenizer rule;
  std::vector<std::string> texts;
  for (uint64_t i = 0; i < rows.size(); ++i) {
    texts.push_back((*source)->At(i).prompt_text);
    EXPECT_EQ(rule.Count(texts.back()) + 4, rows[i].input_tokens) << i;
  }
  // Blocks 0 and 1: the same text in a and b, block 0 in c (the fitting is
  // deterministic: fitting a block again gives its text).
  const std::string block0 = fitter->FitText(0, kPrefixBlockTokens)->text;
  const std::string block1 = fitter->FitText(104729, kPrefixBlockTokens)->text;
  EXPECT_EQ(rule.Count(block0), kPrefixBlockTokens);
  EXPECT_THAT(texts[0], StartsWith(block0 + " " + block1 + " "));
  EXPECT_THAT(texts[1], StartsWith(block0 + " " + block1 + " "));
  EXPECT_THAT(texts[2], StartsWith(block0 + " "));
  EXPECT_THAT(texts[0].substr(block0.size() + block1.size() + 2),
              StartsWith(CorpusWords(2 * 104729, 1)));
  EXPECT_LE(report.stats.max_calls_per_prompt,
            static_cast<uint64_t>(kMaxWholeRounds * (kMaxCallsPerText + 1)));
}

}  // namespace
}  // namespace surge::coordinator
