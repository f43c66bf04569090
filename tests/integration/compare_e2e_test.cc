// `surge compare` through the real binary (docs/COMPARE.md): a run against
// the built-in server with a 20 ms TTFT, the exact replay of its plan
// against one with 60 ms, and the comparison of the two; then different
// plans, a run whose certificate fails, a folder that is not a run and a bad
// flag. Every run is small (100 requests of 64 + 8 tokens at 25 req/s, so
// that the built-in server's own CPU use stays low) and bounded by
// `timeout`. Each test process (ctest runs one per test case, possibly in
// parallel) makes its own two runs in a folder of its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = nlohmann::json;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Json ReadJson(const fs::path& path) { return Json::parse(Slurp(path)); }

constexpr const char* kRun =
    "run --num-prompts 100 --request-rate 25 --seed 11 --random-input-len 64 "
    "--random-output-len 8 --sim-itl-ms 2 --output-dir ";

class CompareE2eTest : public ::testing::Test {
 protected:
  // A at 20 ms TTFT, B the replay of A's plan at 60 ms; once for the suite.
  static void SetUpTestSuite() {
    dir_ = new fs::path(FreshDir("surge_compare_e2e_" + std::to_string(getpid())));
    const Result a = RunSurge(std::string(kRun) + (*dir_ / "a").string() + " --sim-ttft-ms 20");
    a_ = new fs::path(ResultsFolder(a.output));
    a_output_ = new std::string(a.output);
    const Result b =
        RunSurge("run --plan-file " + (*a_ / "synthetic_plan.csv").string() +
                 " --sim-ttft-ms 60 --sim-itl-ms 2 --output-dir " + (*dir_ / "b").string());
    b_ = new fs::path(ResultsFolder(b.output));
    b_output_ = new std::string(b.output);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete a_;
    delete b_;
    delete a_output_;
    delete b_output_;
  }
  void SetUp() override {
    ASSERT_FALSE(a_->empty()) << *a_output_;
    ASSERT_FALSE(b_->empty()) << *b_output_;
  }
  static fs::path* dir_;
  static fs::path* a_;
  static fs::path* b_;
  static std::string* a_output_;
  static std::string* b_output_;
};

fs::path* CompareE2eTest::dir_ = nullptr;
fs::path* CompareE2eTest::a_ = nullptr;
fs::path* CompareE2eTest::b_ = nullptr;
std::string* CompareE2eTest::a_output_ = nullptr;
std::string* CompareE2eTest::b_output_ = nullptr;

TEST_F(CompareE2eTest, ReplayWritesTheSamePlanBytesAndHash) {
  EXPECT_EQ(Slurp(*a_ / "synthetic_plan.csv"), Slurp(*b_ / "synthetic_plan.csv"));
  const Json sa = ReadJson(*a_ / "synthetic.json");
  const Json sb = ReadJson(*b_ / "synthetic.json");
  ASSERT_TRUE(sa["run"]["plan_hash"].is_string());
  EXPECT_EQ(sa["run"]["plan_hash"].get<std::string>().size(), 16u);
  EXPECT_EQ(sa["run"]["plan_hash"], sb["run"]["plan_hash"]);
}

TEST_F(CompareE2eTest, FortyMsSlowerTtftInB) {
  const fs::path out = *dir_ / "cmp";
  const Result r = RunSurge("compare " + a_->string() + " " + b_->string() +
                            " --bootstrap-resamples 500 --seed 5 --output-dir " + out.string());
  ASSERT_TRUE(fs::exists(out / "compare.json")) << r.output;
  ASSERT_TRUE(fs::exists(out / "compare.html")) << r.output;
  const Json j = ReadJson(out / "compare.json");
  const Json& ttft = j["metrics"][0];
  EXPECT_EQ(ttft["metric"], "ttft_ms");
  EXPECT_EQ(j["pairs"]["ok_in_both"], 100) << r.output;
  EXPECT_EQ(j["bootstrap"]["resamples"], 500);
  EXPECT_EQ(j["bootstrap"]["seed"], 5);
  EXPECT_EQ(j["a"]["plan_hash_source"], "summary");
  const double diff = ttft["median_diff_ms"].get<double>();
  EXPECT_LE(ttft["ci95_low_ms"].get<double>(), diff);
  EXPECT_GE(ttft["ci95_high_ms"].get<double>(), diff);
  EXPECT_THAT(r.output, HasSubstr("B − A median ms [95% CI]"));
  EXPECT_THAT(r.output, HasSubstr("bootstrap 500 resamples, seed 5"));
  // A machine loaded enough that either run missed its schedule measured
  // itself: then no verdict (exit 1) and the reason, and B is still the
  // slower one; else the verdict (exit 0) and the 40 ms the servers differ
  // by.
  const bool kept =
      j["a"]["certificate"]["valid"] == true && j["b"]["certificate"]["valid"] == true;
  if (kept) {
    EXPECT_NEAR(diff, 40, 2) << r.output;
    EXPECT_LT(ttft["share_b_faster"].get<double>(), 0.05) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(j["verdict"]["ttft_ms"], "B slower");
    EXPECT_TRUE(j["no_verdict_reason"].is_null());
  } else {
    EXPECT_GT(diff, 0) << r.output;
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_THAT(j["no_verdict_reason"].get<std::string>(), HasSubstr("did not keep its schedule"));
  }
}

