// Exact replay (R-OUT-2, docs/REPLAY.md): a plan CSV reads
// back to the very doubles that were written, so SecondsToNanos gives the
// same ns as the run that wrote it; malformed files are refused naming the
// line and column; the configuration check names every key that would
// change the plan or the payloads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/time_units.h"
#include "coordinator/config/run_config.h"
#include "coordinator/plan/arrival_process.h"  // ResolveTraffic
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/results/run_files.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using ::surge::testing::FreshDir;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path WriteText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Every plan case of the shared traffic cases (tests/testdata, a copy of
// /work/shared/cases): built, written, read back: the same doubles, bit for
// bit, and the same ns offsets; written again: the same bytes.
TEST(PlanFileTest, EverySharedPlanCaseReadsBackToTheNanosecond) {
  std::ifstream cases_in(fs::path(SURGE_SOURCE_DIR) / "tests/testdata/traffic_cases.json");
  const nlohmann::json cases = nlohmann::json::parse(cases_in);
  const fs::path dir = FreshDir("plan_file_cases");
  size_t checked = 0;
  for (const auto& c : cases["plan_cases"]) {
    const std::string id = c["id"].get<std::string>();
    surge::v1::RunConfig config = DefaultRunConfig();
    const fs::path yaml = WriteText(dir / (id + ".yaml"), c["config"].dump());
    ASSERT_TRUE(LoadYamlConfig(yaml.string(), &config).ok()) << id;
    const uint64_t n = c["num_requests"].get<uint64_t>();
    const ResolvedTraffic traffic = ResolveTraffic(config);
    auto plan = BuildArrivalSchedule(traffic, n, config.seed());
    if (!plan.ok()) continue;  // an error case of its own
    const fs::path csv = dir / (id + "_plan.csv");
    ASSERT_TRUE(WritePlanCsv(*plan, csv).ok()) << id;
    auto back = ReadPlanCsv(csv, traffic, config.seed());
    ASSERT_TRUE(back.ok()) << id << ": " << back.status();
    ASSERT_EQ(back->size(), plan->size()) << id;
    for (size_t i = 0; i < plan->size(); ++i) {
      // Bit for bit (also distinguishes -0 and 0, which == would not).
      EXPECT_EQ(std::memcmp(&back->offset_s[i], &plan->offset_s[i], sizeof(double)), 0)
          << id << " row " << i;
      EXPECT_EQ(SecondsToNanos(back->offset_s[i]), SecondsToNanos(plan->offset_s[i]))
          << id << " row " << i;
      EXPECT_EQ(back->rate_rps[i], plan->rate_rps[i]) << id << " row " << i;
      EXPECT_EQ(back->interval_s[i], plan->interval_s[i]) << id << " row " << i;
      EXPECT_EQ(back->anomaly[i], plan->anomaly[i]) << id << " row " << i;
    }
    const fs::path again = dir / (id + "_again.csv");
    ASSERT_TRUE(WritePlanCsv(*back, again).ok());
    EXPECT_EQ(ReadText(again), ReadText(csv)) << id;
    ++checked;
  }
  EXPECT_GE(checked, 5u);
}

// A plan file written by `surge plan` (tests/testdata/replay: 300 requests,
// 40 RPS, burstiness 0.5, seed 11, with its run_config.json): each offset
// is exactly the double its 17-digit text names (strtod), and rebuilding
// the plan from the saved configuration gives the same ns offsets.
TEST(PlanFileTest, ARealPlanFileEqualsItsConfigurationsPlanToTheNanosecond) {
  const fs::path dir = fs::path(SURGE_SOURCE_DIR) / "tests/testdata/replay";
  surge::v1::RunConfig config = DefaultRunConfig();
  ASSERT_TRUE(LoadYamlConfig((dir / "run_config.json").string(), &config).ok());
  ASSERT_EQ(config.num_prompts(), 300u);
  const ResolvedTraffic traffic = ResolveTraffic(config);
  auto file = ReadPlanCsv(dir / "synthetic_plan.csv", traffic, config.seed());
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->size(), 300u);
  std::ifstream in(dir / "synthetic_plan.csv");
  std::string line;
  std::getline(in, line);  // header
  for (size_t i = 0; std::getline(in, line); ++i) {
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string f; std::getline(row, f, ',');) fields.push_back(f);
    ASSERT_EQ(fields.size(), 5u);
    EXPECT_EQ(file->offset_s[i], std::strtod(fields[3].c_str(), nullptr)) << "row " << i;
  }
  auto rebuilt = BuildArrivalSchedule(traffic, config.num_prompts(), config.seed());
  ASSERT_TRUE(rebuilt.ok());
  for (size_t i = 0; i < 300; ++i) {
    EXPECT_EQ(SecondsToNanos(file->offset_s[i]), SecondsToNanos(rebuilt->offset_s[i])) << i;
  }
  // Not a trivially regular plan: the intervals differ (β = 0.5).
  EXPECT_NE(SecondsToNanos(file->interval_s[1]), SecondsToNanos(file->interval_s[2]));
}

