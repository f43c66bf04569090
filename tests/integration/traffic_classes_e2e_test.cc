// Traffic classes through the real binary and its built-in server
// (docs/TRAFFIC.md "Traffic classes"): a short version of the docs' two
// classes (chat: 20 RPS, Gamma(0.5), model base; batch: a 1 → 10 RPS ramp,
// model lora-a) gives one record per planned request with its class and
// its class's model, a summary block per class, a trace per class on both
// pages, the same plan from `surge
// plan` twice, and an exact replay with --plan-file; a class without a rate
// and two classes with one name stop before anything is sent (exit 2). All
// traffic stays on 127.0.0.1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/surge_process.h"
#include "tests/testing/temp_dir.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// 3 s of each class: about 60 chat and 16 batch requests.
constexpr char kShortClasses[] = R"(seed: 3
random_input_len: 32
random_output_len: 4
sim_ttft_ms: 1
sim_itl_ms: 0.1
classes:
  - name: chat
    request_rate: 20
    num_prompts: 60
    model: base
    traffic_cfg: {burstiness: 0.5}
  - name: batch
    model: lora-a
    traffic_cfg:
      stages:
        - {duration_s: 3, ramp_up_strategy: linear, ramp_up_start_rps: 1, ramp_up_end_rps: 10}
)";

fs::path WriteConfig(const fs::path& dir, const std::string& name, const std::string& yaml) {
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << yaml;
  return path;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The plan CSV's class column, row by row.
std::vector<std::string> PlanClasses(const fs::path& csv) {
  std::vector<std::string> out;
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "index,rate_rps,interval_s,offset_s,anomaly,class");
  while (std::getline(in, line)) out.push_back(line.substr(line.rfind(',') + 1));
  return out;
}

std::map<uint64_t, nlohmann::json> DetailsByIndex(const fs::path& folder) {
  std::map<uint64_t, nlohmann::json> out;
  std::ifstream in(folder / "synthetic_details.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    const uint64_t index = j["index"].get<uint64_t>();
    out[index] = std::move(j);
  }
  return out;
}

// "<legend> <name>" of every trace of a page's figure JSON.
std::vector<std::string> TraceNames(const fs::path& json) {
  std::ifstream in(json);
  const nlohmann::json figure = nlohmann::json::parse(in);
  std::vector<std::string> out;
  for (const nlohmann::json& t : figure["data"]) {
    out.push_back(t["legend"].get<std::string>() + " " + t["name"].get<std::string>());
  }
  return out;
}

