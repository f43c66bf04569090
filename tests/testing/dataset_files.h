// Dataset files written by tests, and the dataset configuration that reads
// them.
#ifndef SURGE_TESTS_TESTING_DATASET_FILES_H_
#define SURGE_TESTS_TESTING_DATASET_FILES_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "surge/v1/config.pb.h"

namespace surge::testing {

// Writes `text` to `name` in this process's folder under the test temp dir
// and returns the file's path.
inline std::filesystem::path WriteDatasetFile(const std::string& name, const std::string& text) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("dataset_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / name;
  std::ofstream(path) << text;
  return path;
}

// The dataset `name` read from `path`, answers of 128 tokens.
inline surge::v1::DatasetConfig DatasetAt(const std::string& name,
                                          const std::filesystem::path& path) {
  surge::v1::DatasetConfig d;
  d.set_dataset_name(name);
  d.set_dataset_path(path.string());
  d.set_random_output_len(128);
  return d;
}

// The message of `s`, as a string for matchers.
inline std::string StatusMessage(const absl::Status& s) { return std::string(s.message()); }

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_DATASET_FILES_H_
