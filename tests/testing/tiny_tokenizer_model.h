// A tiny SentencePiece model trained on the built-in corpus with Debian's
// spm_train (package sentencepiece), for the token-count tests: 300 pieces,
// unigram, in about 0.1 s. Needs SURGE_SOURCE_DIR (every surge_cc_test has it).
#ifndef SURGE_TESTS_TESTING_TINY_TOKENIZER_MODEL_H_
#define SURGE_TESTS_TESTING_TINY_TOKENIZER_MODEL_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/testing/temp_dir.h"

namespace surge::testing {

// Trains the model into FreshDir(dir_name + "_" + this process's id) and
// returns the .model file's path, or an empty path when spm_train failed
// (the caller asserts). The process id keeps two tests of one binary that
// ctest runs at the same time out of each other's folder.
inline std::filesystem::path TrainTinyTokenizerModel(const std::string& dir_name) {
  const std::filesystem::path dir = FreshDir(dir_name + "_" + std::to_string(getpid()));
  const std::filesystem::path prefix = dir / "tiny";
  const std::string command = std::string("spm_train --input=") + SURGE_SOURCE_DIR +
                              "/common/corpus/public_domain.txt --model_prefix=" + prefix.string() +
                              " --vocab_size=300 --model_type=unigram"
                              " --character_coverage=1.0 --minloglevel=2 > " +
                              (dir / "spm_train.log").string() + " 2>&1";
  if (std::system(command.c_str()) != 0) return {};
  std::filesystem::path model = prefix;
  model += ".model";
  return std::filesystem::exists(model) ? model : std::filesystem::path();
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_TINY_TOKENIZER_MODEL_H_
