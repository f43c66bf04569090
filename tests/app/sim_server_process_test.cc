// `surge run`'s built-in server as a child process (issue 9 item 2,
// app/sim_server_process.h): the arguments carry every option exactly, the
// port is read from the child's first line, and the child is stopped and
// reaped by its pid. The last test starts the real `surge sim-server`.
#include "app/sim_server_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"

namespace surge::app {
namespace {

std::string After(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  return "(missing)";
}

TEST(SimServerProcessTest, ArgsCarryEveryOptionExactly) {
  surge::simserver::SimServerOptions o;
  o.ttft_ms = 0.1;  // not exact in binary: 17 digits bring the same double back
  o.itl_ms = 2.5;
  o.fault_429 = 0.25;
  o.fault_stall = 1.0 / 3.0;
  o.fault_after_tokens = 7;
  o.fault_stall_ms = 1500;
  o.fault_seed = 99;
  o.request_log_file = "/tmp/x.jsonl";
  const std::vector<std::string> args = SimServerArgs(o, 4242);
  EXPECT_EQ(args[0], "sim-server");
  EXPECT_EQ(After(args, "--host"), "127.0.0.1");
  EXPECT_EQ(After(args, "--port"), "0");
  EXPECT_EQ(std::strtod(After(args, "--ttft-ms").c_str(), nullptr), 0.1);
  EXPECT_EQ(std::strtod(After(args, "--fault-stall").c_str(), nullptr), 1.0 / 3.0);
  EXPECT_EQ(After(args, "--itl-ms"), "2.5");
  EXPECT_EQ(After(args, "--fault-429"), "0.25");
  EXPECT_EQ(After(args, "--fault-after-tokens"), "7");
  EXPECT_EQ(After(args, "--fault-stall-ms"), "1500");
  EXPECT_EQ(After(args, "--fault-seed"), "99");
  EXPECT_EQ(After(args, "--model"), "surge-sim");
  EXPECT_EQ(After(args, "--request-log"), "/tmp/x.jsonl");
  EXPECT_EQ(After(args, "--parent-pid"), "4242");
  EXPECT_EQ(After(args, "--tls-cert"), "(missing)");
}

TEST(SimServerProcessTest, PortFromTheListeningLine) {
  EXPECT_EQ(PortFromListeningLine(
                "surge sim-server listening on http://127.0.0.1:40123 (model surge-sim)"),
            40123);
  EXPECT_EQ(PortFromListeningLine("surge sim-server listening on https://[::1]:8443 (model m)"),
            8443);
  EXPECT_EQ(PortFromListeningLine("surge sim-server: port in use"), 0);
  EXPECT_EQ(PortFromListeningLine("surge sim-server listening on http://127.0.0.1:0 (model m)"), 0);
  EXPECT_EQ(PortFromListeningLine("surge sim-server listening on http://127.0.0.1:99999 (m)"), 0);
}

// The real child: it listens on the port it names, can be kept on one CPU,
// and is gone (reaped) after Stop.
TEST(SimServerProcessTest, StartsListensAndIsStoppedByPid) {
  const std::string surge = std::string(SURGE_BINARY_DIR) + "/surge";
  if (!std::filesystem::exists(surge)) GTEST_SKIP() << "no " << surge;
  auto process = SimServerProcess::Start(RealClock(), surge, {});
  ASSERT_TRUE(process.ok()) << process.status();
  const pid_t pid = (*process)->pid();
  EXPECT_GT((*process)->port(), 0);
  EXPECT_EQ(kill(pid, 0), 0);  // running
  EXPECT_TRUE((*process)->KeepOnCpus({0}).ok());
  EXPECT_EQ((*process)->KeepOnCpus({100000}).code(), absl::StatusCode::kInvalidArgument);
  (*process)->Stop();
  errno = 0;
  EXPECT_EQ(kill(pid, 0), -1);  // stopped and reaped: no such process
  EXPECT_EQ(errno, ESRCH);
}

// A server that cannot start (a bad option) is an error naming its exit,
// not a hang.
TEST(SimServerProcessTest, AChildThatExitsBeforeListeningIsAnError) {
  const std::string surge = std::string(SURGE_BINARY_DIR) + "/surge";
  if (!std::filesystem::exists(surge)) GTEST_SKIP() << "no " << surge;
  surge::simserver::SimServerOptions o;
  o.ttft_ms = -1;  // refused by the server
  auto process = SimServerProcess::Start(RealClock(), surge, o);
  ASSERT_EQ(process.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(process.status().message()),
              ::testing::HasSubstr("the built-in server exited before listening (exit code"));
}

}  // namespace
}  // namespace surge::app
