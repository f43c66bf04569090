// A SentencePiece model read from a `.model` file (libsentencepiece, loaded
// through surge's module: common/sentencepiece_module.h says why): the
// offline token counter behind `--tokenizer FILE.model` and the built-in
// server's `--tokenizer-model`. Thread-safe after Load (encoding only reads
// the model).
#ifndef SURGE_COMMON_SENTENCEPIECE_MODEL_H_
#define SURGE_COMMON_SENTENCEPIECE_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace surge {

struct SentencePieceApi;

class SentencePieceModel {
 public:
  // Reads the model at `path`. `field` names the option the path came from
  // (e.g. "tokenizer"), for the error. Errors: INVALID_ARGUMENT naming the
  // field and the path when the file is missing or is not a SentencePiece
  // model; FAILED_PRECONDITION when surge's SentencePiece module cannot be
  // loaded (saying where it was looked for).
  static absl::StatusOr<std::unique_ptr<SentencePieceModel>> Load(const std::string& path,
                                                                 std::string_view field);
  ~SentencePieceModel();
  SentencePieceModel(const SentencePieceModel&) = delete;
  SentencePieceModel& operator=(const SentencePieceModel&) = delete;

  // The piece ids of `text`, in order (no BOS/EOS).
  std::vector<int> Encode(std::string_view text) const;
  // Encode(text).size().
  uint32_t Count(std::string_view text) const;
  // Size of the model's vocabulary.
  int VocabularySize() const;

 private:
  SentencePieceModel(const SentencePieceApi* api, void* model) : api_(api), model_(model) {}
  const SentencePieceApi* api_;
  void* model_;
};

}  // namespace surge

#endif  // SURGE_COMMON_SENTENCEPIECE_MODEL_H_
