// The coordinator and worker roles through the real binary on 127.0.0.1
// (R-DIST-1): workers started before their coordinator join
// when it comes up; the run starts when --expect-workers are ready and
// every request has one record; a worker that comes after the start is told
// so and exits 0; without workers the coordinator ends at --join-timeout
// with exit 1 and sends nothing; a non-loopback --bind without CurveZMQ is a
// configuration error; with CurveZMQ keys the same run goes through; a
// coordinator SIGKILLed mid-run stops every worker within 3 s (R-DIST-7).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/run_folder_check.h"
#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A TCP port on 127.0.0.1 that was free a moment ago.
std::string FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return "";
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return std::to_string(ntohs(a.sin_port));
}

std::vector<std::string> JobFlags(const fs::path& out) {
  return {"--num-prompts",       "60", "--request-rate", "20",        "--random-input-len", "16",
          "--random-output-len", "2",  "--output-dir",   out.string()};
}

TEST(RolesTest, WorkersFirstThenCoordinatorThenALateWorker) {
  const fs::path dir = FreshDir("surge_roles");
  const std::string port = FreeLoopbackPort();
  ASSERT_FALSE(port.empty());
  const std::string endpoint = "tcp://127.0.0.1:" + port;
  // Workers first: they keep saying Hello until the coordinator is up.
  SurgeProcess w0({"worker", "--connect", endpoint, "--join-timeout", "60"}, dir / "w0.log");
  SurgeProcess w1({"worker", "--connect", endpoint, "--join-timeout", "60"}, dir / "w1.log");
  usleep(1500000);
  EXPECT_EQ(w0.WaitExit(0), -1) << w0.Log();  // still waiting
  std::vector<std::string> args = {"coordinator", "--bind", endpoint, "--expect-workers", "2"};
  for (const auto& f : JobFlags(dir / "out")) args.push_back(f);
  SurgeProcess coordinator(args, dir / "coordinator.log");
  ASSERT_TRUE(WaitForText(dir / "coordinator.log", "started 60 requests", 30000)) << coordinator.Log();
  // After the start: a third worker is told the run started without it.
  SurgeProcess late({"worker", "--connect", endpoint}, dir / "late.log");
  EXPECT_EQ(late.WaitExit(30000), 0) << late.Log();
  EXPECT_THAT(late.Log(), HasSubstr("not needed: the run has already started"));
  EXPECT_EQ(coordinator.WaitExit(60000), 0) << coordinator.Log();
  EXPECT_EQ(w0.WaitExit(30000), 0) << w0.Log();
  EXPECT_EQ(w1.WaitExit(30000), 0) << w1.Log();
  const std::string log = coordinator.Log();
  EXPECT_THAT(log, HasSubstr("waiting up to 60 s for 2 workers"));
  const fs::path folder = ResultsFolder(log);
  ASSERT_FALSE(folder.empty()) << log;
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.records, 60u);
  EXPECT_EQ(report.ok, 60u);
  EXPECT_EQ(report.summary["run"]["workers"], 2);
}

TEST(RolesTest, NoWorkersEndsAtTheJoinTimeoutWithExitOne) {
  const fs::path dir = FreshDir("surge_roles_timeout");
  std::vector<std::string> args = {
      "coordinator",    "--bind", "tcp://127.0.0.1:0", "--expect-workers", "2",
      "--join-timeout", "1.5"};
  for (const auto& f : JobFlags(dir / "out")) args.push_back(f);
  SurgeProcess coordinator(args, dir / "coordinator.log");
  EXPECT_EQ(coordinator.WaitExit(30000), 1) << coordinator.Log();
  EXPECT_THAT(coordinator.Log(), HasSubstr("only 0 of 2 workers were ready"));
}

TEST(RolesTest, BindRuleAndRoleFlagsAreConfigurationErrors) {
  const fs::path out = AbsentDir("surge_roles_flags");
  const std::string job = " --num-prompts 10 --request-rate 5 --output-dir " + out.string();
  // Reachable from the network without CurveZMQ: refused before any bind.
  Result open = RunSurge("coordinator --bind tcp://0.0.0.0:0 --expect-workers 1" + job);
  EXPECT_EQ(open.exit_code, 2) << open.output;
  EXPECT_THAT(open.output, HasSubstr("--curve-secret-key"));
  EXPECT_THAT(open.output, HasSubstr("--insecure"));
  Result none = RunSurge("coordinator --bind tcp://127.0.0.1:0 --expect-workers 0" + job);
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_THAT(none.output, HasSubstr("expect_workers = 0: must be 1 to 1024 (the workers to wait "
                                     "for) (flag --expect-workers)"));
  Result cap = RunSurge(
      "coordinator --bind tcp://127.0.0.1:0 --expect-workers 4 "
      "--max-concurrency 2" +
      job);
  EXPECT_EQ(cap.exit_code, 2) << cap.output;
  EXPECT_THAT(cap.output, HasSubstr("must be at least --expect-workers"));
  EXPECT_FALSE(fs::exists(out));
}

