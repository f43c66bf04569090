// `surge report` on run folders whose run did not end normally: a
// coordinator killed mid-run (its last run_state.json mark splits the
// requests without a record into possibly sent and never sent) and a
// coordinator whose workers never joined (nothing to report).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/integration/surge_process.h"
#include "tests/testing/temp_dir.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The plan's offsets by index, from `{dataset}_plan.csv`.
std::vector<double> PlanOffsets(const fs::path& plan_csv) {
  std::vector<double> offsets;
  std::ifstream in(plan_csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ',');
    offsets.push_back(std::stod(f.at(3)));
  }
  return offsets;
}

// The indices that have a record in the details file.
std::set<uint64_t> RecordedIndices(const fs::path& details) {
  std::set<uint64_t> seen;
  std::ifstream in(details);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("index")) seen.insert(j["index"].get<uint64_t>());
  }
  return seen;
}

// A coordinator SIGKILLed 2 s into a 10 s plan: its last mark says until
// when a request could have been sent. `surge report` calls the requests
// without a record planned after that `not_sent`, the others `lost`, and
// keeps a stop reason that says the run ended early.
TEST(ReportCrashTest, KilledCoordinatorsLateRequestsAreNotSent) {
  const fs::path dir = FreshDir("surge_report_crash");
  const SimServerProcess server = StartSimServerProcess({}, dir / "server.log");
  ASSERT_TRUE(SimServerUp(server));
  SurgeProcess run(
      {"run", "--base-url", "http://127.0.0.1:" + server.port, "--model", "m", "--num-prompts",
       "200", "--request-rate", "20", "--workers", "1", "--random-input-len", "16",
       "--random-output-len", "4", "--output-dir", (dir / "out").string()},
      dir / "run.log");
  ASSERT_TRUE(WaitForText(dir / "run.log", "started 200 requests", 20000)) << run.Log();
  usleep(2000000);
  ASSERT_TRUE(run.Signal(SIGKILL));
  ASSERT_EQ(run.WaitExit(5000), -2 - SIGKILL);
  usleep(500000);  // the local worker goes with its coordinator (PDEATHSIG)
  StopProcess(server.pid);
  const fs::path folder = ResultsFolder(run.Log());
  ASSERT_FALSE(folder.empty()) << run.Log();
  ASSERT_FALSE(fs::exists(folder / "synthetic.json"));  // no summary: it crashed

  const nlohmann::json mark = nlohmann::json::parse(ReadText(folder / "run_state.json"));
  EXPECT_EQ(mark["state"], "running");
  const double elapsed_s = mark["elapsed_s"].get<double>();
  const double cutoff_s = mark["no_send_after_s"].get<double>();
  EXPECT_GT(elapsed_s, 0.5);  // marks about once a second until the kill
  EXPECT_LT(elapsed_s, 4.0);
  EXPECT_DOUBLE_EQ(cutoff_s, elapsed_s + 1.0 + 1.0 + 0.5);  // period + lease + margin

  const Result report = RunSurge("report " + folder.string());
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const std::vector<double> offsets = PlanOffsets(folder / "synthetic_plan.csv");
  ASSERT_EQ(offsets.size(), 200u);
  const std::set<uint64_t> recorded = RecordedIndices(folder / "synthetic_details.jsonl");
  int expect_lost = 0, expect_not_sent = 0;
  for (uint64_t i = 0; i < offsets.size(); ++i) {
    if (recorded.count(i) > 0) continue;
    ++(offsets[i] > cutoff_s ? expect_not_sent : expect_lost);
  }
  EXPECT_GT(expect_not_sent, 100);  // the plan runs 10 s, the kill came near 2 s
  const nlohmann::json s = nlohmann::json::parse(ReadText(folder / "synthetic.json"));
  EXPECT_EQ(s["requests"]["lost"].get<int>(), expect_lost) << s["requests"].dump();
  EXPECT_EQ(s["requests"]["not_sent"].get<int>(), expect_not_sent) << s["requests"].dump();
  EXPECT_THAT(s["run"]["stop_reason"].get<std::string>(),
              StartsWith("ended early: the coordinator's last mark of being alive was at "));
  EXPECT_THAT(report.output,
              HasSubstr(std::to_string(expect_not_sent) +
                        " planned requests have no record and were due after the run ended"));
}

// A coordinator whose worker never came: the folder says the run never
// started, and `surge report` refuses it (exit 2) instead of calling every
// planned request lost.
TEST(ReportCrashTest, RunThatNeverStartedIsRefused) {
  const fs::path dir = FreshDir("surge_report_never_started");
  const Result coordinator = RunSurge(
      "coordinator --bind tcp://127.0.0.1:0 --expect-workers 1 --join-timeout 1 "
      "--insecure-transport --num-prompts 5 --request-rate 5 --output-dir " +
      (dir / "out").string());
  ASSERT_EQ(coordinator.exit_code, 1) << coordinator.output;
  const fs::path folder = ResultsFolder(coordinator.output);
  ASSERT_FALSE(folder.empty()) << coordinator.output;
  const nlohmann::json mark = nlohmann::json::parse(ReadText(folder / "run_state.json"));
  EXPECT_EQ(mark["state"], "never_started");
  const Result report = RunSurge("report " + folder.string());
  EXPECT_EQ(report.exit_code, 2) << report.output;
  EXPECT_THAT(report.output, HasSubstr("the run never started (only 0 of 1 workers were ready"));
  EXPECT_THAT(report.output, HasSubstr("nothing was sent, there is nothing to report"));
}

}  // namespace
}  // namespace surge::testing
