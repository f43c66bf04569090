// End-to-end: the real `surge` binary with its local worker processes and the
// simulated server, all on 127.0.0.1 (R-UI-1, R-DIST-1..5, R-OUT-1/2,
// R-CFG-1). Every run is bounded: few requests, and `timeout` around each
// process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/run_folder_check.h"
#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;


TEST(EndToEndTest, TwoWorkersAgainstBuiltInServer) {
  const fs::path out = FreshDir("surge_e2e_builtin");
  const Result r = RunSurge("run --num-prompts 200 --request-rate 40 --burstiness 0.5 --workers 2 "
                       "--random-input-len 64 --random-output-len 8 --sim-ttft-ms 5 "
                       "--sim-itl-ms 1 --seed 3 --output-dir " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path folder = ResultsFolder(r.output);
  // R-PLOT-1 layout: {output}/{YYYYMMDD_HHMMSS}/performances/{model}/
  EXPECT_EQ(folder.parent_path().filename(), "performances");
  EXPECT_EQ(folder.filename(), "surge-sim");
  EXPECT_TRUE(std::regex_match(folder.parent_path().parent_path().filename().string(),
                               std::regex("\\d{8}_\\d{6}(_\\d+)?")));
  EXPECT_TRUE(fs::exists(folder / "synthetic_rps_distribution_plot.html"));
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.planned, 200u);
  EXPECT_EQ(report.records, 200u);
  EXPECT_EQ(report.ok, 200u);
  EXPECT_NEAR(report.intended_rate_rps, 40, 4);
  EXPECT_NEAR(report.achieved_rate_rps / report.intended_rate_rps, 1.0, 0.02) << r.output;
  EXPECT_THAT(r.output, HasSubstr("seed: 3"));
  EXPECT_EQ(report.summary["run"]["seed"], 3);
  // Both workers sent: records name worker 0 and 1.
  std::ifstream details(folder / "synthetic_details.jsonl");
  std::set<int> workers;
  std::string line;
  while (std::getline(details, line)) workers.insert(nlohmann::json::parse(line)["worker"].get<int>());
  EXPECT_EQ(workers, (std::set<int>{0, 1}));

  // Issue 8, item 8: distinct titles with units and the run context on both
  // pages.
  for (const char* name : {"synthetic_rps_distribution_plot.html",
                           "synthetic_rps_distribution_plot_with_actual_rps.html"}) {
    std::ifstream in(folder / name);
    std::stringstream page;
    page << in.rdbuf();
    const bool actual = std::string(name).find("actual") != std::string::npos;
    EXPECT_THAT(page.str(), HasSubstr(std::string("Target Rate: 40 RPS") +
                                      (actual ? " — actual</title>" : " — expected</title>")));
    EXPECT_THAT(page.str(), HasSubstr("<th>Model</th><td>surge-sim</td><th>Server</th>"
                                      "<td>http://127.0.0.1:"));
    EXPECT_THAT(page.str(), HasSubstr("<th>Requests (N)</th><td>200</td><th>Seed</th><td>3</td>"));
    EXPECT_THAT(page.str(), HasSubstr("<th>Workers</th><td>2</td>"));
    EXPECT_THAT(page.str(), HasSubstr("<th>surge version</th><td>"));
  }
  EXPECT_TRUE(report.summary["run"]["surge_version"].is_string());
}