// Doubles whose shortest text is shorter than 17 digits, and ones that need
// all 17, read back exactly (from_chars is correctly rounded).
TEST(PlanFileTest, HardDoublesReadBackExactly) {
  ArrivalSchedule plan;
  const double offsets[] = {0.0,
                            1e-9,
                            0.1,
                            0.30000000000000004,
                            1.0 / 3.0,
                            2.0 / 3.0,
                            123.456789012345678,
                            1e15 + 0.25,
                            4503599627370495.5};
  for (double o : offsets) {
    plan.rate_rps.push_back(1.0 / 7.0);
    plan.interval_s.push_back(o / 3.0);
    plan.offset_s.push_back(o);
    plan.anomaly.push_back(Anomaly::kNormal);
  }
  const fs::path csv = FreshDir("plan_file_hard") / "x_plan.csv";
  ASSERT_TRUE(WritePlanCsv(plan, csv).ok());
  auto back = ReadPlanCsv(csv, {}, 0);
  ASSERT_TRUE(back.ok()) << back.status();
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(back->offset_s[i], plan.offset_s[i]) << i;
    EXPECT_EQ(back->interval_s[i], plan.interval_s[i]) << i;
    EXPECT_EQ(back->rate_rps[i], plan.rate_rps[i]) << i;
  }
  // 1 ns exactly, and a CRLF file with no final newline reads the same.
  EXPECT_EQ(SecondsToNanos(back->offset_s[1]), 1);
  const fs::path crlf = WriteText(csv.parent_path() / "crlf_plan.csv",
                                  "index,rate_rps,interval_s,offset_s,anomaly\r\n"
                                  "0,10,0.10000000000000001,0.10000000000000001,normal\r\n"
                                  "1,10,0.10000000000000001,0.20000000000000001,timing");
  auto c = ReadPlanCsv(crlf, {}, 0);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ(c->offset_s[1], 0.2);
  EXPECT_EQ(c->anomaly[1], Anomaly::kTiming);
}

// Malformed files: the file, the line and the column (number and name).
TEST(PlanFileTest, MalformedRowsNameTheLineAndColumn) {
  const fs::path dir = FreshDir("plan_file_bad");
  const std::string header = "index,rate_rps,interval_s,offset_s,anomaly\n";
  const std::string good = "0,10,0.1,0.1,normal\n";
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {header + good + "1,10,0.1,0.2x,normal\n",
       "line 3, column 4 (offset_s): \"0.2x\" is not a finite number"},
      {header + good + "1,10,abc,0.2,normal\n",
       "line 3, column 3 (interval_s): \"abc\" is not a finite number"},
      {header + good + "1,nan,0.1,0.2,normal\n",
       "line 3, column 2 (rate_rps): \"nan\" is not a finite number"},
      {header + good + "2,10,0.1,0.2,normal\n",
       "line 3, column 1 (index): index 2 out of order: expected 1"},
      {header + good + "1,10,0.1,0.2,odd\n",
       "line 3, column 5 (anomaly): \"odd\" is not normal, timing, burstiness or instant"},
      {header + good + "1,10,0.1,0.2\n", "line 3: has 4 fields"},
      {header + good + "1,10,0.1,0.05,normal\n",
       "line 3, column 4 (offset_s): offset 0.05 is before the previous row's (0.1)"},
      {header + "0,10,0.1,-1,normal\n", "line 2, column 4 (offset_s): offset -1 is negative"},
      {"idx,rate,interval,offset,anomaly\n" + good,
       "line 1: the header must be \"index,rate_rps,interval_s,offset_s,anomaly\""},
      {header, "has no rows"},
      {"", "is empty"},
  };
  int k = 0;
  for (const Case& c : cases) {
    const fs::path path = WriteText(dir / ("bad" + std::to_string(k++) + "_plan.csv"), c.text);
    auto plan = ReadPlanCsv(path, {}, 0);
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kDataLoss) << c.text;
    EXPECT_THAT(plan.status().message(), HasSubstr(path.string())) << c.text;
    EXPECT_THAT(plan.status().message(), HasSubstr(c.message)) << c.text;
  }
  auto missing = ReadPlanCsv(dir / "nope_plan.csv", {}, 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope_plan.csv: no such file"));
  auto folder = ReadPlanCsv(dir, {}, 0);
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), HasSubstr("is not a regular file"));
}

