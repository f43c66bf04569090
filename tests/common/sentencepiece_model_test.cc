// SentencePiece models read from .model files: a trained one loads and
// counts; a missing file or one that is not a model is an error naming the
// field.
#include "common/sentencepiece_model.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/tiny_tokenizer_model.h"

namespace surge {
namespace {

TEST(SentencePieceModelTest, TrainedModelEncodesDeterministically) {
  const std::filesystem::path path = testing::TrainTinyTokenizerModel("spm_model_ok");
  ASSERT_FALSE(path.empty()) << "spm_train failed";
  absl::StatusOr<std::unique_ptr<SentencePieceModel>> model =
      SentencePieceModel::Load(path.string(), "tokenizer");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string text = "It was the best of times, it was the worst of times.";
  const std::vector<int> ids = (*model)->Encode(text);
  EXPECT_FALSE(ids.empty());
  EXPECT_EQ(ids, (*model)->Encode(text));
  EXPECT_EQ((*model)->Count(text), ids.size());
  EXPECT_EQ((*model)->Count(""), 0u);
  EXPECT_EQ((*model)->VocabularySize(), 300);
}

TEST(SentencePieceModelTest, MissingFileNamesTheField) {
  absl::StatusOr<std::unique_ptr<SentencePieceModel>> model =
      SentencePieceModel::Load("/nonexistent/x.model", "tokenizer");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("tokenizer"), std::string::npos);
  EXPECT_NE(model.status().message().find("/nonexistent/x.model"), std::string::npos);
}

TEST(SentencePieceModelTest, FileThatIsNotAModelNamesTheField) {
  const std::filesystem::path dir = testing::FreshDir("spm_model_bad");
  const std::filesystem::path path = dir / "not.model";
  std::ofstream(path) << "this is plain text, not a protobuf model\n";
  absl::StatusOr<std::unique_ptr<SentencePieceModel>> model =
      SentencePieceModel::Load(path.string(), "tokenizer");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("tokenizer"), std::string::npos);
  EXPECT_NE(model.status().message().find("not a SentencePiece model"), std::string::npos);
}

}  // namespace
}  // namespace surge
