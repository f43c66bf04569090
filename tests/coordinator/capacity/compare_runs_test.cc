#include "coordinator/capacity/compare_runs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "coordinator/capacity/plan_hash.h"
#include "coordinator/report/compare_page.h"
#include "coordinator/results/run_files.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/results/ok_record.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = nlohmann::json;

RunCertificate Valid() {
  RunCertificate c;
  c.valid = true;
  return c;
}

RunCertificate Late() {
  RunCertificate c;
  c.reasons = {"send lateness p99 12 ms is over the limit 10 ms"};
  return c;
}

ComparedRun MakeRun(const std::string& folder, const std::string& hash, RunCertificate cert) {
  ComparedRun r;
  r.folder = folder;
  r.dataset = "synthetic";
  r.plan_hash = hash;
  r.plan_hash_source = "summary";
  r.certificate = std::move(cert);
  return r;
}

// `n` ok requests 20 ms apart with TTFT `ttft_ms` + k·0.1 ms, 10 output
// tokens, E2EL TTFT + 90 ms.
std::vector<RequestTimes> Requests(int n, double ttft_ms) {
  std::vector<RequestTimes> out;
  for (int k = 0; k < n; ++k) {
    RequestTimes r;
    r.index = static_cast<uint64_t>(k);
    r.planned_offset_s = 0.02 * k;
    r.ok = true;
    r.ms[0] = ttft_ms + 0.1 * k;
    r.ms[1] = 10;
    r.ms[2] = r.ms[0] + 90;
    out.push_back(r);
  }
  return out;
}

TEST(PlanHashTest, Fnv1aKnownValues) {
  EXPECT_EQ(PlanHashHex(Fnv1a64("")), "cbf29ce484222325");
  EXPECT_EQ(PlanHashHex(Fnv1a64("a")), "af63dc4c8601ec8c");
  EXPECT_EQ(PlanHashHex(Fnv1a64("foobar")), "85944171f73967e8");
  // In pieces: the same as at once.
  EXPECT_EQ(Fnv1a64("bar", Fnv1a64("foo")), Fnv1a64("foobar"));
}

TEST(PlanHashTest, FileHashIsTheBytesHash) {
  const fs::path path = fs::path(::testing::TempDir()) / "plan_hash_test_plan.csv";
  const std::string text = "index,rate_rps,interval_s,offset_s,anomaly\n0,50,0,0,normal\n";
  std::ofstream(path, std::ios::binary) << text;
  auto hash = PlanFileHash(path);
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_EQ(*hash, PlanHashHex(Fnv1a64(text)));
  EXPECT_TRUE(absl::IsNotFound(PlanFileHash(path.string() + ".missing").status()));
  fs::remove(path);
}

