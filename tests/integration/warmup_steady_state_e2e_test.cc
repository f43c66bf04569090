// Warm-up and steady state through the real binary (docs/DATASETS.md
// "Warm-up and steady state"): warm-ups go before t0 (on the wire, in a
// `surge sim-server`'s request log, before every planned request), are
// recorded and marked, and are in no count or metric; a steady-state window
// limits the latency metrics to the requests planned inside it (the
// expected N from the plan CSV) and is shaded on both pages; bad windows
// exit 2 with nothing sent. Every run is small and bounded by `timeout`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<nlohmann::json> JsonLines(const fs::path& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

nlohmann::json JsonFile(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// The request indices of the POSTs a sim server read, in the order read.
std::vector<uint64_t> PostedIndices(const fs::path& log) {
  std::vector<uint64_t> out;
  for (const nlohmann::json& j : JsonLines(log)) {
    if (j["method"] != "POST") continue;
    const std::string tag = j["surge_request"].get<std::string>();  // "INDEX/ATTEMPT"
    out.push_back(std::stoull(tag.substr(0, tag.find('/'))));
  }
  return out;
}

// The plan CSV's offset_s column.
std::vector<double> PlanOffsets(const fs::path& csv) {
  std::vector<double> out;
  std::istringstream rows(ReadText(csv));
  std::string line;
  std::getline(rows, line);  // header: index,rate_rps,interval_s,offset_s,anomaly
  while (std::getline(rows, line)) {
    std::vector<std::string> cells;
    std::stringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
    out.push_back(std::stod(cells.at(3)));
  }
  return out;
}

// Whether a figure JSON's layout has a rect shape from x0 to x1.
bool HasBand(const nlohmann::json& figure, double x0, double x1) {
  for (const nlohmann::json& s : figure["layout"]["shapes"]) {
    if (s["type"] == "rect" && s["x0"].get<double>() == x0 && s["x1"].get<double>() == x1) {
      return true;
    }
  }
  return false;
}

void StopServer(const SimServerProcess& s) {
  if (s.pid <= 0) return;
  kill(s.pid, SIGTERM);
  waitpid(s.pid, nullptr, 0);
}

TEST(WarmupSteadyStateTest, WarmupsGoFirstAndCountNowhere) {
  const fs::path dir = FreshDir("surge_warmup");
  const fs::path log = dir / "requests.jsonl";
  const SimServerProcess server = StartSimServerProcess(
      {"--ttft-ms", "2", "--itl-ms", "1", "--request-log", log.string()}, dir / "server.log");
  if (server.port.empty()) {
    StopServer(server);
    FAIL() << "sim server did not start: " << ReadText(dir / "server.log");
  }
  const std::string target = " --base-url http://127.0.0.1:" + server.port;
  const Result run = RunSurge(
      "run --num-warmups 10 --num-prompts 100 --request-rate 50 --workers 2 "
      "--random-input-len 32 --random-output-len 4 --seed 3" +
      target + " --output-dir " + (dir / "out").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const fs::path folder = ResultsFolder(run.output);

  // 110 records: the plan's 0..99 and the warm-ups 100..109, marked, sent
  // before t0.
  const std::vector<nlohmann::json> records = JsonLines(folder / "synthetic_details.jsonl");
  ASSERT_EQ(records.size(), 110u);
  int warmups = 0;
  for (const nlohmann::json& r : records) {
    const uint64_t index = r["index"].get<uint64_t>();
    if (r.value("warmup", false)) {
      ++warmups;
      EXPECT_GE(index, 100u);
      EXPECT_EQ(r["status"], "ok") << r.dump();
      EXPECT_LT(r["actual_offset_s"].get<double>(), 0) << r.dump();
      EXPECT_LT(r["planned_offset_s"].get<double>(), 0) << r.dump();
    } else {
      EXPECT_LT(index, 100u);
      EXPECT_GE(r["planned_offset_s"].get<double>(), 0);
    }
  }
  EXPECT_EQ(warmups, 10);

  // The summary counts the plan's 100 only.
  const nlohmann::json summary = JsonFile(folder / "synthetic.json");
  EXPECT_EQ(summary["requests"]["total"], 100);
  EXPECT_EQ(summary["requests"]["sent"], 100);
  EXPECT_EQ(summary["metrics"]["TTFT"]["N"], 100);
  EXPECT_EQ(summary["metrics"]["E2EL"]["N"], 100);
  EXPECT_EQ(summary["warmups"]["requests"], 10);
  EXPECT_FALSE(summary.contains("steady_state"));

  // On the wire: every warm-up was read before every planned request.
  const std::vector<uint64_t> posted = PostedIndices(log);
  ASSERT_EQ(posted.size(), 110u);
  for (size_t k = 0; k < 10; ++k) EXPECT_GE(posted[k], 100u) << "position " << k;
  for (size_t k = 10; k < posted.size(); ++k) EXPECT_LT(posted[k], 100u) << "position " << k;

  // The actual page has the warm-up band before 0, the expected page none.
  const nlohmann::json actual =
      JsonFile(folder / "synthetic_rps_distribution_plot_with_actual_rps.json");
  bool band = false;
  for (const nlohmann::json& s : actual["layout"]["shapes"]) {
    band |= s["type"] == "rect" && s["x0"].get<double>() < 0 && s["x1"].get<double>() == 0;
  }
  EXPECT_TRUE(band);

  // The plan CSV is the one of a run without warm-ups, byte for byte.
  const Result plain = RunSurge(
      "plan --num-prompts 100 --request-rate 50 --random-input-len 32 --random-output-len 4 "
      "--seed 3 --output-dir " +
      (dir / "plain").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(ReadText(ResultsFolder(plain.output) / "synthetic_plan.csv"),
            ReadText(folder / "synthetic_plan.csv"));

  // Bad windows: exit 2, the field named, nothing sent, no folder.
  // (A run asks /v1/models first: only POSTs are requests.)
  const size_t posts_before = PostedIndices(log).size();
  for (const std::string bad : {"0.9:0.1", "5:5", "-1:2", "abc:1", "100:200"}) {
    const Result r = RunSurge("run --num-prompts 100 --request-rate 50 --steady-state-s=" + bad +
                              target + " --output-dir " + (dir / "bad").string());
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("steady_state_s = \"" + bad + "\"")) << r.output;
    EXPECT_THAT(r.output, HasSubstr("(flag --steady-state-s)")) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "bad"));
  EXPECT_EQ(PostedIndices(log).size(), posts_before);
  StopServer(server);
}

TEST(WarmupSteadyStateTest, SteadyStateLimitsTheLatencyMetricsAndIsShaded) {
  const fs::path dir = AbsentDir("surge_steady");
  const Result run = RunSurge(
      "run --num-prompts 100 --request-rate 50 --burstiness 0.5 --workers 2 "
      "--random-input-len 32 --random-output-len 4 --sim-ttft-ms 2 --sim-itl-ms 1 --seed 4 "
      "--steady-state-s 0.2:0.8 --output-dir " +
      (dir / "out").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const fs::path folder = ResultsFolder(run.output);
  const std::vector<double> offsets = PlanOffsets(folder / "synthetic_plan.csv");
  ASSERT_EQ(offsets.size(), 100u);
  const double start = 0.2 * offsets.back();
  const double end = 0.8 * offsets.back();
  uint64_t inside = 0;
  for (double t : offsets) inside += t >= start && t < end;
  ASSERT_GT(inside, 0u);
  ASSERT_LT(inside, 100u);

  const nlohmann::json summary = JsonFile(folder / "synthetic.json");
  EXPECT_EQ(summary["requests"]["total"], 100);
  EXPECT_EQ(summary["requests"]["succeeded"], 100);
  EXPECT_EQ(summary["metrics"]["TTFT"]["N"], inside);
  EXPECT_EQ(summary["metrics"]["E2EL"]["N"], inside);
  EXPECT_EQ(summary["metrics"]["SendLateness"]["N"], 100);
  EXPECT_EQ(summary["steady_state"]["window"], "0.2:0.8");
  EXPECT_EQ(summary["steady_state"]["planned_requests"], inside);
  EXPECT_EQ(summary["steady_state"]["start_s"].get<double>(), start);
  EXPECT_EQ(summary["steady_state"]["end_s"].get<double>(), end);
  EXPECT_EQ(JsonLines(folder / "synthetic_details.jsonl").size(), 100u);
  EXPECT_THAT(run.output, HasSubstr("Steady state 0.2:0.8"));

  // Both pages shade the window.
  EXPECT_TRUE(HasBand(JsonFile(folder / "synthetic_rps_distribution_plot.json"), start, end));
  EXPECT_TRUE(HasBand(
      JsonFile(folder / "synthetic_rps_distribution_plot_with_actual_rps.json"), start, end));
}

}  // namespace
}  // namespace surge::testing
