// Folders of the test's own under GoogleTest's temporary directory.
#ifndef SURGE_TESTS_TESTING_TEMP_DIR_H_
#define SURGE_TESTS_TESTING_TEMP_DIR_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace surge::testing {

// TempDir()/name, removed if it exists and not made again: a folder the
// code under test must make (or must not).
inline std::filesystem::path AbsentDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  return dir;
}

// TempDir()/name, emptied (removed and made again). Throws
// std::filesystem::filesystem_error when it cannot be made.
inline std::filesystem::path FreshDir(const std::string& name) {
  const std::filesystem::path dir = AbsentDir(name);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_TEMP_DIR_H_
