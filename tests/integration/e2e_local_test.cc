// End-to-end: the real `surge` binary with its local worker processes and the
// simulated server, all on 127.0.0.1 (R-UI-1, R-DIST-1..5, R-OUT-1/2,
// R-CFG-1). Every run is bounded: few requests, and `timeout` around each
// process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/run_folder_check.h"
#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;


TEST(EndToEndTest, TwoWorkersAgainstBuiltInServer) {
  const fs::path out = AbsentDir("surge_e2e_builtin");
  const Result r = RunSurge("run --num-prompts 200 --request-rate 40 --burstiness 0.5 --workers 2 "
                       "--random-input-len 64 --random-output-len 8 --sim-ttft-ms 5 "
                       "--sim-itl-ms 1 --seed 3 --output-dir " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path folder = ResultsFolder(r.output);
  // R-PLOT-1 layout: {output}/{YYYYMMDD_HHMMSS}/performances/{model}/
  EXPECT_EQ(folder.parent_path().filename(), "performances");
  EXPECT_EQ(folder.filename(), "surge-sim");
  EXPECT_TRUE(std::regex_match(folder.parent_path().parent_path().filename().string(),
                               std::regex("\\d{8}_\\d{6}Z(_\\d+)?")));
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

  // Distinct titles with units and the run context on both
  // pages.
  for (const char* name : {"synthetic_rps_distribution_plot.html",
                           "synthetic_rps_distribution_plot_with_actual_rps.html"}) {
    std::ifstream in(folder / name);
    std::stringstream page;
    page << in.rdbuf();
    const bool actual = std::string(name).find("actual") != std::string::npos;
    EXPECT_THAT(page.str(), HasSubstr(std::string("Target Rate: 40 RPS") +
                                      (actual ? " — actual</title>" : " — expected</title>")));
    // The built-in server by name, not by this run's port (which run_config.json
    // leaves out), so `surge report` shows the same.
    EXPECT_THAT(page.str(), HasSubstr("<th>Model</th><td>surge-sim</td><th>Server</th>"
                                      "<td>surge's built-in simulated server"));
    EXPECT_THAT(page.str(), HasSubstr("<th>Requests (N)</th><td>200</td><th>Seed</th><td>3</td>"));
    EXPECT_THAT(page.str(), HasSubstr("<th>Workers</th><td>2</td>"));
    EXPECT_THAT(page.str(), HasSubstr("<th>surge version</th><td>"));
  }
  EXPECT_TRUE(report.summary["run"]["surge_version"].is_string());
}

// R-DIST-3: --assign least-loaded runs to the end through
// the binary, every request has one record, every worker took a share (equal
// loads rotate), and the choice is in run_config.json, the summary's run
// block and the pages.
TEST(EndToEndTest, LeastLoadedAssignmentRecordsEveryRequest) {
  const fs::path out = AbsentDir("surge_e2e_least_loaded");
  const Result r = RunSurge(
      "run --assign least-loaded --num-prompts 150 --request-rate 60 "
      "--workers 3 --random-input-len 16 --random-output-len 4 "
      "--sim-ttft-ms 2 --sim-itl-ms 1 --seed 9 --output-dir " +
      out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path folder = ResultsFolder(r.output);
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.planned, 150u);
  EXPECT_EQ(report.records, 150u);
  EXPECT_EQ(report.ok, 150u);
  EXPECT_EQ(report.summary["run"]["assign"], "least-loaded");
  std::ifstream details(folder / "synthetic_details.jsonl");
  std::map<int, int> per_worker;
  std::set<uint64_t> indexes;
  std::string line;
  while (std::getline(details, line)) {
    const auto j = nlohmann::json::parse(line);
    ++per_worker[j["worker"].get<int>()];
    indexes.insert(j["index"].get<uint64_t>());
  }
  EXPECT_EQ(indexes.size(), 150u);
  ASSERT_EQ(per_worker.size(), 3u);
  for (const auto& [worker, count] : per_worker) EXPECT_GE(count, 20) << "worker " << worker;
  std::ifstream saved_in(folder / "run_config.json");
  std::stringstream saved;
  saved << saved_in.rdbuf();
  EXPECT_THAT(saved.str(), HasSubstr("\"assign\": \"least-loaded\""));
  std::ifstream page_in(folder / "synthetic_rps_distribution_plot_with_actual_rps.html");
  std::stringstream page;
  page << page_in.rdbuf();
  EXPECT_THAT(page.str(),
              HasSubstr("<th>Assignment</th><td>least-loaded (fewest outstanding requests)</td>"));
}

TEST(EndToEndTest, ExternalServerAndBadConfigsSendNothing) {
  // An external sim server, as a real vLLM/SGLang target would be.
  const fs::path log = fs::path(::testing::TempDir()) / "sim_server.log";
  const SimServerProcess server = StartSimServerProcess({"--ttft-ms", "2", "--itl-ms", "1"}, log);
  ASSERT_TRUE(SimServerUp(server));
  const std::string& port = server.port;
  const std::string url = "http://127.0.0.1:" + port;

  // Every shared error case: exit 2, the field named, no run folder, nothing sent.
  std::ifstream cases_in(fs::path(SURGE_SOURCE_DIR) / "tests/testdata/traffic_cases.json");
  const nlohmann::json cases = nlohmann::json::parse(cases_in);
  for (const auto& c : cases["error_cases"]) {
    const fs::path out = AbsentDir("surge_e2e_bad_" + c["id"].get<std::string>());
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
  // Several answers per request (n = 2) are refused at
  // start, before anything is sent (the server's count below says so).
  const fs::path n2_out = AbsentDir("surge_e2e_n2");
  const Result n2 = RunSurge("run --extra-body '{\"n\":2}' --num-prompts 4 --base-url " + url +
                             " --output-dir " + n2_out.string());
  EXPECT_EQ(n2.exit_code, 2) << n2.output;
  EXPECT_THAT(n2.output, HasSubstr("sets \"n\": 2; surge measures one answer per request"));
  EXPECT_FALSE(fs::exists(n2_out));

  const fs::path out = AbsentDir("surge_e2e_external");
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
  const fs::path out = AbsentDir("surge_e2e_plan");
  const Result plan = RunSurge("plan --num-prompts 1000 --ramp-up-strategy exponential "
                          "--ramp-up-start-rps 1 --ramp-up-end-rps 64 --burstiness 2 --output-dir " +
                          out.string());
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  const fs::path folder = ResultsFolder(plan.output);
  EXPECT_TRUE(fs::exists(folder / "synthetic_plan.csv"));
  EXPECT_TRUE(fs::exists(folder / "synthetic_rps_distribution_plot.html"));
  EXPECT_FALSE(fs::exists(folder / "synthetic_details.jsonl"));

  const fs::path out2 = AbsentDir("surge_e2e_instant");
  const Result instant = RunSurge("run --num-prompts 20 --workers 2 --random-input-len 16 "
                             "--random-output-len 2 --output-dir " + out2.string());
  ASSERT_EQ(instant.exit_code, 0) << instant.output;
  const fs::path f2 = ResultsFolder(instant.output);
  EXPECT_FALSE(fs::exists(f2 / "synthetic_rps_distribution_plot.html"));  // R-PLOT-0
  // … and says why, in `surge run` and `surge plan`.
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

  // One request: no rate from one point: "n/a" on the
  // console, null in the summary, no EWMA or rate line on the pages.
  const fs::path out3 = AbsentDir("surge_e2e_one");
  const Result one = RunSurge(
      "run --num-prompts 1 --request-rate 5 --workers 1 "
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
  const fs::path out = AbsentDir("surge_e2e_interrupt");
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

  // Rebuild from the files alone. Of the summary only its "run" block is
  // kept: the facts that only the coordinator knew (how the run ended, the
  // run id, the workers); everything else is recomputed from the records.
  const auto size_before = fs::file_size(actual);
  fs::remove(actual);
  {
    const nlohmann::json run_only = {{"run", report.summary["run"]}};
    std::ofstream(folder / "synthetic.json") << run_only.dump();
  }
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

  EXPECT_EQ(again.summary["requests"], report.summary["requests"]);
  EXPECT_EQ(again.summary["run"]["stop_reason"], report.summary["run"]["stop_reason"]);

  // A folder without a plan is a clear configuration error.
  const Result wrong = RunSurge("report " + out.string());
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.output, HasSubstr("no {dataset}_plan.csv"));
}

// Against a server whose answers take 4 s, Ctrl-C and Ctrl-C
// again 1 s later: exit 130 within about a second of the second one; the
// requests on the wire are `interrupted` with their send time, the
// never-released ones `not_sent`; the summary counts match the records and
// cover every sent request; "interrupted by the user at X s" is printed and
// stored in the summary JSON and on the actual page.
TEST(EndToEndTest, SecondInterruptCutsOffInflightRequestsAndKeepsWhatIsKnown) {
  const fs::path dir = FreshDir("surge_e2e_cutoff");
  const SimServerProcess server =
      StartSimServerProcess({"--ttft-ms", "4000", "--itl-ms", "1"}, dir / "server.log");
  ASSERT_TRUE(SimServerUp(server));
  const fs::path log = dir / "run.log";
  const pid_t pid = SpawnSurge(
      {"run", "--base-url", "http://127.0.0.1:" + server.port, "--model", "m", "--num-prompts",
       "400", "--request-rate", "20", "--workers", "2", "--random-input-len", "16",
       "--random-output-len", "4", "--output-dir", (dir / "out").string()},
      log);
  ASSERT_GT(pid, 0);
  // Wait for the start, then let about 2.5 s of requests go out (none can
  // finish: the first token takes 4 s).
  WaitForText(log, "started 400 requests", 10000);
  usleep(2500000);
  kill(pid, SIGINT);
  usleep(1000000);
  const auto second = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  for (int i = 0; i < 200 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(50000);
  const auto ended = std::chrono::steady_clock::now();
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    StopProcess(server.pid);
    FAIL() << "surge did not stop within 10 s of the second SIGINT\n" << ReadText(log);
  }
  StopProcess(server.pid);
  const std::string output = ReadText(log);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 130) << output;
  // About 1 s after the second Ctrl-C, with slack for a loaded machine.
  EXPECT_LT(ended - second, std::chrono::milliseconds(2500)) << output;
  EXPECT_THAT(output,
              ::testing::ContainsRegex("Run interrupted by the user at [0-9]+\\.[0-9]{2} s"));

  const fs::path folder = ResultsFolder(output);
  ASSERT_FALSE(folder.empty()) << output;
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.records, 400u);
  EXPECT_EQ(report.ok, 0u);  // nothing could finish within 4 s
  std::map<std::string, int> by_status;
  int sent = 0;
  std::ifstream details(folder / "synthetic_details.jsonl");
  std::string line;
  while (std::getline(details, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const std::string st = j["status"];
    ++by_status[st];
    if (st == "interrupted") {
      EXPECT_TRUE(j["actual_offset_s"].is_number()) << line;
      EXPECT_TRUE(j["interrupted_offset_s"].is_number()) << line;
      EXPECT_GT(j["interrupted_offset_s"].get<double>(), j["actual_offset_s"].get<double>());
      EXPECT_EQ(j["error"], "interrupted: cut_off_at_stop") << line;
      ++sent;
    } else {
      EXPECT_EQ(st, "not_sent") << line;
      EXPECT_TRUE(j["actual_offset_s"].is_null()) << line;
    }
  }
  EXPECT_EQ(by_status["lost"], 0);
  // ~2.5-3 s at 20 RPS were on the wire.
  EXPECT_GT(by_status["interrupted"], 30) << output;
  EXPECT_LT(by_status["interrupted"], 120) << output;
  EXPECT_EQ(by_status["interrupted"] + by_status["not_sent"], 400);
  const nlohmann::json& s = report.summary;
  EXPECT_EQ(s["requests"]["interrupted"], by_status["interrupted"]);
  EXPECT_EQ(s["requests"]["not_sent"], by_status["not_sent"]);
  EXPECT_EQ(s["requests"]["sent"], sent);
  EXPECT_EQ(s["requests"]["lost"], 0);
  // Rates and concurrency cover every sent request.
  EXPECT_NEAR(s["achieved_rate_rps"].get<double>(), 20.0, 1.0);
  EXPECT_GE(s["max_concurrency"].get<int>(), sent - 2);
  EXPECT_EQ(s["lateness_s"]["count"], sent);
  EXPECT_EQ(s["run"]["interrupted"], true);
  const double at_s = s["run"]["interrupted_at_s"].get<double>();
  EXPECT_GT(at_s, 1.5);
  EXPECT_LT(at_s, 6.0);
  EXPECT_THAT(s["run"]["stop_reason"].get<std::string>(),
              ::testing::StartsWith("interrupted by the user at "));
  EXPECT_THAT(output, HasSubstr(s["run"]["stop_reason"].get<std::string>()));
  const std::string page =
      ReadText(folder / "synthetic_rps_distribution_plot_with_actual_rps.html");
  EXPECT_THAT(page,
              HasSubstr("<p id=\"surge-note\">Run " + s["run"]["stop_reason"].get<std::string>()));
}

// R-UI-5: a target that does not accept connections fails at once
// (exit 1, nothing sent, no run folder) even with --model given; one that
// answers 404 at /v1/models is fine (that is not a connect failure).
TEST(EndToEndTest, UnreachableTargetFailsFastEvenWithModelGiven) {
  const fs::path out = AbsentDir("surge_e2e_unreachable");
  // A port that was free a moment ago: nothing listens there.
  int port = 0;
  {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    close(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  const Result r =
      RunSurge("run --base-url http://127.0.0.1:" + std::to_string(port) +
                   " --model m --num-prompts 2000 --request-rate 1 --output-dir " + out.string(),
               60);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot reach http://127.0.0.1:" + std::to_string(port) +
                                  "/v1/models: connect: Connection refused"));
  EXPECT_FALSE(fs::exists(out));
}

// --workers far beyond the cores is capped with a warning
// (at 4 per core, and at the number of requests), and the run is clean.
TEST(EndToEndTest, TooManyWorkersAreCappedWithAWarning) {
  const fs::path out = AbsentDir("surge_e2e_workers_cap");
  const Result r = RunSurge(
      "run --workers 300 --num-prompts 6 --request-rate 20 "
      "--random-input-len 8 --random-output-len 2 --output-dir " +
          out.string(),
      120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned cap = std::min(4 * cores, 6u);
  EXPECT_THAT(r.output, HasSubstr("WARNING --workers 300 capped at " + std::to_string(cap)));
  EXPECT_THAT(r.output, HasSubstr("started 6 requests on " + std::to_string(cap) + " workers"));
  const RunFolderReport report = CheckRunFolder(ResultsFolder(r.output), "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 6u);
  EXPECT_EQ(report.summary["run"]["workers"], cap);
  EXPECT_EQ(report.summary["run"]["workers_lost"], 0);
  EXPECT_EQ(report.summary["run"]["send_unknown"], 0);
  EXPECT_EQ(report.summary["run"]["stop_reason"], "completed");
}

// Without --workers the count comes from the usable CPUs: pinned to one CPU
// (the affinity mask the child inherits), surge runs one worker and says
// why; asking for 2 there is a warning naming the effect.
TEST(EndToEndTest, WorkerCountFollowsTheAffinityMask) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const fs::path out = AbsentDir("surge_e2e_workers_auto");
  const std::string common =
      "run --num-prompts 6 --request-rate 20 --random-input-len 8 --random-output-len 2 "
      "--output-dir " +
      out.string();
  const Result chosen = RunSurge(common, 120);
  const Result asked = RunSurge(common + " --workers 2", 120);
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  ASSERT_EQ(chosen.exit_code, 0) << chosen.output;
  EXPECT_THAT(chosen.output, HasSubstr("INFO workers: 1 (1 usable CPU (affinity 1, "));
  EXPECT_THAT(chosen.output, HasSubstr("the plan's peak 20 RPS needs 1 at 10000 RPS per worker"));
  EXPECT_THAT(chosen.output, HasSubstr("started 6 requests on 1 workers"));
  EXPECT_THAT(chosen.output, ::testing::Not(HasSubstr("busy threads (a spinning pacer")));
  const RunFolderReport report = CheckRunFolder(ResultsFolder(chosen.output), "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.summary["run"]["workers"], 1);
  ASSERT_EQ(asked.exit_code, 0) << asked.output;
  EXPECT_THAT(asked.output, HasSubstr("WARNING --workers 2 runs 4 busy threads (a spinning pacer "
                                      "and an I/O thread each) on 1 usable CPU"));
  EXPECT_THAT(asked.output, HasSubstr("started 6 requests on 2 workers"));
}

// A worker that dies holding requests makes them `lost`;
// the console says how many workers were lost and the run exits 1 (its
// numbers are incomplete), with every file written.
TEST(EndToEndTest, LostRequestsAreReportedAndExitOne) {
  const fs::path dir = FreshDir("surge_e2e_worker_killed");
  const SimServerProcess server =
      StartSimServerProcess({"--ttft-ms", "1500", "--itl-ms", "1"}, dir / "server.log");
  ASSERT_TRUE(SimServerUp(server));
  const fs::path log = dir / "run.log";
  const pid_t pid = SpawnSurge(
      {"run", "--base-url", "http://127.0.0.1:" + server.port, "--model", "m", "--num-prompts",
       "60", "--request-rate", "20", "--workers", "2", "--random-input-len", "16",
       "--random-output-len", "2", "--output-dir", (dir / "out").string()},
      log);
  ASSERT_GT(pid, 0);
  WaitForText(log, "started 60 requests", 10000);
  usleep(1000000);  // ~20 requests out, none answered yet (1.5 s to the first token)
  // Worker 1 is the surge child whose command line says "--worker-index 1".
  pid_t victim = -1;
  std::istringstream children(
      ReadText("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  for (pid_t child; children >> child;) {
    std::string cmdline = ReadText("/proc/" + std::to_string(child) + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("worker --connect") != std::string::npos &&
        cmdline.find("--worker-index 1 ") != std::string::npos) {
      victim = child;
    }
  }
  ASSERT_GT(victim, 0) << "worker 1 not found among surge's children";
  kill(victim, SIGKILL);
  int status = 0;
  for (int i = 0; i < 300 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(100000);
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  StopProcess(server.pid);
  const std::string output = ReadText(log);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  const fs::path folder = ResultsFolder(output);
  ASSERT_FALSE(folder.empty()) << output;
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.records, 60u);
  const nlohmann::json& s = report.summary;
  const int lost = s["requests"]["lost"].get<int>();
  EXPECT_GT(lost, 0) << output;
  EXPECT_EQ(s["run"]["workers_lost"], 1);
  EXPECT_EQ(s["run"]["send_unknown"], lost);
  EXPECT_THAT(output, HasSubstr("workers lost: 1, reassigned: " +
                                std::to_string(s["run"]["reassigned"].get<int>()) +
                                ", send_unknown: " + std::to_string(lost)));
  EXPECT_THAT(output, HasSubstr(std::to_string(lost) + " requests are lost"));
  // The loss itself, with when, why and the three-way split, in the
  // summary, under the table and on the actual page (nothing else in this
  // run ends lost or not sent).
  ASSERT_EQ(s["run"]["worker_losses"].size(), 1u) << s["run"].dump();
  const nlohmann::json& loss = s["run"]["worker_losses"][0];
  EXPECT_EQ(loss["worker"], 1);
  EXPECT_EQ(loss["why"], "process exited");
  EXPECT_EQ(loss["send_unknown"], lost);
  EXPECT_EQ(loss["not_sent"], s["requests"]["not_sent"]);
  EXPECT_EQ(loss["reassigned"], s["run"]["reassigned"]);
  EXPECT_GT(loss["at_s"].get<double>(), 0.0);  // killed ~1 s into the 3 s plan
  EXPECT_LT(loss["at_s"].get<double>(), 3.0);
  const std::string counts = std::to_string(lost) + " send_unknown, " +
                             std::to_string(loss["not_sent"].get<int>()) + " not sent, " +
                             std::to_string(loss["reassigned"].get<int>()) + " moved";
  EXPECT_THAT(output, HasSubstr(" s (process exited): " + counts + " to the others\n"));
  EXPECT_THAT(output, HasSubstr("worker 1 lost at "));
  const std::string page =
      ReadText(folder / "synthetic_rps_distribution_plot_with_actual_rps.html");
  EXPECT_THAT(page, HasSubstr("<div id=\"surge-events\"><b>During the run:</b><ul>\n<li>worker 1 "
                              "lost at "));
  EXPECT_THAT(page, HasSubstr("\"text\":\"worker 1 lost: " + counts + "\""));
}

}  // namespace
}  // namespace surge::testing
