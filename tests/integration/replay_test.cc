// Exact replay and the late-send policy through the real binary
// (docs/REPLAY.md, docs/DESIGN.md "Late-send policy"). Two
// simulated servers on 127.0.0.1 log every request they read, with a
// fingerprint of its body; a run against the first, then `surge run
// --plan-file` of that run's plan against the second, must send the same
// bodies for the same request indexes, and plan the same offsets to the
// nanosecond. Every run is small and bounded by `timeout`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "tests/integration/run_folder_check.h"
#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// index → (body_bytes, body_fnv1a64) of every POST in a sim server's
// request log; `posts` counts them (a request read twice would show).
std::map<uint64_t, std::pair<uint64_t, std::string>> BodiesByIndex(const fs::path& log,
                                                                   size_t* posts) {
  std::map<uint64_t, std::pair<uint64_t, std::string>> out;
  std::ifstream in(log);
  std::string line;
  *posts = 0;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["method"] != "POST") continue;
    ++*posts;
    const std::string tag = j["surge_request"].get<std::string>();  // "INDEX/ATTEMPT"
    const uint64_t index = std::stoull(tag.substr(0, tag.find('/')));
    out[index] = {j["body_bytes"].get<uint64_t>(), j["body_fnv1a64"].get<std::string>()};
  }
  return out;
}

// index → planned_offset_s as written in the details file (the double the
// record's planned ns gives).
std::map<uint64_t, double> PlannedByIndex(const fs::path& details) {
  std::map<uint64_t, double> out;
  std::ifstream in(details);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    out[j["index"].get<uint64_t>()] = j["planned_offset_s"].get<double>();
  }
  return out;
}

void StopServer(const SimServerProcess& s) {
  if (s.pid <= 0) return;
  kill(s.pid, SIGTERM);
  waitpid(s.pid, nullptr, 0);
}

TEST(ReplayTest, PlanFileReplaysTheSameRequestsToTheNanosecond) {
  const fs::path dir = FreshDir("surge_replay");
  const fs::path log_a = dir / "a_requests.jsonl";
  const fs::path log_b = dir / "b_requests.jsonl";
  const SimServerProcess a = StartSimServerProcess(
      {"--ttft-ms", "2", "--itl-ms", "1", "--request-log", log_a.string()}, dir / "a.log");
  const SimServerProcess b = StartSimServerProcess(
      {"--ttft-ms", "2", "--itl-ms", "1", "--request-log", log_b.string()}, dir / "b.log");
  if (a.port.empty() || b.port.empty()) {
    StopServer(a);
    StopServer(b);
    FAIL() << "sim servers did not start: " << ReadText(dir / "a.log") << ReadText(dir / "b.log");
  }
  // Bursty offsets and uniform lengths: every request differs in time and size.
  const Result first = RunSurge(
      "run --num-prompts 60 --request-rate 50 --burstiness 0.5 --workers 2 "
      "--random-input-len 48 --random-output-len 4 --random-range-ratio 0.5 --seed 5 "
      "--base-url http://127.0.0.1:" +
      a.port + " --output-dir " + (dir / "out1").string());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const fs::path folder1 = ResultsFolder(first.output);
  const fs::path plan1 = folder1 / "synthetic_plan.csv";

  // Error cases, all against server b: exit 2, the reason named, no run
  // folder, nothing sent (b's log is checked below).
  const std::string to_b =
      " --base-url http://127.0.0.1:" + b.port + " --output-dir " + (dir / "out_bad").string();
  const Result missing = RunSurge("run --plan-file " + (dir / "nope_plan.csv").string() + to_b);
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("nope_plan.csv: no such file (flag --plan-file)"));
  const Result other_seed = RunSurge("run --plan-file " + plan1.string() + " --seed 6" + to_b);
  EXPECT_EQ(other_seed.exit_code, 2) << other_seed.output;
  EXPECT_THAT(other_seed.output, HasSubstr("seed = 6 (flag --seed), but the plan was made with 5"));
  const Result other_n = RunSurge("run --plan-file " + plan1.string() + " --num-prompts 59" + to_b);
  EXPECT_EQ(other_n.exit_code, 2) << other_n.output;
  EXPECT_THAT(other_n.output,
              HasSubstr("num_prompts = 59 (flag --num-prompts), but the plan was made with 60"));
  // A copy of the run folder's plan with a bad field, and one a row short.
  const fs::path copy = dir / "copy";
  fs::create_directories(copy);
  fs::copy_file(folder1 / "run_config.json", copy / "run_config.json");
  {
    std::istringstream rows(ReadText(plan1));
    std::ofstream bad(copy / "bad_plan.csv");
    std::ofstream short_plan(copy / "short_plan.csv");
    std::string line;
    for (int n = 1; std::getline(rows, line); ++n) {
      bad << (n == 5 ? "3,50,0.02,zero,normal" : line) << "\n";
      if (n <= 60) short_plan << line << "\n";  // header + 59 rows
    }
  }
  const Result bad = RunSurge("run --plan-file " + (copy / "bad_plan.csv").string() + to_b);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output,
              HasSubstr("line 5, column 4 (offset_s): \"zero\" is not a finite number"));
  const Result short_run = RunSurge("run --plan-file " + (copy / "short_plan.csv").string() + to_b);
  EXPECT_EQ(short_run.exit_code, 2) << short_run.output;
  EXPECT_THAT(short_run.output,
              HasSubstr("request count mismatch: it has 59 requests, num_prompts is 60"));
  fs::remove(copy / "run_config.json");
  const Result alone = RunSurge("run --plan-file " + (copy / "bad_plan.csv").string() + to_b);
  EXPECT_EQ(alone.exit_code, 2) << alone.output;
  EXPECT_THAT(alone.output, HasSubstr("no run_config.json beside it"));
  EXPECT_FALSE(fs::exists(dir / "out_bad"));

  // The replay: another server, another worker count; the plan's own
  // run_config.json is the configuration.
  const Result second = RunSurge("run --plan-file " + plan1.string() +
                                 " --workers 1 --base-url "
                                 "http://127.0.0.1:" +
                                 b.port + " --output-dir " + (dir / "out2").string());
  StopServer(a);
  StopServer(b);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_THAT(second.output, HasSubstr("exact replay of " + plan1.string() +
                                       ": 60 requests, every offset equal to the "
                                       "configuration's own plan"));
  const fs::path folder2 = ResultsFolder(second.output);
  ASSERT_NE(folder2, folder1);
  const RunFolderReport report = CheckRunFolder(folder2, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 60u);
  EXPECT_EQ(report.summary["run"]["plan_file"], fs::absolute(plan1).string());
  // The same plan, byte for byte, and the same planned offsets per request.
  EXPECT_EQ(ReadText(folder2 / "synthetic_plan.csv"), ReadText(plan1));
  const auto planned1 = PlannedByIndex(folder1 / "synthetic_details.jsonl");
  const auto planned2 = PlannedByIndex(folder2 / "synthetic_details.jsonl");
  ASSERT_EQ(planned1.size(), 60u);
  EXPECT_EQ(planned1, planned2);
  // The same bodies for the same indexes, each read once by each server.
  size_t posts_a = 0, posts_b = 0;
  const auto bodies_a = BodiesByIndex(log_a, &posts_a);
  const auto bodies_b = BodiesByIndex(log_b, &posts_b);
  EXPECT_EQ(posts_a, 60u);
  EXPECT_EQ(posts_b, 60u);
  ASSERT_EQ(bodies_a.size(), 60u);
  EXPECT_EQ(bodies_a, bodies_b);
  std::set<uint64_t> sizes;
  for (const auto& [index, body] : bodies_a) sizes.insert(body.first);
  EXPECT_GT(sizes.size(), 10u) << "the lengths should vary (uniform, ratio 0.5)";
}

