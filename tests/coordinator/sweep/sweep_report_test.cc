// A sweep's answer, files and page figures from hand-made points: an
// invalid point is never an answer, a saturated one fails, and the page
// draws the invalid one hollow.
#include "coordinator/sweep/sweep_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/report/sweep_page.h"
#include "tests/testing/sample_sweep.h"

namespace surge::coordinator {
namespace {

using nlohmann::json;
using ::surge::testing::kSampleObjective;
using ::surge::testing::MakeSweepPoint;
using ::surge::testing::SampleSweepReport;
using ::testing::HasSubstr;

TEST(ListAnswerTest, HighestPassingBelowTheFirstFailure) {
  const std::vector<SweepPoint> points = {MakeSweepPoint(1, 10, PointStatus::kOk, 1.0),
                                          MakeSweepPoint(2, 20, PointStatus::kOk, 0.97),
                                          MakeSweepPoint(3, 30, PointStatus::kOk, 0.80),
                                          MakeSweepPoint(4, 40, PointStatus::kSaturated, 0.1)};
  const SearchAnswer a = ListAnswer(points, kSampleObjective);
  EXPECT_TRUE(a.complete);
  EXPECT_EQ(a.max_rate_rps, 20);
  EXPECT_EQ(a.min_failing_rps, 30);
  EXPECT_EQ(AnswerText(a, points),
            "max rate within SLO: 20 RPS ± 10 (goodput 97.0 % at 20, goodput 80.0 % at 30)");
}

TEST(ListAnswerTest, AnInvalidPointIsNeverAnAnswer) {
  const std::vector<SweepPoint> points = {MakeSweepPoint(1, 10, PointStatus::kOk, 1.0),
                                          MakeSweepPoint(2, 20, PointStatus::kInvalid, 1.0),
                                          MakeSweepPoint(3, 30, PointStatus::kOk, 0.5)};
  const SearchAnswer a = ListAnswer(points, kSampleObjective);
  EXPECT_FALSE(a.complete);
  EXPECT_EQ(a.max_rate_rps, 10);
  EXPECT_FALSE(a.min_failing_rps.has_value());
  EXPECT_THAT(a.incomplete_reason, HasSubstr("could not keep the point at 20 RPS"));
  EXPECT_THAT(AnswerText(a, points), HasSubstr("max rate within SLO: at least 10 RPS"));
}

TEST(ListAnswerTest, ARetriedPointCountsByItsLastTry) {
  SweepPoint first = MakeSweepPoint(2, 20, PointStatus::kInvalid, 1.0);
  SweepPoint again = MakeSweepPoint(3, 20, PointStatus::kOk, 0.99);
  again.attempt = 1;
  const std::vector<SweepPoint> points = {MakeSweepPoint(1, 10, PointStatus::kOk, 1.0), first,
                                          again, MakeSweepPoint(4, 40, PointStatus::kOk, 0.2)};
  const SearchAnswer a = ListAnswer(points, kSampleObjective);
  EXPECT_TRUE(a.complete);
  EXPECT_EQ(a.max_rate_rps, 20);
  EXPECT_EQ(a.min_failing_rps, 40);
}

TEST(ListAnswerTest, EveryPointPassing) {
  const std::vector<SweepPoint> points = {MakeSweepPoint(1, 10, PointStatus::kOk, 1.0)};
  const SearchAnswer a = ListAnswer(points, kSampleObjective);
  EXPECT_FALSE(a.complete);
  EXPECT_THAT(a.incomplete_reason, HasSubstr("above the highest rate swept"));
}

TEST(SweepFilesTest, JsonCsvAndTheSavedSweep) {
  const SweepReport r = SampleSweepReport();
  const json j = SweepJson(r);
  EXPECT_EQ(j["sweep"]["request_rates"], "10,20,30");
  EXPECT_EQ(j["objective"]["goodput"]["ttft_ms"], 500);
  ASSERT_EQ(j["points"].size(), 3u);
  EXPECT_EQ(j["points"][1]["status"], "invalid");
  EXPECT_EQ(j["points"][1]["certificate"]["cause"], "cpu_saturated");
  EXPECT_EQ(j["max_rate_rps"], 10);
  EXPECT_EQ(j["answer"]["complete"], false);
  EXPECT_TRUE(j["points"][0]["metrics"]["tpot_p50_ms"].is_null());  // NaN

  const std::string csv = SweepCsv(r);
  std::istringstream lines(csv);
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  EXPECT_THAT(header, HasSubstr("number,rate_rps,status,"));
  EXPECT_THAT(first, HasSubstr("1,10,ok,0,"));

  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "sweep_files_test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteSweepFiles(r, dir).ok());
  absl::StatusOr<SavedSweep> saved = ReadSavedSweep(dir);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->sweep.request_rates(), "10,20,30");
  ASSERT_EQ(saved->finished.size(), 3u);
  EXPECT_EQ(saved->finished[2].rate_rps, 30);
  EXPECT_EQ(saved->finished[2].folder, "point_3");

  std::ofstream(dir / "sweep.json") << "{\"points\": 3}";
  EXPECT_THAT(ReadSavedSweep(dir).status().message(), HasSubstr("not a sweep's file"));
}

TEST(SweepPageTest, InvalidPointsAreHollowAndTheAnswerIsDrawn) {
  const json figures = SweepFigures(SweepJson(SampleSweepReport()));
  const json& ttft = figures["latency"]["data"][0];
  EXPECT_EQ(ttft["name"], "TTFT p50");
  EXPECT_EQ(ttft["x"], json::array({10, 20, 30}));
  EXPECT_EQ(ttft["marker"]["symbol"], json::array({"circle", "circle-open", "diamond"}));
  EXPECT_EQ(figures["latency"]["layout"]["shapes"][0]["x0"], 10);
  EXPECT_EQ(figures["throughput"]["data"][1]["name"], "Goodput");
  EXPECT_EQ(figures["certificate"]["data"][1]["y"], json::array({0.05, 250, 0.05}));
  EXPECT_FALSE(figures.contains("waiting"));  // no telemetry in these points

  SweepReport with_waiting = SampleSweepReport();
  with_waiting.points[2].peak_waiting = 212;
  const json w = SweepFigures(SweepJson(with_waiting));
  ASSERT_TRUE(w.contains("waiting"));
  EXPECT_EQ(w["waiting"]["data"][0]["y"], json::array({nullptr, nullptr, 212}));
}

}  // namespace
}  // namespace surge::coordinator
