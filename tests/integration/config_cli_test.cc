// The configuration at the command line, end to end:
// run_config.json given back to --config reproduces the plan byte for byte,
// configurations that would burst by accident exit 2 and send nothing, and
// large plans check their folder first and show an estimate and progress.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `surge plan --config F`, then `surge plan --config <its run_config.json>`:
// the same plan CSV, byte for byte.
TEST(ConfigRoundTripTest, PlanFromRunConfigJsonIsByteForByteTheSame) {
  const std::string configs[] = {
      "request_rate: 7.3\ntraffic_cfg:\n  burstiness: 0.37\nnum_prompts: 300\nseed: 11\n",
      "traffic_cfg:\n  burstiness: 2\n  ramp_up_strategy: exponential\n  ramp_up_start_rps: 0.5\n"
      "  ramp_up_end_rps: 40\nnum_prompts: 500\nseed: 123456789012\nmodel: org/m\n"
      "random_len_dist: zipf\nrandom_zipf_s: 1.2\ngoodput: {ttft_ms: 25}\n",
      // YAML's .inf is instant mode, saved as "inf".
      "request_rate: .inf\nnum_prompts: 300\nmax_concurrency: 4\n",
      // A range ratio alone is the uniform distribution.
      "request_rate: 5\nnum_prompts: 300\nrandom_input_len: 64\nrandom_range_ratio: 0.25\n",
  };
  int k = 0;
  for (const std::string& yaml : configs) {
    SCOPED_TRACE(yaml);
    const fs::path out = FreshDir("surge_cfg_roundtrip_" + std::to_string(k++));
    std::ofstream(out / "first.yaml") << yaml;
    const Result first = RunSurge("plan --config " + (out / "first.yaml").string() +
                                  " --output-dir " + (out / "a").string());
    ASSERT_EQ(first.exit_code, 0) << first.output;
    const fs::path a = ResultsFolder(first.output);
    const Result second = RunSurge("plan --config " + (a / "run_config.json").string() +
                                   " --output-dir " + (out / "b").string());
    ASSERT_EQ(second.exit_code, 0) << second.output << ReadFile(a / "run_config.json");
    const fs::path b = ResultsFolder(second.output);
    EXPECT_EQ(a.filename(), b.filename());  // the same model folder name
    const std::string plan_a = ReadFile(a / "synthetic_plan.csv");
    ASSERT_GT(plan_a.size(), 1000u);
    EXPECT_TRUE(plan_a == ReadFile(b / "synthetic_plan.csv"));
    // And the saved configuration is itself a fixed point.
    std::string json_b = ReadFile(b / "run_config.json");
    std::string json_a = ReadFile(a / "run_config.json");
    EXPECT_EQ(json_a.replace(json_a.find((out / "a").string()), (out / "a").string().size(), "X"),
              json_b.replace(json_b.find((out / "b").string()), (out / "b").string().size(), "X"));
  }
}

// `surge run --config <folder>/run_config.json` reproduces a run against the
// built-in server (whose port of the first run is not saved).
TEST(ConfigRoundTripTest, RunFromRunConfigJsonReproducesThePlan) {
  const fs::path out = AbsentDir("surge_cfg_run_roundtrip");
  const Result first = RunSurge(
      "run --num-prompts 30 --request-rate 60 --burstiness 0.5 --seed 5 --workers 1 "
      "--random-input-len 8 --random-output-len 2 --sim-ttft-ms 1 --sim-itl-ms 0 "
      "--header 'X-Api-Key: sk-do-not-save' --output-dir " +
      (out / "a").string());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const fs::path a = ResultsFolder(first.output);
  const std::string saved = ReadFile(a / "run_config.json");
  EXPECT_THAT(saved, Not(HasSubstr("base_url")));
  EXPECT_THAT(saved, Not(HasSubstr("sk-do-not-save")));
  EXPECT_THAT(saved, HasSubstr("\"model\": \"surge-sim\""));
  EXPECT_THAT(first.output, HasSubstr("run_config.json leaves out header(s) X-Api-Key"));
  // The run folder itself stands for its run_config.json.
  const Result second =
      RunSurge("run --config " + a.string() + " --output-dir " + (out / "b").string());
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const fs::path b = ResultsFolder(second.output);
  EXPECT_TRUE(ReadFile(a / "synthetic_plan.csv") == ReadFile(b / "synthetic_plan.csv"));
  // `surge report` reads the new run_config.json format.
  const Result report = RunSurge("report " + b.string());
  EXPECT_EQ(report.exit_code, 0) << report.output;
}

