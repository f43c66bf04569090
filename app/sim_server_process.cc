#include "app/sim_server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/config/option_table.h"

extern char** environ;

namespace surge::app {

using surge::v1::SimServerConfig;

SimServerConfig BuiltInServerConfig(const SimServerConfig& run_sim) {
  SimServerConfig config = run_sim;
  // The listen options are no keys of a run: take them from the defaults.
  SimServerConfig defaults = coordinator::WithDefaults<SimServerConfig>();
  std::vector<const google::protobuf::FieldDescriptor*> listen;
  const auto* descriptor = SimServerConfig::descriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor->field(i);
    if (coordinator::SpecOf(field).root_only()) listen.push_back(field);
  }
  config.GetReflection()->SwapFields(&config, &defaults, listen);
  config.set_port(0);
  return config;
}

std::string BuiltInServerTiming(const SimServerConfig& sim) {
  if (sim.max_num_seqs() == 0) {
    return absl::StrCat("TTFT ", sim.ttft_ms(), " ms, ", sim.itl_ms(), " ms per token");
  }
  return absl::StrCat("queueing model: ", sim.max_num_seqs(), " sequences, steps of ",
                      sim.decode_ms_base(), " ms + ", sim.decode_ms_per_seq(),
                      " ms per sequence + ", sim.prefill_ms_per_token(), " ms per prompt token");
}

std::vector<std::string> SimServerArgs(const SimServerConfig& config, pid_t parent_pid) {
  std::vector<std::string> args = {"sim-server"};
  const std::vector<std::string> flags =
      coordinator::OptionTable::For(SimServerConfig::descriptor()).FlagArgs(config);
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--parent-pid", absl::StrCat(parent_pid)});
  return args;
}

uint16_t PortFromListeningLine(const std::string& line) {
  static constexpr char kPrefix[] = "surge sim-server listening on ";
  if (line.rfind(kPrefix, 0) != 0) return 0;
  const size_t space = line.find(' ', sizeof(kPrefix) - 1);
  const std::string url = line.substr(sizeof(kPrefix) - 1, space - (sizeof(kPrefix) - 1));
  const size_t colon = url.rfind(':');
  if (colon == std::string::npos) return 0;
  uint32_t port = 0;
  if (!absl::SimpleAtoi(url.substr(colon + 1), &port) || port == 0 || port > 65535) return 0;
  return static_cast<uint16_t>(port);
}

absl::StatusOr<std::unique_ptr<SimServerProcess>> SimServerProcess::Start(
    Clock& clock, const std::string& executable, const SimServerConfig& config,
    std::chrono::milliseconds start_timeout) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("built-in server: pipe: ", std::strerror(errno)));
  }
  std::vector<std::string> args = SimServerArgs(config, getpid());
  args.insert(args.begin(), executable);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, executable.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return absl::InternalError(absl::StrCat("cannot start the built-in server (", executable,
                                            " sim-server): ", std::strerror(rc)));
  }
  auto process =
      std::unique_ptr<SimServerProcess>(new SimServerProcess(clock, pid, pipe_fds[0], 0));
  // The first line says where it listens.
  std::string line;
  const Clock::TimePoint deadline = clock.Now() + start_timeout;
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Now());
    if (left.count() <= 0) {
      return absl::UnavailableError(absl::StrCat("the built-in server (pid ", pid,
                                                 ") did not start listening within ",
                                                 start_timeout.count(), " ms"));
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[256];
    const ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int status = 0;
      const pid_t r = waitpid(pid, &status, 0);
      process->stopped_ = true;
      return absl::UnavailableError(absl::StrCat(
          "the built-in server exited before listening",
          r == pid && WIFEXITED(status) ? absl::StrCat(" (exit code ", WEXITSTATUS(status), ")")
                                        : std::string(),
          "; its message is above"));
    }
    line.append(buf, static_cast<size_t>(n));
  }
  process->port_ = PortFromListeningLine(line.substr(0, line.find('\n')));
  if (process->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("the built-in server said \"",
                                               line.substr(0, line.find('\n')),
                                               "\", not where it listens"));
  }
  return process;
}

absl::Status SimServerProcess::KeepOnCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < online && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  if (CPU_COUNT(&set) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("none of the CPUs given exists (CPUs 0..", online - 1, ")"));
  }
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid_, "/task"), ec)) {
    pid_t tid = 0;
    if (!absl::SimpleAtoi(task.path().filename().string(), &tid)) continue;
    if (sched_setaffinity(tid, sizeof(set), &set) != 0) {
      return absl::InternalError(absl::StrCat("sched_setaffinity on the built-in server's thread ",
                                              tid, ": ", std::strerror(errno)));
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("/proc/", pid_, "/task: ", ec.message()));
  return absl::OkStatus();
}

SimServerProcess::~SimServerProcess() {
  Stop();
  close(stdout_fd_);
}

void SimServerProcess::Stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  kill(pid_, SIGTERM);
  const Clock::TimePoint deadline = clock_.Now() + grace;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) return;
    if (clock_.Now() >= deadline) break;
    clock_.SleepUntilCoarse(clock_.Now() + std::chrono::milliseconds(5));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
}

}  // namespace surge::app