TEST(TrafficClassesEndToEndTest, EveryRequestHasItsClassAndModel) {
  const fs::path dir = AbsentDir("surge_classes_e2e");
  const fs::path config = WriteConfig(dir, "classes.yaml", kShortClasses);
  const Result r = RunSurge("run --config " + config.string() + " --workers 1 --output-dir " +
                            (dir / "runs").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2 traffic classes merged by time: chat 60 requests"));
  EXPECT_THAT(r.output, HasSubstr("class chat (model base)"));
  EXPECT_THAT(r.output, HasSubstr("class batch (model lora-a)"));
  const fs::path folder = ResultsFolder(r.output);
  const std::vector<std::string> planned = PlanClasses(folder / "synthetic_plan.csv");
  const auto details = DetailsByIndex(folder);
  ASSERT_EQ(details.size(), planned.size());
  std::map<std::string, int> per_class;
  for (size_t i = 0; i < planned.size(); ++i) {
    const nlohmann::json& d = details.at(i);
    EXPECT_EQ(d["status"], "ok") << d.dump();
    EXPECT_EQ(d["class"], planned[i]) << i;
    EXPECT_EQ(d["model"], planned[i] == "chat" ? "base" : "lora-a") << i;
    ++per_class[planned[i]];
  }
  EXPECT_EQ(per_class["chat"], 60);
  EXPECT_NEAR(per_class["batch"], 16.5, 1);
  // A summary block per class, its counts those of the records.
  std::ifstream in(folder / "synthetic.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  ASSERT_EQ(summary["classes"].size(), 2u);
  EXPECT_EQ(summary["classes"][0]["name"], "chat");
  EXPECT_EQ(summary["classes"][0]["requests"]["succeeded"], per_class["chat"]);
  EXPECT_EQ(summary["classes"][1]["name"], "batch");
  EXPECT_EQ(summary["classes"][1]["requests"]["succeeded"], per_class["batch"]);
  EXPECT_NEAR(summary["classes"][0]["intended_rate_rps"].get<double>(), 20, 10);
  EXPECT_THAT(ReadAll(folder / "synthetic.csv"), HasSubstr("\nbatch,lora-a,"));
  // Both pages draw each class by name: its intended rate on Time vs RPS
  // (and their sum), its achieved and intended rate on the rate chart.
  EXPECT_THAT(TraceNames(folder / "synthetic_rps_distribution_plot.json"),
              ::testing::IsSupersetOf(
                  {"legend chat", "legend batch", "legend All classes: intended rate"}));
  EXPECT_THAT(TraceNames(folder / "synthetic_rps_distribution_plot_with_actual_rps.json"),
              ::testing::IsSupersetOf({"legend chat", "legend batch", "legend5 Achieved Rate",
                                       "legend5 chat: achieved", "legend5 chat: intended",
                                       "legend5 batch: achieved", "legend5 batch: intended"}));

  // An exact replay of the plan keeps every request's class.
  const Result replay = RunSurge("run --config " + config.string() + " --plan-file " +
                                 (folder / "synthetic_plan.csv").string() +
                                 " --workers 1 --output-dir " + (dir / "replay").string());
  ASSERT_EQ(replay.exit_code, 0) << replay.output;
  EXPECT_THAT(replay.output, HasSubstr("every offset equal to the configuration's own plan"));
  const fs::path again = ResultsFolder(replay.output);
  EXPECT_EQ(ReadAll(again / "synthetic_plan.csv"), ReadAll(folder / "synthetic_plan.csv"));
  const auto replayed = DetailsByIndex(again);
  ASSERT_EQ(replayed.size(), planned.size());
  for (size_t i = 0; i < planned.size(); ++i) EXPECT_EQ(replayed.at(i)["class"], planned[i]);
}

TEST(TrafficClassesEndToEndTest, PlanTwiceIsByteIdentical) {
  const fs::path dir = AbsentDir("surge_classes_plan");
  const fs::path config = WriteConfig(dir, "classes.yaml", kShortClasses);
  const Result a =
      RunSurge("plan --config " + config.string() + " --output-dir " + (dir / "a").string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const Result b =
      RunSurge("plan --config " + config.string() + " --output-dir " + (dir / "b").string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::string first = ReadAll(ResultsFolder(a.output) / "synthetic_plan.csv");
  EXPECT_GT(first.size(), 1000u);
  EXPECT_EQ(first, ReadAll(ResultsFolder(b.output) / "synthetic_plan.csv"));
}

TEST(TrafficClassesEndToEndTest, BadClassesStopBeforeAnythingIsSent) {
  const fs::path dir = AbsentDir("surge_classes_bad");
  const fs::path no_rate = WriteConfig(
      dir, "no_rate.yaml", "classes:\n  - {name: chat, request_rate: 5}\n  - {name: batch}\n");
  Result r =
      RunSurge("run --config " + no_rate.string() + " --output-dir " + (dir / "runs").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("classes[1].request_rate = (not set): is required"));
  const fs::path twice = WriteConfig(
      dir, "twice.yaml",
      "classes:\n  - {name: chat, request_rate: 5}\n  - {name: chat, request_rate: 2}\n");
  r = RunSurge("run --config " + twice.string() + " --output-dir " + (dir / "runs").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("classes[1].name = \"chat\": is used twice"));
  EXPECT_FALSE(fs::exists(dir / "runs")) << "a run folder was made";
}

}  // namespace
}  // namespace surge::testing
