// Benchmark (not a test): one worker with 10,000 streamed answers in flight
// (the target: 10,000 concurrent streams in one worker in at most 300 MB RSS).
// This process is the worker: the real SendLoop and BeastRequestSender (one
// I/O thread, prepare ahead as `surge worker` does) on RealClock(). The
// simulated server runs in a forked child (so its memory is not the
// worker's), on 127.0.0.1 only. Requests are spread evenly over --ramp_s;
// each answer streams --max_tokens tokens --itl_ms apart after --ttft_ms,
// so with streams longer than the ramp all of them overlap. Prints the peak
// in flight, whether every request completed, and the peak RSS (VmHWM in
// /proc/PID/status) of the worker and of the server. Bounded: gives up
// after --max_seconds.
//
// Usage: concurrent_streams_bench [--streams=10000] [--ramp_s=2]
//   [--max_tokens=20] [--ttft_ms=200] [--itl_ms=300] [--input_tokens=16]
//   [--max_seconds=60]
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/peak_rss.h"
#include "common/clock.h"
#include "common/fd_limit.h"
#include "coordinator/config/option_table.h"
#include "simserver/sim_server.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/record.pb.h"
#include "surge/v1/wire.pb.h"
#include "worker/http/beast_request_sender.h"
#include "worker/send_loop.h"

using surge::bench::PeakRssMb;