// The two accidental-burst inputs: exit 2, the fields named, nothing written.
TEST(AccidentalBurstTest, InactiveRampAndCollapsedPlanExitTwoAndWriteNothing) {
  const fs::path out = AbsentDir("surge_cfg_burst");
  const Result ramp = RunSurge(
      "run --ramp-up-strategy linear --ramp-up-start-rps 50 --ramp-up-end-rps 10 --num-prompts "
      "200 --output-dir " +
      out.string());
  EXPECT_EQ(ramp.exit_code, 2) << ramp.output;
  EXPECT_THAT(ramp.output, HasSubstr("traffic_cfg.ramp_up_end_rps = 10: ramp-up is inactive"));
  EXPECT_THAT(ramp.output, HasSubstr("all 200 requests would be sent at once"));
  const Result beta = RunSurge(
      "run --burstiness 1e-5 --request-rate 4 --num-prompts 4 "
      "--output-dir " +
      out.string());
  EXPECT_EQ(beta.exit_code, 2) << beta.output;
  EXPECT_THAT(beta.output, HasSubstr("traffic_cfg.burstiness = 1e-05: with this shape the Gamma "
                                     "intervals round to 0"));
  EXPECT_FALSE(fs::exists(out));  // no folder, nothing written
  // A small β that does not collapse the plan: a plan, with a warning.
  const Result bursty = RunSurge(
      "plan --burstiness 0.01 --request-rate 4 --num-prompts 1000 "
      "--output-dir " +
      (out / "bursty").string());
  EXPECT_EQ(bursty.exit_code, 0) << bursty.output;
  EXPECT_THAT(bursty.output, HasSubstr("WARNING burstiness 0.01: "));
  EXPECT_THAT(bursty.output, HasSubstr("planned intervals are under 1 ms (timing anomalies), so "
                                       "the requests go out in bursts rather than at about 4 RPS"));
  fs::remove_all(out);
  // An explicit rate below 0.1 is still instant mode, announced.
  const Result slow =
      RunSurge("plan --request-rate 0.05 --num-prompts 200 --output-dir " + out.string());
  EXPECT_EQ(slow.exit_code, 0) << slow.output;
  EXPECT_THAT(slow.output, HasSubstr("WARNING request_rate 0.05 < 0.1: instant mode, all 200 "
                                     "requests are sent at once"));
}

