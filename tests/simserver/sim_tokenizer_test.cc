// The built-in server's token counts: the rule, the chat template and a
// SentencePiece model.
#include "simserver/sim_tokenizer.h"

#include <gtest/gtest.h>

#include <string>

#include "common/prompt_builder.h"
#include "tests/testing/tiny_tokenizer_model.h"

namespace surge::simserver {
namespace {

TEST(SimTokenizerTest, WordsAndPunctuationAreTokens) {
  const SimTokenizer tokenizer;
  EXPECT_EQ(tokenizer.Count("Hello, world!"), 4u);
  EXPECT_EQ(tokenizer.Count(""), 0u);
  EXPECT_EQ(tokenizer.Count("  \n\t "), 0u);
  EXPECT_EQ(tokenizer.Count("a b c"), 3u);
  EXPECT_EQ(tokenizer.Count("it's"), 3u);  // it ' s
}

TEST(SimTokenizerTest, LongWordsTakeOneTokenPerEightBytes) {
  const SimTokenizer tokenizer;
  EXPECT_EQ(tokenizer.Count("abcdefgh"), 1u);
  EXPECT_EQ(tokenizer.Count("abcdefghi"), 2u);
  EXPECT_EQ(tokenizer.Count("extraordinarily"), 2u);
  EXPECT_EQ(tokenizer.Count(std::string(17, 'x')), 3u);
}

TEST(SimTokenizerTest, MultiByteCharactersAreNeverCut) {
  const SimTokenizer tokenizer;
  // Five 2-byte characters: 10 bytes; the cut at byte 8 falls between
  // characters, so 2 tokens of 8 and 2 bytes.
  const std::string word = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
  EXPECT_EQ(tokenizer.Count(word), 2u);
  // Three 3-byte characters: the cut at 8 would split the third, so it
  // moves back to byte 6.
  const std::string euros = "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac";
  EXPECT_EQ(tokenizer.Count(euros), 2u);
}

TEST(SimTokenizerTest, EqualTextGivesEqualIdsAndCountMatchesTokenize) {
  const SimTokenizer tokenizer;
  const std::string text = BuildPrompt(300, 7);
  EXPECT_EQ(tokenizer.Tokenize(text), tokenizer.Tokenize(text));
  EXPECT_EQ(tokenizer.Tokenize(text).size(), tokenizer.Count(text));
  EXPECT_NE(tokenizer.Tokenize("one two"), tokenizer.Tokenize("one three"));
}

TEST(SimTokenizerTest, CountIsNotTheFourCharacterEstimate) {
  const SimTokenizer tokenizer;
  const std::string text = BuildPrompt(1024, 3);
  const uint32_t estimate = EstimateTokens(text);
  const uint32_t counted = tokenizer.Count(text);
  // The corpus averages more than 4 bytes per word, so the rule counts
  // clearly fewer tokens than the estimate.
  EXPECT_LT(counted, estimate * 9 / 10) << "estimate " << estimate << " counted " << counted;
  EXPECT_GT(counted, estimate / 2);
}

TEST(SimTokenizerTest, ChatTemplateAddsFixedTokensPerMessage) {
  const SimTokenizer tokenizer;
  const std::vector<ChatMessage> one = {{"user", "Hello, world!"}};
  EXPECT_EQ(tokenizer.TokenizeChat(one).size(), 4u + kChatTokensPerMessage + kChatGenerationTokens);
  const std::vector<ChatMessage> two = {{"user", "a"}, {"assistant", "b c"}};
  EXPECT_EQ(tokenizer.TokenizeChat(two).size(),
            3u + 2 * kChatTokensPerMessage + kChatGenerationTokens);
  // A chat prompt starts with the same ids as a longer one that shares its
  // first messages' prefix, as a prefix cache needs.
  const std::vector<uint64_t> a = tokenizer.TokenizeChat({{"user", "same words here"}});
  const std::vector<uint64_t> b = tokenizer.TokenizeChat({{"user", "same words here and more"}});
  ASSERT_GE(b.size(), 5u);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 5, b.begin()));
}

TEST(SimTokenizerTest, SentencePieceModelCountsWithItsPieces) {
  const std::filesystem::path path = surge::testing::TrainTinyTokenizerModel("sim_tokenizer_spm");
  ASSERT_FALSE(path.empty()) << "spm_train failed";
  absl::StatusOr<std::unique_ptr<SentencePieceModel>> model =
      SentencePieceModel::Load(path.string(), "tokenizer_model");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::shared_ptr<const SentencePieceModel> shared = std::move(*model);
  const SimTokenizer tokenizer(shared);
  EXPECT_STREQ(tokenizer.name(), "sentencepiece");
  const std::string text = BuildPrompt(200, 11);
  EXPECT_EQ(tokenizer.Count(text), shared->Count(text));
  EXPECT_EQ(tokenizer.Tokenize(text).size(), shared->Encode(text).size());
  EXPECT_NE(tokenizer.Count(text), SimTokenizer().Count(text));
  EXPECT_GT(shared->VocabularySize(), 100);
}

}  // namespace
}  // namespace surge::simserver
