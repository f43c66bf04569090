// The API key end to end, against the built-in server started with
// --api-key-file (401 without the key, as vLLM's --api-key): a run whose
// every request is refused says so and exits 1; `surge coordinator` hands its
// key to a `surge worker` that has none of its own (docs/SECURITY.md). All
// traffic on 127.0.0.1; every run bounded in count and time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/run_folder_check.h"
#include "tests/integration/surge_process.h"
#include "tests/testing/temp_dir.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kKey = "sk-surge-api-key-test-41";

// A sim server that asks for kKey; the key file is `dir/server.key`.
SimServerProcess StartAuthServer(const fs::path& dir) {
  std::ofstream(dir / "server.key") << kKey << "\n";
  return StartSimServerProcess({"--api-key-file", (dir / "server.key").string()},
                               dir / "server.log");
}

std::vector<std::string> RunFlags(const std::string& port, const fs::path& out) {
  return {"--base-url",
          "http://127.0.0.1:" + port,
          "--model",
          "surge-sim",
          "--num-prompts",
          "20",
          "--request-rate",
          "20",
          "--random-input-len",
          "16",
          "--random-output-len",
          "2",
          "--output-dir",
          out.string()};
}

std::string Joined(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) s += " " + a;
  return s;
}

TEST(ApiKeyTest, EveryRequestRefusedSaysSoAndExitsOne) {
  unsetenv("OPENAI_API_KEY");
  const fs::path dir = FreshDir("surge_api_key_refused");
  const SimServerProcess server = StartAuthServer(dir);
  ASSERT_TRUE(SimServerUp(server));
  const Result refused = RunSurge("run --workers 1" + Joined(RunFlags(server.port, dir / "a")));
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("the server refused every one of the 20 requests sent "
                                        "(HTTP 401/403): the API key is missing or wrong"));
  // Everything is still written, each refusal a record with its reason.
  const RunFolderReport a = CheckRunFolder(ResultsFolder(refused.output), "synthetic");
  EXPECT_EQ(a.records, 20u);
  EXPECT_EQ(a.summary["reasons"].value("http_401", 0), 20) << a.summary.dump();

  std::ofstream(dir / "client.key") << kKey;
  const Result ok = RunSurge("run --workers 1 --api-key-file " + (dir / "client.key").string() +
                             Joined(RunFlags(server.port, dir / "b")));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(CheckRunFolder(ResultsFolder(ok.output), "synthetic").ok, 20u);
  StopProcess(server.pid);
}

// The key only on the coordinator's machine: its file is removed once the
// coordinator has read it, and the worker has no OPENAI_API_KEY. Over a
// loopback link the coordinator hands the key over in the Welcome, so every
// request is authorized (the server checks).
TEST(ApiKeyTest, CoordinatorHandsItsKeyToTheWorker) {
  unsetenv("OPENAI_API_KEY");
  const fs::path dir = FreshDir("surge_api_key_handover");
  const SimServerProcess server = StartAuthServer(dir);
  ASSERT_TRUE(SimServerUp(server));
  std::ofstream(dir / "coordinator.key") << kKey;
  std::vector<std::string> args = {"coordinator",
                                   "--bind",
                                   "tcp://127.0.0.1:0",
                                   "--expect-workers",
                                   "1",
                                   "--join-timeout",
                                   "30",
                                   "--api-key-file",
                                   (dir / "coordinator.key").string()};
  for (const std::string& f : RunFlags(server.port, dir / "out")) args.push_back(f);
  SurgeProcess coordinator(args, dir / "coordinator.log");
  ASSERT_TRUE(WaitForText(dir / "coordinator.log", "surge worker --connect ", 20000))
      << coordinator.Log();
  const std::string log = coordinator.Log();
  const size_t at =
      log.find("surge worker --connect ") + std::string("surge worker --connect ").size();
  const std::string endpoint = log.substr(at, log.find('\n', at) - at);
  EXPECT_THAT(log, HasSubstr("the API key goes to each worker in its Welcome (loopback link)"));
  fs::remove(dir / "coordinator.key");  // the worker cannot read it now
  SurgeProcess worker({"worker", "--connect", endpoint, "--join-timeout", "30"}, dir / "w.log");
  EXPECT_EQ(coordinator.WaitExit(60000), 0) << coordinator.Log();
  EXPECT_EQ(worker.WaitExit(20000), 0) << worker.Log();
  EXPECT_THAT(worker.Log(), HasSubstr("API key: the one the coordinator handed over"));
  EXPECT_THAT(coordinator.Log() + worker.Log(), Not(HasSubstr(kKey)));
  const RunFolderReport report = CheckRunFolder(ResultsFolder(coordinator.Log()), "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 20u) << report.summary.dump();
  StopProcess(server.pid);
}

}  // namespace
}  // namespace surge::testing