TEST(ConfigWarningsCliTest, ModelNameAndDoubledV1) {
  const fs::path out = AbsentDir("surge_cfg_names");
  const Result r = RunSurge(
      "plan --model .. --request-rate 5 --num-prompts 3 --base-url "
      "http://127.0.0.1:9/v1 --output-dir " +
      out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path folder = ResultsFolder(r.output);
  EXPECT_EQ(fs::weakly_canonical(folder).parent_path().filename(), "performances");
  EXPECT_TRUE(fs::exists(folder / "synthetic_plan.csv"));
  EXPECT_THAT(r.output,
              HasSubstr("every request goes to http://127.0.0.1:9/v1/v1/chat/completions"));
  const Result extra =
      RunSurge("plan --extra-body '{\"model\":\"zzz\"}' --output-dir " + out.string());
  EXPECT_EQ(extra.exit_code, 2);
  EXPECT_THAT(extra.output, HasSubstr("must not set \"model\""));
}

// At the command line: `--request-rate inf` is instant mode, saved as "inf";
// a range ratio alone names the uniform distribution (not equal prompts
// without a word), one contradicting the named
// distribution exits 2; an ignored option is warned about and not saved.
TEST(ConfigWarningsCliTest, InfiniteRateImpliedDistributionAndIgnoredOptions) {
  const fs::path out = AbsentDir("surge_cfg_warnings");
  const Result inf = RunSurge(
      "plan --request-rate inf --max-concurrency 2 --num-prompts 6 --output-dir " + out.string());
  ASSERT_EQ(inf.exit_code, 0) << inf.output;
  EXPECT_THAT(inf.output, HasSubstr("WARNING request_rate inf: instant mode, all 6 requests are "
                                    "sent at once (at most 2 in flight)"));
  EXPECT_THAT(inf.output, HasSubstr("no expected page is written because request_rate is inf"));
  EXPECT_THAT(inf.output, Not(HasSubstr("inf < 0.1")));
  const std::string inf_config = ReadFile(ResultsFolder(inf.output) / "run_config.json");
  EXPECT_THAT(inf_config, HasSubstr("\"request_rate\": \"inf\""));
  EXPECT_THAT(ReadFile(ResultsFolder(inf.output) / "synthetic_plan.csv"),
              HasSubstr("\n5,inf,0,0,instant\n"));

  const Result ratio = RunSurge(
      "plan --request-rate 5 --num-prompts 3 --random-input-len 64 --random-range-ratio 0.25 "
      "--output-dir " +
      out.string());
  ASSERT_EQ(ratio.exit_code, 0) << ratio.output;
  EXPECT_THAT(ratio.output,
              HasSubstr("INFO --random-range-ratio implies --random-len-dist uniform"));
  const std::string ratio_config = ReadFile(ResultsFolder(ratio.output) / "run_config.json");
  EXPECT_THAT(ratio_config, HasSubstr("\"random_len_dist\": \"uniform\""));
  EXPECT_THAT(ratio_config, HasSubstr("\"random_range_ratio\": 0.25"));

  const Result clash = RunSurge(
      "plan --random-len-dist gaussian --random-range-ratio 0.25 --output-dir " + out.string());
  EXPECT_EQ(clash.exit_code, 2) << clash.output;
  EXPECT_THAT(clash.output,
              HasSubstr("give --random-len-dist uniform or drop --random-range-ratio"));

  const Result ignored = RunSurge(
      "plan --request-rate 5 --num-prompts 3 --trace-time-scale 0.5 --output-dir " + out.string());
  ASSERT_EQ(ignored.exit_code, 0) << ignored.output;
  EXPECT_THAT(ignored.output, HasSubstr("WARNING trace_time_scale 0.5 ignored"));
  EXPECT_THAT(ReadFile(ResultsFolder(ignored.output) / "run_config.json"),
              Not(HasSubstr("trace_time_scale")));
}

// `surge plan --num-prompts 100000000` into a folder that cannot be made:
// refused at once, before minutes of work; a large plan shows an estimate
// and progress lines (plain lines: the output is not a terminal).
TEST(LargePlanTest, UnusableFolderFailsFastAndBigPlansShowEstimateAndProgress) {
  const fs::path out = FreshDir("surge_cfg_large");
  std::ofstream(out / "a_file") << "x";
  const auto start = std::chrono::steady_clock::now();
  const Result bad = RunSurge("plan --num-prompts 100000000 --request-rate 1000 --output-dir " +
                              (out / "a_file" / "sub").string());
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("output_dir = \"" + (out / "a_file" / "sub").string() +
                                    "\": cannot create the folder"));
  EXPECT_LT(took_s, 5.0);  // the plan alone takes about 10 s
  const Result big = RunSurge("plan --num-prompts 2100000 --request-rate 1000 --output-dir " +
                              (out / "big").string());
  ASSERT_EQ(big.exit_code, 0) << big.output;
  EXPECT_THAT(big.output, HasSubstr("large plan: 2100000 requests; plan CSV about 130 MB"));
  EXPECT_THAT(big.output, HasSubstr("plan CSV: 1048576 of 2100000 rows (50%)"));
  EXPECT_THAT(big.output, HasSubstr("plan CSV: 2100000 of 2100000 rows (100%)"));
  fs::remove_all(out);
}

}  // namespace
}  // namespace surge::testing