// The late-send policy travels to the workers and into every output: a cap
// run completes, run_config.json and the summary's run block name the
// policy, the summary counts late / skipped / delayed (their sum over the
// details' flags), and a bad combination is refused before anything runs.
TEST(LatePolicyTest, PolicyIsSavedCountedAndValidated) {
  const fs::path out = AbsentDir("surge_late_policy");
  const Result r = RunSurge(
      "run --num-prompts 40 --request-rate 40 --workers 2 --random-input-len 16 "
      "--random-output-len 2 --sim-ttft-ms 2 --sim-itl-ms 1 --late-policy cap "
      "--catch-up-rps 400 --late-threshold-ms 20 --output-dir " +
      out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Late / skipped / delayed"));
  const fs::path folder = ResultsFolder(r.output);
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  const std::string saved = ReadText(folder / "run_config.json");
  EXPECT_THAT(saved, HasSubstr("\"late_policy\": \"cap\""));
  EXPECT_THAT(saved, HasSubstr("\"late_threshold_ms\": 20.0"));
  EXPECT_THAT(saved, HasSubstr("\"catch_up_rps\": 400.0"));
  EXPECT_EQ(report.summary["run"]["late_policy"], "cap");
  EXPECT_EQ(report.summary["run"]["late_threshold_ms"], 20.0);
  uint64_t late = 0, delayed = 0, records = 0;
  std::ifstream details(folder / "synthetic_details.jsonl");
  std::string line;
  while (std::getline(details, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ++records;
    late += j["late"].get<bool>();
    delayed += j["catch_up_delay_s"].get<double>() > 0;
  }
  EXPECT_EQ(records, 40u);
  EXPECT_EQ(report.summary["late_sends"]["late"], late);
  EXPECT_EQ(report.summary["late_sends"]["delayed"], delayed);
  EXPECT_EQ(report.summary["late_sends"]["skipped"], 0);

  const Result bad =
      RunSurge("run --num-prompts 5 --catch-up-rps 100 --output-dir " + (out / "bad").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("catch_up_rps = 100: is used only with late_policy \"cap\""));
  const Result no_rate =
      RunSurge("run --num-prompts 5 --late-policy cap --output-dir " + (out / "bad").string());
  EXPECT_EQ(no_rate.exit_code, 2) << no_rate.output;
  EXPECT_THAT(no_rate.output, HasSubstr("catch_up_rps = (not set): is required with late_policy"));
  EXPECT_FALSE(fs::exists(out / "bad"));
}

}  // namespace
}  // namespace surge::testing
