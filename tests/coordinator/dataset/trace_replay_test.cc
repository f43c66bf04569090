// Trace replay (R-MET-3): a Mooncake trace's timestamps as the request
// offsets, read by the payload source and made a plan by BuildReplaySchedule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/plan/replay_schedule.h"
#include "tests/testing/dataset_files.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::DatasetAt;
using ::surge::testing::StatusMessage;
using ::surge::testing::WriteDatasetFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

surge::v1::DatasetConfig Replay(const fs::path& path, double scale) {
  surge::v1::DatasetConfig d = DatasetAt("mooncake", path);
  d.set_trace_replay(true);
  d.set_trace_time_scale(scale);
  return d;
}

std::string TraceLine(double timestamp_ms, int input_length) {
  return absl::StrCat("{\"timestamp\": ", timestamp_ms, ", \"input_length\": ", input_length,
                      ", \"output_length\": 3, \"hash_ids\": [1]}\n");
}

TEST(TraceReplayTest, OffsetsAreTimestampsTimesScaleExactly) {
  const fs::path path =
      WriteDatasetFile("replay_tiny.jsonl", TraceLine(5000, 10) + TraceLine(6000, 11) +
                                                TraceLine(6000, 12) + TraceLine(9000, 13));
  auto source = MakePayloadSource(Replay(path, 0.5), 4, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_NE((*source)->replay_offsets_s(), nullptr);
  // (t − t_first) · 0.5 / 1000: relative to the first line, the first at 0.
  EXPECT_THAT(*(*source)->replay_offsets_s(), ElementsAre(0.0, 0.5, 0.5, 2.0));
  EXPECT_TRUE((*source)->warnings().empty());

  auto plan = BuildReplaySchedule(*(*source)->replay_offsets_s(), 9);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->offset_s, ElementsAre(0.0, 0.5, 0.5, 2.0));
  EXPECT_THAT(plan->interval_s, ElementsAre(0.0, 0.5, 0.0, 1.5));  // Δ_0 = t_0
  // The trace's mean rate (N−1)/(t_last − t_first) = 3/2 for every request.
  EXPECT_THAT(plan->rate_rps, ElementsAre(1.5, 1.5, 1.5, 1.5));
  // R-ANOM against e = 1/1.5 s with burstiness anomalies on: 0 s → timing,
  // 0.5 s (25 % off) → normal, 1.5 s (125 % off) → burstiness.
  EXPECT_THAT(plan->anomaly, ElementsAre(Anomaly::kTiming, Anomaly::kNormal, Anomaly::kTiming,
                                         Anomaly::kBurstiness));
  EXPECT_EQ(plan->seed, 9u);
  const ResolvedTraffic& t = plan->traffic;
  EXPECT_TRUE(t.trace_replay);
  EXPECT_DOUBLE_EQ(t.target_rate_rps, 1.5);
  EXPECT_DOUBLE_EQ(t.request_rate_rps, 1.5);
  EXPECT_FALSE(t.ramp_active);
  EXPECT_FALSE(t.instant);
  EXPECT_TRUE(t.warnings.empty());
  // 1/CV² of Δ_1..Δ_3 = (0.5, 0, 1.5): mean 2/3, variance 7/18 → 8/7.
  EXPECT_NEAR(t.burstiness, 8.0 / 7.0, 1e-12);
  // `surge report` rebuilds the same facts from the plan file's offsets.
  const ResolvedTraffic again = ResolveReplayTraffic(plan->offset_s);
  EXPECT_EQ(again.target_rate_rps, t.target_rate_rps);
  EXPECT_EQ(again.burstiness, t.burstiness);
}

TEST(TraceReplayTest, UnsortedTraceIsSortedStablyWithAWarning) {
  const fs::path path = WriteDatasetFile(
      "replay_unsorted.jsonl", TraceLine(0, 100) + TraceLine(3000, 101) + TraceLine(1000, 102) +
                                   TraceLine(2000, 103) + TraceLine(1000, 104));
  auto source = MakePayloadSource(Replay(path, 1.0), 5, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(*(*source)->replay_offsets_s(), ElementsAre(0.0, 1.0, 1.0, 2.0, 3.0));
  // Request i carries the payload of the i-th earliest line; equal times keep
  // file order (line 3 before line 5).
  std::vector<uint32_t> inputs;
  for (uint64_t i = 0; i < 5; ++i) inputs.push_back((*source)->At(i).input_tokens);
  EXPECT_THAT(inputs, ElementsAre(100, 102, 104, 103, 101));
  ASSERT_EQ((*source)->warnings().size(), 1u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("not in timestamp order"));
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("line 3"));
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("sorted stably"));
  // Without replay the file order is kept and timestamps are not read.
  auto plain = MakePayloadSource(DatasetAt("mooncake", path), 5, 0);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->At(1).input_tokens, 101u);
  EXPECT_EQ((*plain)->replay_offsets_s(), nullptr);
}

