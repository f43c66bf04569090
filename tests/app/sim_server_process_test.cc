// `surge run`'s built-in server as a child process
// (app/sim_server_process.h): the arguments carry every option exactly, the
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
#include "coordinator/config/option_table.h"

namespace surge::app {
namespace {

std::string After(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  return "(missing)";
}

TEST(SimServerProcessTest, ArgsCarryEveryOptionExactly) {
  surge::v1::SimServerConfig run_sim;
  run_sim.set_ttft_ms(0.1);  // not exact in binary: 17 digits bring the same double back
  run_sim.set_itl_ms(2.5);
  run_sim.set_fault_429(0.25);
  run_sim.set_fault_stall(1.0 / 3.0);
  run_sim.set_fault_after_tokens(7);
  run_sim.set_fault_stall_ms(1500);
  run_sim.set_fault_seed(99);
  surge::v1::SimServerConfig o = BuiltInServerConfig(run_sim);
  o.set_request_log_file("/tmp/x.jsonl");
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

// The run's built-in server: every timing and fault option of the run, the
// listen options of `surge sim-server` but on any free port.
TEST(SimServerProcessTest, BuiltInServerTakesTheRunsOptionsOnAFreePort) {
  surge::v1::SimServerConfig run_sim;
  run_sim.set_ttft_ms(7);
  run_sim.set_itl_ms(3);
  run_sim.set_fault_429(0.1);
  run_sim.set_fault_500(0.01);
  run_sim.set_fault_503(0.2);
  run_sim.set_fault_reset(0.03);
  run_sim.set_fault_malformed(0.04);
  run_sim.set_fault_stall(0.05);
  run_sim.set_fault_split(0.06);
  run_sim.set_fault_error_event(0.07);
  run_sim.set_fault_after_tokens(4);
  run_sim.set_fault_stall_ms(250);
  run_sim.set_fault_seed(99);
  const surge::v1::SimServerConfig o = BuiltInServerConfig(run_sim);
  EXPECT_EQ(o.ttft_ms(), 7);
  EXPECT_EQ(o.itl_ms(), 3);
  EXPECT_EQ(o.fault_429(), 0.1);
  EXPECT_EQ(o.fault_500(), 0.01);
  EXPECT_EQ(o.fault_503(), 0.2);
  EXPECT_EQ(o.fault_reset(), 0.03);
  EXPECT_EQ(o.fault_malformed(), 0.04);
  EXPECT_EQ(o.fault_stall(), 0.05);
  EXPECT_EQ(o.fault_split(), 0.06);
  EXPECT_EQ(o.fault_error_event(), 0.07);
  EXPECT_EQ(o.fault_after_tokens(), 4u);
  EXPECT_EQ(o.fault_stall_ms(), 250);
  EXPECT_EQ(o.fault_seed(), 99u);
  EXPECT_EQ(o.address(), "127.0.0.1");
  EXPECT_EQ(o.port(), 0u);
  EXPECT_EQ(o.model(), "surge-sim");
  EXPECT_EQ(o.threads(), 1u);
  EXPECT_TRUE(o.tls_cert_file().empty());
  EXPECT_TRUE(o.request_log_file().empty());
}

// The queueing model's options reach `surge sim-server` as its flags, and
// the run's log line says which timing the server uses.
TEST(SimServerProcessTest, QueueingModelOptionsReachTheServer) {
  surge::v1::SimServerConfig run_sim = coordinator::WithDefaults<surge::v1::SimServerConfig>();
  EXPECT_EQ(BuiltInServerTiming(run_sim), "TTFT 20 ms, 2 ms per token");
  run_sim.set_max_num_seqs(8);
  run_sim.set_decode_ms_base(10);
  run_sim.set_decode_ms_per_seq(0.5);
  run_sim.set_prefill_ms_per_token(0.01);
  const std::vector<std::string> args = SimServerArgs(BuiltInServerConfig(run_sim), 1);
  EXPECT_EQ(After(args, "--max-num-seqs"), "8");
  EXPECT_EQ(After(args, "--decode-ms-base"), "10");
  EXPECT_EQ(After(args, "--decode-ms-per-seq"), "0.5");
  EXPECT_EQ(After(args, "--prefill-ms-per-token"), "0.01");
  EXPECT_EQ(BuiltInServerTiming(run_sim),
            "queueing model: 8 sequences, steps of 10 ms + 0.5 ms per sequence + 0.01 ms per "
            "prompt token");
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
  // A run's sim_* options with every default set, as `surge run` has them.
  const surge::v1::SimServerConfig run_sim =
      coordinator::WithDefaults<surge::v1::SimServerConfig>();
  auto process = SimServerProcess::Start(RealClock(), surge, BuiltInServerConfig(run_sim));
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
  surge::v1::SimServerConfig o =
      BuiltInServerConfig(coordinator::WithDefaults<surge::v1::SimServerConfig>());
  o.set_ttft_ms(-1);  // refused by the server
  auto process = SimServerProcess::Start(RealClock(), surge, o);
  ASSERT_EQ(process.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(process.status().message()),
              ::testing::HasSubstr("the built-in server exited before listening (exit code"));
}

}  // namespace
}  // namespace surge::app