TEST(RolesTest, CurveKeysCarryTheSameRun) {
  const fs::path dir = AbsentDir("surge_roles_curve");
  fs::create_directories(dir / "allowed");
  ASSERT_EQ(RunSurge("keygen --out " + (dir / "coordinator").string()).exit_code, 0);
  ASSERT_EQ(RunSurge("keygen --out " + (dir / "worker").string()).exit_code, 0);
  fs::copy_file(dir / "worker" / "surge.pub", dir / "allowed" / "worker.pub");
  const std::string port = FreeLoopbackPort();
  ASSERT_FALSE(port.empty());
  const std::string endpoint = "tcp://127.0.0.1:" + port;
  std::vector<std::string> args = {"coordinator",
                                   "--bind",
                                   endpoint,
                                   "--expect-workers",
                                   "1",
                                   "--curve-secret-key",
                                   (dir / "coordinator" / "surge.key").string(),
                                   "--curve-allow",
                                   (dir / "allowed").string()};
  for (const auto& f : JobFlags(dir / "out")) args.push_back(f);
  SurgeProcess coordinator(args, dir / "coordinator.log");
  SurgeProcess worker({"worker", "--connect", endpoint, "--curve-secret-key",
                       (dir / "worker" / "surge.key").string(), "--curve-server-key",
                       (dir / "coordinator" / "surge.pub").string()},
                      dir / "worker.log");
  EXPECT_EQ(coordinator.WaitExit(60000), 0) << coordinator.Log();
  EXPECT_EQ(worker.WaitExit(30000), 0) << worker.Log();
  EXPECT_THAT(coordinator.Log(), HasSubstr("(CurveZMQ)"));
  const RunFolderReport report = CheckRunFolder(ResultsFolder(coordinator.Log()), "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 60u);
}

// SIGTERM to the coordinator (`docker stop`, an eviction)
// stops new sends, drains, writes every record and exits 143; its worker
// is told to stop and exits 0.
TEST(RolesTest, CoordinatorSigtermDrainsWritesAndExits143) {
  const fs::path dir = FreshDir("surge_roles_sigterm");
  const std::string port = FreeLoopbackPort();
  ASSERT_FALSE(port.empty());
  const std::string endpoint = "tcp://127.0.0.1:" + port;
  SurgeProcess worker({"worker", "--connect", endpoint}, dir / "w0.log");
  SurgeProcess coordinator({"coordinator", "--bind", endpoint, "--expect-workers", "1",
                            "--num-prompts", "1000", "--request-rate", "50",
                            "--random-input-len", "16", "--random-output-len", "2",
                            "--output-dir", (dir / "out").string()},
                           dir / "coordinator.log");
  ASSERT_TRUE(WaitForText(dir / "coordinator.log", "started 1000 requests", 30000))
      << coordinator.Log();
  usleep(2000000);
  ASSERT_TRUE(coordinator.Signal(SIGTERM));
  EXPECT_EQ(coordinator.WaitExit(30000), 143) << coordinator.Log();
  EXPECT_EQ(worker.WaitExit(15000), 0) << worker.Log();
  const RunFolderReport report = CheckRunFolder(ResultsFolder(coordinator.Log()), "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.records, 1000u);
  EXPECT_GT(report.ok, 50u);    // about 2 s at 50/s went out
  EXPECT_LT(report.ok, 500u);   // and the rest never did
  EXPECT_EQ(report.summary["run"]["interrupted"], true);
  EXPECT_THAT(report.summary["run"].value("stop_reason", ""), StartsWith("stopped (SIGTERM) at "));
  EXPECT_GT(report.summary["requests"]["not_sent"].get<int>(), 400);
}

// `docker stop` gives a container 10 s after SIGTERM, then SIGKILL. With
// 15 s streams in flight, the coordinator's SIGTERM drain (5 s) cuts them
// off in time: it exits 143 well inside the 10 s, with the summary and both
// pages written (a SIGKILL at 10 s would leave none of them).
TEST(RolesTest, CoordinatorSigtermWithLongStreamsWritesEverythingInsideTenSeconds) {
  const fs::path dir = FreshDir("surge_roles_sigterm_long");
  const std::string port = FreeLoopbackPort();
  ASSERT_FALSE(port.empty());
  const std::string endpoint = "tcp://127.0.0.1:" + port;
  SurgeProcess worker({"worker", "--connect", endpoint}, dir / "w0.log");
  // 300 tokens 50 ms apart: each stream takes 15 s.
  SurgeProcess coordinator(
      {"coordinator", "--bind", endpoint, "--expect-workers", "1", "--num-prompts", "200",
       "--request-rate", "20", "--random-input-len", "16", "--random-output-len", "300",
       "--sim-itl-ms", "50", "--output-dir", (dir / "out").string()},
      dir / "coordinator.log");
  ASSERT_TRUE(WaitForText(dir / "coordinator.log", "started 200 requests", 30000))
      << coordinator.Log();
  usleep(2000000);
  ASSERT_TRUE(coordinator.Signal(SIGTERM));
  const auto signalled = std::chrono::steady_clock::now();
  const int code = coordinator.WaitExit(10000);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  if (code == -1) coordinator.Signal(SIGKILL);  // what the container runtime would do
  std::cout << "exit " << code << " " << took_s << " s after SIGTERM\n";
  ASSERT_EQ(code, 143) << coordinator.Log();
  EXPECT_EQ(worker.WaitExit(15000), 0) << worker.Log();
  const fs::path folder = ResultsFolder(coordinator.Log());
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.records, 200u);
  EXPECT_EQ(report.ok, 0u);  // none of the 15 s streams could end in 2 + 5 s
  EXPECT_GT(report.summary["requests"]["interrupted"].get<int>(), 20);
  EXPECT_THAT(report.summary["run"].value("stop_reason", ""), StartsWith("stopped (SIGTERM) at "));
  EXPECT_TRUE(fs::exists(folder / "synthetic_rps_distribution_plot.html"));
  EXPECT_TRUE(fs::exists(folder / "synthetic_rps_distribution_plot_with_actual_rps.html"));
  EXPECT_THAT(coordinator.Log(), HasSubstr("waiting up to 5 s for the"));
}

// Start in any order: the coordinator starts before its target, with
// --wait-for-target 30; the server comes up 3 s later. The coordinator says
// it is waiting, retries every second, and the run completes: every
// request answered, exit 0. Without the flag it fails at once (exit 1).
TEST(RolesTest, CoordinatorStartedBeforeTheServerWaitsForIt) {
  const fs::path dir = FreshDir("surge_roles_wait_for_target");
  const std::string port = FreeLoopbackPort();
  const std::string server_port = FreeLoopbackPort();
  ASSERT_FALSE(port.empty());
  ASSERT_FALSE(server_port.empty());
  const std::string endpoint = "tcp://127.0.0.1:" + port;
  const std::vector<std::string> run = {"--num-prompts",       "40",
                                        "--request-rate",      "20",
                                        "--random-input-len",  "16",
                                        "--random-output-len", "2",
                                        "--base-url",          "http://127.0.0.1:" + server_port,
                                        "--output-dir",        (dir / "out").string()};
  {
    std::vector<std::string> args = {"coordinator", "--bind", endpoint, "--expect-workers", "1"};
    args.insert(args.end(), run.begin(), run.end());
    SurgeProcess once(args, dir / "once.log");
    EXPECT_EQ(once.WaitExit(15000), 1) << once.Log();
    EXPECT_THAT(once.Log(), HasSubstr("cannot reach"));
  }
  std::vector<std::string> args = {"coordinator",       "--bind", endpoint, "--expect-workers", "1",
                                   "--wait-for-target", "30"};
  args.insert(args.end(), run.begin(), run.end());
  SurgeProcess coordinator(args, dir / "coordinator.log");
  SurgeProcess worker({"worker", "--connect", endpoint}, dir / "w0.log");
  ASSERT_TRUE(WaitForText(dir / "coordinator.log", "the target does not answer yet", 10000))
      << coordinator.Log();
  usleep(3000000);
  SurgeProcess sim({"sim-server", "--host", "127.0.0.1", "--port", server_port}, dir / "sim.log");
  EXPECT_EQ(coordinator.WaitExit(60000), 0) << coordinator.Log();
  EXPECT_EQ(worker.WaitExit(15000), 0) << worker.Log();
  EXPECT_THAT(coordinator.Log(), HasSubstr("the target answers"));
  const RunFolderReport report = CheckRunFolder(ResultsFolder(coordinator.Log()), "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 40u);
  sim.Signal(SIGTERM);
  EXPECT_EQ(sim.WaitExit(10000), 0) << sim.Log();
}

// A port in use fails first: with the coordinator's --bind port held by
// another listener, it stops at once with exit 2 naming the endpoint, before
// it waits 30 s for a target that is not there and before any run folder.
TEST(RolesTest, CoordinatorBindPortInUseFailsFirst) {
  const fs::path dir = FreshDir("surge_roles_port_in_use");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  const std::string dead_port = FreeLoopbackPort();
  const auto start = std::chrono::steady_clock::now();
  SurgeProcess coordinator(
      {"coordinator", "--bind", endpoint, "--expect-workers", "1", "--wait-for-target", "30",
       "--base-url", "http://127.0.0.1:" + dead_port, "--model", "m", "--num-prompts", "5",
       "--request-rate", "5", "--output-dir", (dir / "out").string()},
      dir / "coordinator.log");
  EXPECT_EQ(coordinator.WaitExit(20000), 2) << coordinator.Log();
  close(fd);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_THAT(coordinator.Log(), HasSubstr("cannot bind " + endpoint));
  EXPECT_THAT(coordinator.Log(), HasSubstr("Address already in use"));
  EXPECT_THAT(coordinator.Log(), Not(HasSubstr("does not answer yet")));
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// R-DIST-7: the coordinator is SIGKILLed mid-run. Every worker stops
// sending within 3 s (its lease is 1 s: the server reads nothing from it
// later than that, with slack) and exits non-zero (3, "coordinator lost")
// on its own.
TEST(RolesTest, CoordinatorKilledMidRunStopsEveryWorker) {
  const fs::path dir = FreshDir("surge_roles_coordinator_kill");
  const fs::path request_log = dir / "requests.jsonl";
  const SimServerProcess sim =
      StartSimServerProcess({"--request-log", request_log.string()}, dir / "sim.log");
  ASSERT_FALSE(sim.port.empty()) << ReadText(dir / "sim.log");
  const std::string port = FreeLoopbackPort();
  ASSERT_FALSE(port.empty());
  const std::string endpoint = "tcp://127.0.0.1:" + port;
  SurgeProcess w0({"worker", "--connect", endpoint}, dir / "w0.log");
  SurgeProcess w1({"worker", "--connect", endpoint}, dir / "w1.log");
  SurgeProcess coordinator(
      {"coordinator", "--bind", endpoint, "--expect-workers", "2", "--base-url",
       "http://127.0.0.1:" + sim.port, "--num-prompts", "3000", "--request-rate", "100",
       "--random-input-len", "16", "--random-output-len", "2", "--output-dir",
       (dir / "out").string()},
      dir / "coordinator.log");
  ASSERT_TRUE(WaitForText(dir / "coordinator.log", "started 3000 requests", 30000))
      << coordinator.Log();
  usleep(2000000);
  const auto wall_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const int64_t killed_ns = wall_ns();
  ASSERT_TRUE(coordinator.Signal(SIGKILL));
  EXPECT_EQ(coordinator.WaitExit(5000), -2 - SIGKILL);
  const int w0_exit = w0.WaitExit(15000);
  const int w1_exit = w1.WaitExit(15000);
  const int64_t exited_ns = wall_ns();
  EXPECT_EQ(w0_exit, 3) << w0.Log();
  EXPECT_EQ(w1_exit, 3) << w1.Log();
  EXPECT_THAT(w0.Log(), HasSubstr("coordinator lost"));
  // Both were gone a few seconds after the kill (lease 1 s + ask again 0.5 s
  // + give up 0.5 s; generous on a loaded machine).
  EXPECT_LT(exited_ns - killed_ns, int64_t{8} * 1000000000);
  kill(sim.pid, SIGTERM);
  waitpid(sim.pid, nullptr, 0);
  // What the server read: requests before the kill (≈ 2 s × 100/s) and,
  // after it, none later than 3 s.
  size_t before = 0, after = 0;
  int64_t last_ns = 0;
  std::ifstream in(request_log);
  std::string line;
  const std::regex t_ns_re("\"t_ns\":(\\d+)");
  while (std::getline(in, line)) {
    if (line.find("\"surge_request\":\"") == std::string::npos) continue;  // not a completion
    std::smatch m;
    if (!std::regex_search(line, m, t_ns_re)) continue;
    const int64_t t_ns = std::stoll(m[1]);
    (t_ns <= killed_ns ? before : after) += 1;
    last_ns = std::max(last_ns, t_ns);
  }
  EXPECT_GT(before, 100u);
  EXPECT_LT(last_ns - killed_ns, int64_t{3} * 1000000000)
      << after << " requests read after the kill, the last "
      << (last_ns - killed_ns) / 1e6 << " ms after it";
  std::cout << "requests read before the kill " << before << ", after " << after
            << " (last " << (last_ns - killed_ns) / 1e6 << " ms after); workers exited "
            << (exited_ns - killed_ns) / 1e6 << " ms after the kill\n";
}

}  // namespace
}  // namespace surge::testing
