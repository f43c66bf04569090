#include "coordinator/dispatch/worker_pool.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace surge::coordinator {

LocalProcessPool::~LocalProcessPool() { Stop(std::chrono::milliseconds(0)); }

absl::Status LocalProcessPool::Start(int count, const std::string& endpoint) {
  const std::string parent = absl::StrCat(getpid());
  for (int k = 0; k < count; ++k) {
    std::vector<std::string> args = {executable_,      "worker",        "--connect",    endpoint,
                                     "--worker-index", absl::StrCat(k), "--parent-pid", parent};
    if (static_cast<size_t>(k) < extra_args_.size()) {
      args.insert(args.end(), extra_args_[k].begin(), extra_args_[k].end());
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, executable_.c_str(), nullptr, nullptr, argv.data(), environ);
    if (rc != 0) {
      Stop(std::chrono::milliseconds(0));
      return absl::InternalError(
          absl::StrCat("cannot start worker ", k, " (", executable_, "): ", std::strerror(rc)));
    }
    pids_.push_back(pid);
    exited_.push_back(false);
    exit_codes_.push_back(-1);
  }
  return absl::OkStatus();
}

bool LocalProcessPool::Exited(int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= pids_.size()) return false;
  if (exited_[index]) return true;
  int status = 0;
  const pid_t r = waitpid(pids_[index], &status, WNOHANG);
  if (r == pids_[index]) {
    exited_[index] = true;
    exit_codes_[index] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  } else if (r < 0 && errno == ECHILD) {
    exited_[index] = true;
  }
  return exited_[index];
}

void LocalProcessPool::Stop(std::chrono::milliseconds grace) {
  const Clock::TimePoint deadline = clock_.Now() + grace;
  auto all_exited = [this] {
    bool all = true;
    for (size_t k = 0; k < pids_.size(); ++k) all &= Exited(static_cast<int>(k));
    return all;
  };
  while (!all_exited() && clock_.Now() < deadline) {
    clock_.SleepUntilCoarse(clock_.Now() + std::chrono::milliseconds(10));
  }
  for (size_t k = 0; k < pids_.size(); ++k) {
    if (exited_[k]) continue;
    kill(pids_[k], SIGKILL);
    int status = 0;
    waitpid(pids_[k], &status, 0);
    exited_[k] = true;
  }
}

}  // namespace surge::coordinator
