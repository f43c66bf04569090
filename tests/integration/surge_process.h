// Running the real `surge` binary from integration tests: bounded by
// `timeout -s KILL`, output captured, and the results folder it printed.
#ifndef SURGE_TESTS_INTEGRATION_SURGE_PROCESS_H_
#define SURGE_TESTS_INTEGRATION_SURGE_PROCESS_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace surge::testing {

inline const std::string kSurge = std::string(SURGE_BINARY_DIR) + "/surge";

struct Result {
  int exit_code;
  std::string output;
};

// In a forked child: replaces the process with `surge <args>` (argv[0] is
// the binary's path); exits 127 when the exec fails.
[[noreturn]] inline void ExecSurge(std::vector<std::string> args) {
  args.insert(args.begin(), kSurge);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(kSurge.c_str(), argv.data());
  _exit(127);
}

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

// A `surge sim-server` child process and the port it printed.
struct SimServerProcess {
  pid_t pid = -1;
  std::string port;  // empty when it did not start within 5 s
};

// Starts `surge sim-server --port 0 <args>` with its stdout in `log` and
// waits up to 5 s for the "listening on ...127.0.0.1:PORT" line.
inline SimServerProcess StartSimServerProcess(const std::vector<std::string>& args,
                                              const std::filesystem::path& log) {
  SimServerProcess server;
  server.pid = fork();
  if (server.pid == 0) {
    // Goes with the test process, also when ctest kills it at its timeout.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (freopen(log.c_str(), "w", stdout) == nullptr) _exit(126);
    std::vector<std::string> all = {"sim-server", "--port", "0"};
    all.insert(all.end(), args.begin(), args.end());
    ExecSurge(std::move(all));
  }
  const std::regex listening("127\\.0\\.0\\.1:(\\d+)");
  for (int i = 0; i < 200 && server.pid > 0 && server.port.empty(); ++i) {
    usleep(25000);
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    std::smatch m;
    if (std::regex_search(s, m, listening)) server.port = m[1];
  }
  return server;
}

// Runs `surge <args>` as a child with stdout+stderr in `log`; returns its pid.
// With `netns` (a namespace file such as /proc/<pid>/ns/net), the child
// first enters that network namespace (setns, then exec: the pid is surge's
// own). The child
// dies with the test process (PR_SET_PDEATHSIG).
inline pid_t SpawnSurge(const std::vector<std::string>& args, const std::filesystem::path& log,
                        const std::string& netns = "") {
  const pid_t pid = fork();
  if (pid == 0) {
    // Goes with the test process, also when ctest kills it at its timeout.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!netns.empty()) {
      const int fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(125);
    }
    // One open file for both streams, so neither overwrites the other.
    if (freopen(log.c_str(), "w", stdout) == nullptr) _exit(126);
    if (dup2(fileno(stdout), fileno(stderr)) < 0) _exit(126);
    ExecSurge(args);
  }
  return pid;
}

// The whole text of a file ("" when missing).
inline std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Waits up to `limit_ms` for `text` to appear in the file at `path`
// (a process's log); true when it did.
inline bool WaitForText(const std::filesystem::path& path, const std::string& text,
                        int limit_ms) {
  for (int waited = 0; waited < limit_ms; waited += 50) {
    if (ReadText(path).find(text) != std::string::npos) return true;
    usleep(50000);
  }
  return ReadText(path).find(text) != std::string::npos;
}

// A `surge <args>` child this test owns (in the network namespace file
// `netns` when given): killed by its pid (SIGCONT, then SIGKILL) and reaped when the
// object goes, unless it already exited.
class SurgeProcess {
 public:
  SurgeProcess(const std::vector<std::string>& args, std::filesystem::path log,
               const std::string& netns = "")
      : log_(std::move(log)), pid_(SpawnSurge(args, log_, netns)) {}
  SurgeProcess(const SurgeProcess&) = delete;
  SurgeProcess& operator=(const SurgeProcess&) = delete;
  ~SurgeProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGCONT);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  bool Signal(int sig) const { return pid_ > 0 && !exited_ && kill(pid_, sig) == 0; }
  // The exit code, waiting at most `limit_ms`; -1 while still running;
  // -2 - the signal when a signal ended it.
  int WaitExit(int limit_ms) {
    if (exited_) return code_;
    for (int waited = 0; waited <= limit_ms; waited += 20) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -2 - WTERMSIG(status);
        return code_;
      }
      usleep(20000);
    }
    return -1;
  }
  std::string Log() const { return ReadText(log_); }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

// Stops a process this test started, by its pid (SIGINT, then reaps it).
inline void StopProcess(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
}

// Whether `server` started: forked and listening. One that was forked but
// printed no port is stopped. Use as ASSERT_TRUE(SimServerUp(server)).
inline ::testing::AssertionResult SimServerUp(const SimServerProcess& server) {
  if (server.pid <= 0) return ::testing::AssertionFailure() << "sim server was not forked";
  if (server.port.empty()) {
    StopProcess(server.pid);
    return ::testing::AssertionFailure() << "sim server did not start";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_INTEGRATION_SURGE_PROCESS_H_
