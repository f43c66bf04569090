// Running the real `surge` binary from integration tests: bounded by
// `timeout -s KILL`, output captured, and the results folder it printed.
#ifndef SURGE_TESTS_INTEGRATION_SURGE_PROCESS_H_
#define SURGE_TESTS_INTEGRATION_SURGE_PROCESS_H_

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>

namespace surge::testing {

inline const std::string kSurge = std::string(SURGE_BINARY_DIR) + "/surge";

struct Result {
  int exit_code;
  std::string output;
};

// Runs `surge <args>` through the shell, killed after `timeout_s`; returns
// its exit code and combined stdout/stderr.
inline Result RunSurge(const std::string& args, int timeout_s = 180) {
  const std::string cmd =
      "timeout -s KILL " + std::to_string(timeout_s) + " " + kSurge + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string output;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) output.append(buf.data(), n);
  const int status = pclose(pipe);
  return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// An empty path under the test temp dir (removed if it exists; not created).
inline std::filesystem::path FreshDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  return dir;
}

// The folder on the last "results:" line of surge's output.
inline std::filesystem::path ResultsFolder(const std::string& output) {
  std::string last;
  const std::regex re("results: (\\S+)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), re);
       it != std::sregex_iterator(); ++it) {
    last = (*it)[1];
  }
  return last;
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_INTEGRATION_SURGE_PROCESS_H_