TEST(TraceReplayTest, CyclingKeepsTheMeanRate) {
  const fs::path path = WriteDatasetFile("replay_cycle.jsonl",
                                         TraceLine(0, 1) + TraceLine(1000, 2) + TraceLine(2000, 3));
  auto source = MakePayloadSource(Replay(path, 1.0), 7, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  // Period = span · L/(L−1) = 2 · 3/2 = 3 s.
  EXPECT_THAT(*(*source)->replay_offsets_s(), ElementsAre(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0));
  EXPECT_EQ((*source)->At(4).input_tokens, 2u);
  ASSERT_EQ((*source)->warnings().size(), 1u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("reused from the top"));
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("3 s"));
}

TEST(TraceReplayTest, AllAtOnceIsInstantAndMissingTimestampsNameTheLine) {
  const fs::path zero = WriteDatasetFile("replay_zero.jsonl", TraceLine(7, 1) + TraceLine(7, 2));
  auto source = MakePayloadSource(Replay(zero, 1.0), 2, 0);
  ASSERT_TRUE(source.ok());
  auto plan = BuildReplaySchedule(*(*source)->replay_offsets_s(), 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->traffic.instant);
  EXPECT_EQ(plan->traffic.target_rate_rps, 0);
  EXPECT_THAT(plan->anomaly, ElementsAre(Anomaly::kInstant, Anomaly::kInstant));
  EXPECT_THAT(plan->offset_s, ElementsAre(0.0, 0.0));

  const fs::path missing = WriteDatasetFile(
      "replay_missing.jsonl", TraceLine(0, 1) + "{\"input_length\": 5, \"output_length\": 2}\n");
  auto bad = MakePayloadSource(Replay(missing, 1.0), 2, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(StatusMessage(bad.status()), HasSubstr("line 2"));
  EXPECT_THAT(StatusMessage(bad.status()), HasSubstr("\"timestamp\""));
  // Replay needs timestamps: only mooncake has them.
  surge::v1::DatasetConfig jsonl = Replay(missing, 1.0);
  jsonl.set_dataset_name("jsonl");
  EXPECT_FALSE(MakePayloadSource(jsonl, 2, 0).ok());
}

TEST(TraceReplayTest, ScheduleRejectsBadOffsets) {
  EXPECT_FALSE(BuildReplaySchedule({}, 0).ok());
  EXPECT_FALSE(BuildReplaySchedule({0.0, 2.0, 1.0}, 0).ok());
  EXPECT_FALSE(BuildReplaySchedule({-1.0, 2.0}, 0).ok());
  EXPECT_FALSE(BuildReplaySchedule({0.0, std::numeric_limits<double>::quiet_NaN()}, 0).ok());
  auto bad = BuildReplaySchedule({0.0, 2.0, 1.0}, 0);
  EXPECT_THAT(StatusMessage(bad.status()), HasSubstr("request 2"));
  // A sparse trace stays paced (not instant) even below 0.1 RPS.
  auto sparse = BuildReplaySchedule({0.0, 60.0}, 0);
  ASSERT_TRUE(sparse.ok());
  EXPECT_FALSE(sparse->traffic.instant);
  EXPECT_DOUBLE_EQ(sparse->traffic.target_rate_rps, 1.0 / 60.0);
}

TEST(TraceReplayTest, TheProductionTraceIsMostlyTimingAnomalies) {
  const fs::path path =
      fs::path(SURGE_SOURCE_DIR) / "data" / "traces" / "mooncake_conversation_trace.jsonl";
  auto source = MakePayloadSource(Replay(path, 1.0), 12031, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_TRUE((*source)->warnings().empty());  // in order, no reuse
  auto plan = BuildReplaySchedule(*(*source)->replay_offsets_s(), 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 12031u);
  EXPECT_EQ(plan->offset_s.front(), 0.0);
  EXPECT_EQ(plan->offset_s.back(), 3536999 * 1.0 / 1000.0);
  EXPECT_DOUBLE_EQ(plan->traffic.target_rate_rps, 12030 / 3536.999);
  // 10,851 intervals are exactly 0, plus Δ_0 = 0: timing anomalies, the
  // truth of a trace on a ~3 s grid.
  EXPECT_EQ(plan->Count(Anomaly::kTiming), 10852u);
  EXPECT_EQ(plan->Count(Anomaly::kTiming) + plan->Count(Anomaly::kBurstiness) +
                plan->Count(Anomaly::kNormal),
            12031u);
}

}  // namespace
}  // namespace surge::coordinator