TEST_F(CompareE2eTest, DifferentPlansExitTwoNamingBothHashes) {
  const Result c = RunSurge(
      "run --num-prompts 60 --request-rate 25 --seed 12 --random-input-len 64 "
      "--random-output-len 8 --sim-ttft-ms 20 --sim-itl-ms 2 --output-dir " +
      (*dir_ / "c").string());
  const fs::path c_folder = ResultsFolder(c.output);
  ASSERT_FALSE(c_folder.empty()) << c.output;
  const std::string a_hash = ReadJson(*a_ / "synthetic.json")["run"]["plan_hash"];
  const std::string c_hash = ReadJson(c_folder / "synthetic.json")["run"]["plan_hash"];
  const Result r = RunSurge("compare " + a_->string() + " " + c_folder.string() + " --output-dir " +
                            (*dir_ / "cmp_c").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("different plans"));
  EXPECT_THAT(r.output, HasSubstr(a_hash));
  EXPECT_THAT(r.output, HasSubstr(c_hash));
  EXPECT_FALSE(fs::exists(*dir_ / "cmp_c" / "compare.json"));
}

TEST_F(CompareE2eTest, FailedCertificateGivesNoVerdictAndTheReason) {
  // B's folder copied, its summary saying the alarm fired.
  const fs::path late = *dir_ / "late" / "20261204_000000Z" / "performances" / "m";
  fs::create_directories(late.parent_path());
  fs::copy(*b_, late, fs::copy_options::recursive);
  Json s = ReadJson(late / "synthetic.json");
  s["run"]["schedule"]["schedule_kept"] = false;
  s["run"]["schedule"]["fell_behind_at_s"] = 0.5;
  s["run"]["schedule"]["cause"] = "cpu";
  s["run"]["schedule"]["cause_text"] = "test: the worker's CPU was busy";
  std::ofstream(late / "synthetic.json") << s.dump();

  const Result r = RunSurge("compare " + a_->string() + " " + late.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // (On a loaded machine B's own lateness may come first in its reasons.)
  EXPECT_THAT(r.output, HasSubstr("no verdict: run B did not keep its schedule: "));
  EXPECT_THAT(r.output, HasSubstr("the lateness alarm fired at 0.5 s (cause cpu): test: the "
                                  "worker's CPU was busy"));
  // Default folder: beside A's timestamp folder.
  const fs::path stamp_a = a_->parent_path().parent_path();
  const fs::path out =
      stamp_a.parent_path() / ("compare_" + stamp_a.filename().string() + "_vs_20261204_000000Z");
  ASSERT_TRUE(fs::exists(out / "compare.json")) << r.output;
  const Json j = ReadJson(out / "compare.json");
  EXPECT_TRUE(j["verdict"].is_null());
  EXPECT_THAT(j["no_verdict_reason"].get<std::string>(), HasSubstr("lateness alarm fired"));
  EXPECT_EQ(j["b"]["certificate"]["valid"], false);
  EXPECT_EQ(j["b"]["certificate"]["cause"], "cpu");
}

TEST_F(CompareE2eTest, NotARunFolderExitsTwo) {
  const fs::path empty = *dir_ / "not_a_run";
  fs::create_directories(empty);
  const Result r = RunSurge("compare " + a_->string() + " " + empty.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not a run folder: " + empty.string()));
  EXPECT_THAT(r.output, HasSubstr("no {dataset}_plan.csv"));
}

TEST_F(CompareE2eTest, BadFlagExitsTwo) {
  const Result r =
      RunSurge("compare " + a_->string() + " " + b_->string() + " --bootstrap-resamples 5");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--bootstrap-resamples"));
  const Result zero = RunSurge("compare " + a_->string() + " " + b_->string() + " --min-pairs 0");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_THAT(zero.output, HasSubstr("--min-pairs: Value 0 not in range 1 to 1000000000"));
}

}  // namespace
}  // namespace surge::testing