TEST(CheckSamePlanTest, DifferentHashesNameBoth) {
  const absl::Status s = CheckSamePlan(MakeRun("/r/a", "00000000000000aa", Valid()),
                                       MakeRun("/r/b", "00000000000000bb", Valid()));
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("different plans"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("/r/a) has plan hash 00000000000000aa"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("/r/b) has 00000000000000bb"));
  EXPECT_TRUE(CheckSamePlan(MakeRun("/r/a", "ab", Valid()), MakeRun("/r/b", "ab", Valid())).ok());
}

TEST(NoVerdictTest, ReasonsForEachCertificateAndTooFewPairs) {
  EXPECT_TRUE(NoVerdictReasons(Valid(), Valid(), 30, 30).empty());
  EXPECT_THAT(
      NoVerdictReasons(Valid(), Valid(), 29, 30),
      ::testing::ElementsAre("only 29 requests are ok in both runs, fewer than --min-pairs 30"));
  EXPECT_THAT(NoVerdictReasons(Late(), Valid(), 100, 30),
              ::testing::ElementsAre("run A did not keep its schedule: send lateness p99 12 ms "
                                     "is over the limit 10 ms"));
  EXPECT_EQ(NoVerdictReasons(Late(), Late(), 1, 30).size(), 3u);
}

TEST(CompareRequestsTest, ShiftedRunGivesTheShiftAndAVerdict) {
  const auto a = Requests(100, 20);
  const auto b = Requests(100, 60);
  const Comparison c =
      CompareRequests(MakeRun("/r/a", "h", Valid()), MakeRun("/r/b", "h", Valid()), a, b, {});
  ASSERT_EQ(c.metrics.size(), 3u);
  EXPECT_EQ(c.metrics[0].metric, "ttft_ms");
  EXPECT_DOUBLE_EQ(c.metrics[0].median_diff_ms, 40);
  EXPECT_DOUBLE_EQ(c.metrics[0].ci_ms.low, 40);
  EXPECT_DOUBLE_EQ(c.metrics[0].ci_ms.high, 40);
  EXPECT_EQ(c.metrics[1].median_diff_ms, 0);  // TPOT unchanged
  EXPECT_TRUE(c.has_verdict);

  const Json j = ComparisonJson(c);
  EXPECT_EQ(j["pairs"]["ok_in_both"], 100);
  EXPECT_EQ(j["bootstrap"]["resamples"], 2000);
  EXPECT_EQ(j["bootstrap"]["seed"], 0);
  EXPECT_EQ(j["verdict"]["ttft_ms"], "B slower");
  EXPECT_EQ(j["verdict"]["tpot_ms"], "no clear difference");
  EXPECT_TRUE(j["no_verdict_reason"].is_null());
  EXPECT_DOUBLE_EQ(j["metrics"][0]["median_diff_ms"].get<double>(), 40);
  EXPECT_EQ(j["a"]["certificate"]["valid"], true);

  const std::string table = ComparisonTable(c);
  EXPECT_THAT(table, HasSubstr("ttft"));
  EXPECT_THAT(table, HasSubstr("40.000 [40.000, 40.000]"));
  EXPECT_THAT(table, HasSubstr("100 pairs (ok in both runs); bootstrap 2000 resamples, seed 0"));
  EXPECT_THAT(table, HasSubstr("verdict ttft_ms: B slower"));
}

TEST(CompareRequestsTest, TooFewPairsOrAFailedCertificateHasNoVerdict) {
  const auto a = Requests(10, 20);
  const auto b = Requests(10, 20);
  const Comparison few =
      CompareRequests(MakeRun("/r/a", "h", Valid()), MakeRun("/r/b", "h", Valid()), a, b, {});
  EXPECT_FALSE(few.has_verdict);
  const Json j = ComparisonJson(few);
  EXPECT_TRUE(j["verdict"].is_null());
  EXPECT_EQ(j["no_verdict_reason"],
            "only 10 requests are ok in both runs, fewer than --min-pairs 30");
  // The numbers are there all the same.
  EXPECT_EQ(j["metrics"][0]["median_diff_ms"], 0.0);

  CompareSettings one;
  one.min_pairs = 1;
  const Comparison late =
      CompareRequests(MakeRun("/r/a", "h", Valid()), MakeRun("/r/b", "h", Late()), a, b, one);
  EXPECT_FALSE(late.has_verdict);
  EXPECT_THAT(ComparisonTable(late), HasSubstr("no verdict: run B did not keep its schedule"));
}

TEST(MsTextTest, ThreeDecimalsWithoutNegativeZero) {
  EXPECT_EQ(MsText(40.0004), "40.000");
  EXPECT_EQ(MsText(-0.0004), "0.000");
  EXPECT_EQ(MsText(-0.0006), "-0.001");
  EXPECT_EQ(MsText(std::nan("")), "n/a");
}

TEST(DefaultCompareDirTest, BesideATimestampFolder) {
  EXPECT_EQ(DefaultCompareDir("/o/20261204_021500Z/performances/m",
                              "/p/20261204_030000Z/performances/m/"),
            fs::path("/o/compare_20261204_021500Z_vs_20261204_030000Z"));
  EXPECT_EQ(DefaultCompareDir("/x/runA", "/x/runB"), fs::path("/x/compare_runA_vs_runB"));
}

class CompareFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
  }
  // A run folder with a summary (plan_hash `hash`, or none when empty),
  // the plan `plan_text` and `n` ok records of TTFT `ttft_s`.
  fs::path MakeRunFolder(const std::string& name, const std::string& hash,
                         const std::string& plan_text, int n, double ttft_s) {
    const fs::path folder = dir_ / name / "performances" / "m";
    fs::create_directories(folder);
    std::ofstream(folder / "synthetic_plan.csv", std::ios::binary) << plan_text;
    Json summary = Json::parse(R"({
      "requests": {"total": 40, "sent": 40, "lost": 0},
      "intended_rate_rps": 50.0, "achieved_rate_rps": 50.0, "achieved_vs_intended": 1.0,
      "run": {"workers_lost": 0, "stop_reason": "completed",
              "schedule": {"lateness_alarm_ms": 5, "lateness_p99_ms": 0.5,
                           "schedule_kept": true}}})");
    if (!hash.empty()) summary["run"]["plan_hash"] = hash;
    std::ofstream(folder / "synthetic.json") << summary.dump();
    auto writer = DetailsWriter::Create(folder / "synthetic_details.jsonl");
    EXPECT_TRUE(writer.ok());
    for (int k = 0; k < n; ++k) {
      (*writer)->Append(OkRecord(static_cast<uint64_t>(k), 0.02 * k, ttft_s, ttft_s + 0.09, 10));
    }
    surge::v1::RequestRecord warmup = OkRecord(0, 0, 5, 6, 10);
    warmup.set_warmup(true);
    (*writer)->Append(warmup);
    EXPECT_TRUE((*writer)->Flush().ok());
    return folder;
  }
  fs::path dir_;
};