TEST(EndToEndTest, ExternalServerAndBadConfigsSendNothing) {
  // An external sim server, as a real vLLM/SGLang target would be.
  const fs::path log = fs::path(::testing::TempDir()) / "sim_server.log";
  const SimServerProcess server = StartSimServerProcess({"--ttft-ms", "2", "--itl-ms", "1"}, log);
  ASSERT_GT(server.pid, 0);
  if (server.port.empty()) StopProcess(server.pid);
  ASSERT_FALSE(server.port.empty()) << "sim server did not start";
  const std::string& port = server.port;
  const std::string url = "http://127.0.0.1:" + port;

  // Every shared error case: exit 2, the field named, no run folder, nothing sent.
  std::ifstream cases_in(fs::path(SURGE_SOURCE_DIR) / "tests/testdata/traffic_cases.json");
  const nlohmann::json cases = nlohmann::json::parse(cases_in);
  for (const auto& c : cases["error_cases"]) {
    const fs::path out = FreshDir("surge_e2e_bad_" + c["id"].get<std::string>());
    const fs::path cfg = fs::path(::testing::TempDir()) / (c["id"].get<std::string>() + ".yaml");
    std::ofstream(cfg) << c["config"].dump();
    const Result bad = RunSurge("run --config " + cfg.string() + " --num-prompts " +
                           std::to_string(c["num_requests"].get<int>()) + " --base-url " + url +
                           " --output-dir " + out.string());
    EXPECT_EQ(bad.exit_code, c["expected"]["exit_code"].get<int>()) << bad.output;
    EXPECT_THAT(bad.output, HasSubstr(c["expected"]["error_field"].get<std::string>()));
    EXPECT_FALSE(fs::exists(out)) << c["id"];
  }
  // A bad flag value is a configuration error too.
  const Result bad_flag = RunSurge("run --burstiness -1 --base-url " + url);
  EXPECT_EQ(bad_flag.exit_code, 2);
  EXPECT_THAT(bad_flag.output, HasSubstr("traffic_cfg.burstiness = -1"));

  const fs::path out = FreshDir("surge_e2e_external");
  const Result r = RunSurge("run --num-prompts 100 --request-rate 50 --workers 2 --random-input-len 32 "
                       "--random-output-len 4 --endpoint /v1/completions --base-url " + url +
                       " --output-dir " + out.string());
  StopProcess(server.pid);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const RunFolderReport report = CheckRunFolder(ResultsFolder(r.output), "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 100u);
  // The server saw exactly the 100 good requests (+1 /v1/models): the bad
  // configurations sent nothing.
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_THAT(ss.str(), HasSubstr("stopped after 101 requests"));
}

TEST(EndToEndTest, PlanSendsNothingAndInstantModeWritesNoExpectedPage) {
  const fs::path out = FreshDir("surge_e2e_plan");
  const Result plan = RunSurge("plan --num-prompts 1000 --ramp-up-strategy exponential "
                          "--ramp-up-start-rps 1 --ramp-up-end-rps 64 --burstiness 2 --output-dir " +
                          out.string());
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  const fs::path folder = ResultsFolder(plan.output);
  EXPECT_TRUE(fs::exists(folder / "synthetic_plan.csv"));
  EXPECT_TRUE(fs::exists(folder / "synthetic_rps_distribution_plot.html"));
  EXPECT_FALSE(fs::exists(folder / "synthetic_details.jsonl"));

  const fs::path out2 = FreshDir("surge_e2e_instant");
  const Result instant = RunSurge("run --num-prompts 20 --workers 2 --random-input-len 16 "
                             "--random-output-len 2 --output-dir " + out2.string());
  ASSERT_EQ(instant.exit_code, 0) << instant.output;
  const fs::path f2 = ResultsFolder(instant.output);
  EXPECT_FALSE(fs::exists(f2 / "synthetic_rps_distribution_plot.html"));  // R-PLOT-0
  // … and says why (issue 8, item 8), in `surge run` and `surge plan`.
  const std::string why =
      "no expected page is written because the target rate 0 RPS is below 0.1 (instant mode, "
      "R-PLOT-0";
  EXPECT_THAT(instant.output, HasSubstr(why));
  const Result instant_plan = RunSurge("plan --num-prompts 10 --output-dir " + out2.string());
  ASSERT_EQ(instant_plan.exit_code, 0) << instant_plan.output;
  EXPECT_THAT(instant_plan.output, HasSubstr(why));
  EXPECT_THAT(plan.output, HasSubstr("expected page: "));
  const RunFolderReport report = CheckRunFolder(f2, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 20u);

  // One request: no rate from one point (issue 8, item 8): "n/a" on the
  // console, null in the summary, no EWMA or rate line on the pages.
  const fs::path out3 = FreshDir("surge_e2e_one");
  const Result one = RunSurge("run --num-prompts 1 --request-rate 5 --workers 1 "
                              "--random-input-len 16 --random-output-len 2 --output-dir " +
                              out3.string());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_THAT(one.output, HasSubstr("Achieved rate, sent (RPS)            n/a"));
  const fs::path f3 = ResultsFolder(one.output);
  const RunFolderReport one_report = CheckRunFolder(f3, "synthetic");
  EXPECT_TRUE(one_report.summary["achieved_rate_rps"].is_null());
  std::ifstream fig_in(f3 / "synthetic_rps_distribution_plot_with_actual_rps.json");
  const nlohmann::json fig = nlohmann::json::parse(fig_in);
  for (const auto& tr : fig["data"]) {
    const std::string name = tr["name"];
    if (name == "20-point EWMA" || name == "Achieved Rate" || name == "Intended Rate") {
      EXPECT_TRUE(tr["x"].empty()) << name;
    }
  }
}

// R-ACT-1 and R-OUT-1: Ctrl-C mid-run drains, records every request exactly
// once (the unsent ones as not_sent: interrupted), writes the summary and the
// actual page, and exits 130; `surge report` then rebuilds both pages and the
// summary from the files alone.
TEST(EndToEndTest, InterruptLeavesEverythingReadableAndReportRebuildsIt) {
  const fs::path out = FreshDir("surge_e2e_interrupt");
  const fs::path log = fs::path(::testing::TempDir()) / "interrupt.log";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen(log.c_str(), "w", stdout);
    freopen(log.c_str(), "a", stderr);
    execl(kSurge.c_str(), kSurge.c_str(), "run", "--num-prompts", "400", "--request-rate", "40",
          "--workers", "2", "--random-input-len", "32", "--random-output-len", "4",
          "--output-dir", out.c_str(), nullptr);
    _exit(127);
  }
  // Interrupt once requests are flowing (about 3 s into a 10 s run).
  usleep(3500000);
  kill(pid, SIGINT);
  int status = 0;
  for (int i = 0; i < 300 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(100000);
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "surge did not stop within 30 s of SIGINT";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  const fs::path folder = ResultsFolder(ss.str());
  ASSERT_FALSE(folder.empty()) << ss.str();
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.records, 400u);
  EXPECT_GT(report.ok, 50u);
  EXPECT_LT(report.ok, 350u);
  EXPECT_EQ(report.summary["run"]["interrupted"], true);
  EXPECT_GT(report.summary["requests"]["not_sent"].get<int>(), 0);
  const fs::path actual = folder / "synthetic_rps_distribution_plot_with_actual_rps.html";
  ASSERT_TRUE(fs::exists(actual));

  // Rebuild from the files alone.
  const auto size_before = fs::file_size(actual);
  fs::remove(actual);
  fs::remove(folder / "synthetic.json");
  fs::remove(folder / "synthetic_rps_distribution_plot.html");
  const Result rebuilt = RunSurge("report " + folder.string());
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.output;
  EXPECT_TRUE(fs::exists(folder / "synthetic_rps_distribution_plot.html"));
  ASSERT_TRUE(fs::exists(actual));
  EXPECT_EQ(fs::file_size(actual), size_before);
  const RunFolderReport again = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(again.problems.empty()) << again.Describe();
  EXPECT_EQ(again.ok, report.ok);
  EXPECT_EQ(again.summary["achieved_rate_rps"], report.summary["achieved_rate_rps"]);
  EXPECT_EQ(again.summary["lateness_s"], report.summary["lateness_s"]);

  // A folder without a plan is a clear configuration error.
  const Result wrong = RunSurge("report " + out.string());
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.output, HasSubstr("no {dataset}_plan.csv"));
}

}  // namespace
}  // namespace surge::testing