// The replay's configuration check: the keys that make the plan or the
// payloads must be as saved; the target, workers, cap and late policy may
// differ; keys without effect are no difference.
TEST(PlanFileTest, PlanDefiningDifferencesNameEveryChangedKey) {
  surge::v1::RunConfig saved = DefaultRunConfig();
  saved.set_request_rate(40);
  saved.mutable_traffic_cfg()->set_burstiness(0.5);
  saved.set_num_prompts(300);
  saved.set_seed(11);
  saved.mutable_dataset()->set_random_input_len(64);
  EXPECT_TRUE(PlanDefiningDifferences(saved, saved).empty());

  surge::v1::RunConfig other_target = saved;
  other_target.mutable_target()->set_base_url("http://127.0.0.1:9");
  other_target.mutable_target()->set_model("m");
  other_target.set_workers(7);
  other_target.set_max_concurrency(3);
  other_target.set_late_policy(surge::v1::LATE_POLICY_SKIP);
  other_target.set_output_dir("elsewhere");
  EXPECT_TRUE(PlanDefiningDifferences(saved, other_target).empty());

  surge::v1::RunConfig changed = saved;
  changed.set_seed(12);
  changed.set_num_prompts(301);
  changed.mutable_dataset()->set_random_input_len(65);
  changed.mutable_traffic_cfg()->set_burstiness(1);
  const std::vector<std::string> d = PlanDefiningDifferences(saved, changed);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0],
            "traffic_cfg = {\"burstiness\":1.0} (flag --burstiness, --ramp-up-strategy, "
            "--ramp-up-start-rps, --ramp-up-end-rps, --sampler, --stage, --spike), but the plan "
            "was made with {\"burstiness\":0.5}");
  EXPECT_EQ(d[1], "num_prompts = 301 (flag --num-prompts), but the plan was made with 300");
  EXPECT_EQ(d[2], "seed = 12 (flag --seed), but the plan was made with 11");
  EXPECT_EQ(d[3], "random_input_len = 65 (flag --random-input-len), but the plan was made with 64");

  // A file dataset: its path and name.
  surge::v1::RunConfig file = saved;
  file.mutable_dataset()->set_dataset_name("jsonl");
  file.mutable_dataset()->set_dataset_path("/data/a.jsonl");
  const std::vector<std::string> f = PlanDefiningDifferences(saved, file);
  // (random_input_len and random_len_dist are not keys of a jsonl dataset.)
  ASSERT_EQ(f.size(), 4u);
  EXPECT_THAT(f[0], HasSubstr("dataset_name = \"jsonl\""));
  EXPECT_THAT(f[1], HasSubstr("dataset_path = \"/data/a.jsonl\" (flag --dataset-path), but the "
                              "plan was made with \"(not set)\""));
  EXPECT_THAT(f[2], HasSubstr("random_input_len = \"(not set)\""));
  EXPECT_THAT(f[3], HasSubstr("random_len_dist = \"(not set)\" (flag --random-len-dist), but "
                              "the plan was made with \"fixed\""));
}

}  // namespace
}  // namespace surge::coordinator