TEST_F(CompareFolderTest, SamePlanWithoutRecordedHashesIsHashedFromTheCsv) {
  const std::string plan = "index,rate_rps,interval_s,offset_s,anomaly\n0,50,0,0,normal\n";
  const fs::path a = MakeRunFolder("a", "", plan, 40, 0.020);
  const fs::path b = MakeRunFolder("b", "", plan, 40, 0.060);
  auto c = CompareRunFolders(a, b, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->a.plan_hash, PlanHashHex(Fnv1a64(plan)));
  EXPECT_EQ(c->a.plan_hash_source, "plan_csv");
  EXPECT_EQ(c->pairs.index.size(), 40u);  // the warm-up left out
  EXPECT_NEAR(c->metrics[0].median_diff_ms, 40, 1e-9);
  EXPECT_NEAR(c->metrics[1].median_diff_ms, 0, 1e-9);
  EXPECT_TRUE(c->has_verdict);
}

TEST_F(CompareFolderTest, RecordedHashesThatDifferAreDifferentPlans) {
  const std::string plan = "index,rate_rps,interval_s,offset_s,anomaly\n";
  const fs::path a = MakeRunFolder("a", "1111111111111111", plan, 40, 0.020);
  const fs::path b = MakeRunFolder("b", "2222222222222222", plan, 40, 0.020);
  auto c = CompareRunFolders(a, b, {});
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("1111111111111111"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("2222222222222222"));
}

TEST_F(CompareFolderTest, NotARunFolderNamesThePathAndWhatIsMissing) {
  const fs::path a = MakeRunFolder("a", "", "x\n", 40, 0.020);
  fs::create_directories(dir_ / "empty");
  auto c = CompareRunFolders(a, dir_ / "empty", {});
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("not a run folder: " + (dir_ / "empty").string()));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("no {dataset}_plan.csv"));
  fs::remove(a / "synthetic_details.jsonl");
  auto no_details = CompareRunFolders(a, a, {});
  EXPECT_THAT(std::string(no_details.status().message()),
              HasSubstr("synthetic_details.jsonl is missing"));
}

TEST(CompareFiguresTest, TracesPerMetricWithEveryPair) {
  const auto a = Requests(50, 20);
  const auto b = Requests(50, 60);
  CompareSettings one;
  one.min_pairs = 1;
  const Comparison c =
      CompareRequests(MakeRun("/r/a", "h", Valid()), MakeRun("/r/b", "h", Valid()), a, b, one);
  const Json f = CompareFigures(c);
  ASSERT_EQ(f["diff"]["data"].size(), 3u);
  ASSERT_EQ(f["dist"]["data"].size(), 6u);
  EXPECT_EQ(f["diff"]["data"][0]["name"], "TTFT B − A");
  EXPECT_EQ(f["diff"]["data"][0]["x"].size(), 50u);
  EXPECT_DOUBLE_EQ(f["diff"]["data"][0]["x"][1].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(f["diff"]["data"][0]["y"][7].get<double>(), 40);
  EXPECT_EQ(f["dist"]["data"][0]["name"], "TTFT A");
  EXPECT_EQ(f["dist"]["data"][1]["name"], "TTFT B");
  EXPECT_DOUBLE_EQ(f["dist"]["data"][1]["x"][0].get<double>(), 60);  // B's smallest TTFT
  EXPECT_EQ(f["dist"]["data"][1]["y"].back(), 1.0);
  EXPECT_EQ(f["diff"]["data"][2]["yaxis"], "y3");
}

}  // namespace
}  // namespace surge::coordinator