namespace {

struct Flags {
  double streams = 10000;
  double ramp_s = 2;
  double max_tokens = 20;
  double ttft_ms = 200;
  double itl_ms = 300;
  double input_tokens = 16;
  double max_seconds = 60;
};

bool ParseFlags(int argc, char** argv, Flags& f) {
  std::map<std::string, double*> flags = {
      {"streams", &f.streams},        {"ramp_s", &f.ramp_s}, {"max_tokens", &f.max_tokens},
      {"ttft_ms", &f.ttft_ms},        {"itl_ms", &f.itl_ms}, {"input_tokens", &f.input_tokens},
      {"max_seconds", &f.max_seconds}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    auto it = arg.rfind("--", 0) == 0 && eq != std::string::npos ? flags.find(arg.substr(2, eq - 2))
                                                                 : flags.end();
    if (it == flags.end()) {
      std::fprintf(stderr, "bad argument %s (flags: --name=value)\n", arg.c_str());
      return false;
    }
    *it->second = std::strtod(arg.c_str() + eq + 1, nullptr);
  }
  return f.streams >= 1 && f.ramp_s > 0 && f.max_seconds > 0;
}

// The server child: serves until the parent closes `stop_fd`'s other end,
// then prints its own peak RSS. Never returns.
[[noreturn]] void ServeInChild(const Flags& flags, int port_fd, int stop_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  auto options = surge::coordinator::WithDefaults<surge::v1::SimServerConfig>();
  options.set_port(0);
  options.set_ttft_ms(flags.ttft_ms);
  options.set_itl_ms(flags.itl_ms);
  auto server = surge::simserver::SimServer::Create(options);
  uint16_t port = server.ok() ? (*server)->port() : 0;
  if (server.ok()) (*server)->Start();
  (void)!write(port_fd, &port, sizeof(port));
  close(port_fd);
  char byte;
  while (read(stop_fd, &byte, 1) > 0) {
  }
  if (server.ok()) {
    (*server)->Stop();
    std::printf("server: %llu requests served, peak RSS (VmHWM) %.1f MB\n",
                static_cast<unsigned long long>((*server)->requests_served()), PeakRssMb());
  }
  std::fflush(stdout);
  _exit(server.ok() ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return 2;
  const uint64_t streams = static_cast<uint64_t>(flags.streams);
  auto limit = surge::RaiseOpenFileLimit();
  if (!limit.ok() || surge::DescriptorCapacity(limit->now) < streams + 100) {
    std::fprintf(stderr, "open-file limit %llu too low for %llu connections (ulimit -n)\n",
                 limit.ok() ? static_cast<unsigned long long>(limit->now) : 0ULL,
                 static_cast<unsigned long long>(streams));
    return 2;
  }
  // Fork before any thread exists.
  int port_pipe[2], stop_pipe[2];
  if (pipe(port_pipe) != 0 || pipe(stop_pipe) != 0) return 1;
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(port_pipe[0]);
    close(stop_pipe[1]);
    ServeInChild(flags, port_pipe[1], stop_pipe[0]);
  }
  close(port_pipe[1]);
  close(stop_pipe[0]);
  uint16_t port = 0;
  if (read(port_pipe[0], &port, sizeof(port)) != sizeof(port) || port == 0) {
    std::fprintf(stderr, "the server did not start\n");
    return 1;
  }
  const double rss_before_mb = PeakRssMb();

  surge::Clock& clock = surge::RealClock();
  surge::v1::TargetConfig target;
  target.set_base_url("http://127.0.0.1:" + std::to_string(port));
  target.set_endpoint("/v1/chat/completions");
  target.set_model("surge-sim");
  target.set_stream(true);
  target.set_request_timeout_s(flags.max_seconds);
  auto sender = surge::worker::BeastRequestSender::Create(clock, target, 1);
  if (!sender.ok()) {
    std::fprintf(stderr, "sender: %s\n", sender.status().ToString().c_str());
    return 1;
  }
  // Counts only: the records themselves are the coordinator's to keep.
  std::atomic<uint64_t> done{0}, ok{0}, tokens{0};
  surge::worker::SendLoopOptions options;
  surge::worker::SendLoop loop(clock, **sender, options, [&](surge::v1::RequestRecord r) {
    if (r.status() == surge::v1::OK) ok.fetch_add(1);
    tokens.fetch_add(r.output_tokens());
    done.fetch_add(1);
  });
  std::vector<surge::v1::Assignment> assignments;
  for (uint64_t i = 0; i < streams; ++i) {
    surge::v1::Assignment a;
    a.set_index(i);
    a.set_attempt(1);
    a.set_offset_ns(static_cast<int64_t>(flags.ramp_s * 1e9 * static_cast<double>(i) /
                                         static_cast<double>(streams)));
    a.set_input_tokens(static_cast<uint32_t>(flags.input_tokens));
    a.set_max_tokens(static_cast<uint32_t>(flags.max_tokens));
    a.set_prompt_seed(i * 7919);
    assignments.push_back(std::move(a));
  }
  const int64_t t0 = surge::ToNanos(clock.Now()) + 200'000'000;
  loop.Enqueue(std::move(assignments));
  loop.SetStart(t0);
  std::thread pacer([&loop] { loop.Run(); });

  size_t peak_inflight = 0;
  const auto give_up = surge::FromNanos(t0) + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  std::chrono::duration<double>(flags.max_seconds));
  while (done.load() < streams && clock.Now() < give_up) {
    peak_inflight = std::max(peak_inflight, (*sender)->inflight());
    clock.SleepUntilCoarse(clock.Now() + std::chrono::milliseconds(10));
  }
  const double elapsed_s = static_cast<double>(surge::ToNanos(clock.Now()) - t0) / 1e9;
  loop.Stop();
  pacer.join();
  const double worker_peak_mb = PeakRssMb();
  (*sender)->Shutdown(std::chrono::milliseconds(0));
  close(stop_pipe[1]);  // the server stops and prints its line
  int status = 0;
  waitpid(child, &status, 0);

  std::printf(
      "streams %llu over a %.1f s ramp, %g tokens each (ttft %g ms, itl %g ms: %.1f s a "
      "stream), input_tokens %g\n",
      static_cast<unsigned long long>(streams), flags.ramp_s, flags.max_tokens, flags.ttft_ms,
      flags.itl_ms, (flags.ttft_ms + (flags.max_tokens - 1) * flags.itl_ms) / 1e3,
      flags.input_tokens);
  std::printf("peak in flight %zu, completed %llu/%llu (OK %llu, %llu tokens) in %.1f s%s\n",
              peak_inflight, static_cast<unsigned long long>(done.load()),
              static_cast<unsigned long long>(streams), static_cast<unsigned long long>(ok.load()),
              static_cast<unsigned long long>(tokens.load()), elapsed_s,
              done.load() < streams ? " (gave up: --max_seconds)" : "");
  std::printf(
      "worker peak RSS (VmHWM) %.1f MB (%.1f MB before the first request; %.1f KB "
      "per stream above it)\n",
      worker_peak_mb, rss_before_mb,
      (worker_peak_mb - rss_before_mb) * 1024.0 / static_cast<double>(peak_inflight));
  return done.load() == streams && ok.load() == streams ? 0 : 1;
}
