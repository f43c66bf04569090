#include "coordinator/results/run_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;

// Each state as written and read back, with the cut-off a running mark
// gives: elapsed + the period + the lease + the margin.
TEST(RunStateWriterTest, MarksTheRunAsItGoes) {
  const fs::path dir = surge::testing::FreshDir("surge_run_state");
  RunStateWriter writer(dir, /*lease_ms=*/1000, /*period_s=*/1.0);
  const fs::path path = dir / "run_state.json";
  writer.Waiting();
  auto mark = ReadRunState(path);
  ASSERT_TRUE(mark.ok()) << mark.status();
  EXPECT_EQ(mark->state, "waiting_for_workers");
  EXPECT_EQ(mark->no_send_after_s, -1);

  writer.Update(-0.5, false, 0);  // the first snapshot, before t0
  mark = ReadRunState(path);
  ASSERT_TRUE(mark.ok());
  EXPECT_EQ(mark->state, "running");
  EXPECT_DOUBLE_EQ(mark->no_send_after_s, -0.5 + 1.0 + 1.0 + RunStateWriter::kMarginS);

  writer.Update(0.25, false, 3);  // within the period: not written
  EXPECT_DOUBLE_EQ(ReadRunState(path)->elapsed_s, -0.5);
  writer.Update(0.5, false, 7);  // a period after the last mark
  mark = ReadRunState(path);
  EXPECT_DOUBLE_EQ(mark->elapsed_s, 0.5);
  EXPECT_EQ(mark->records, 7u);
  writer.Update(0.75, true, 8);  // a stop: written at once
  mark = ReadRunState(path);
  EXPECT_EQ(mark->state, "stopping");
  EXPECT_DOUBLE_EQ(mark->no_send_after_s, 0.75 + 2.0 + RunStateWriter::kMarginS);

  writer.NeverStarted("too late");  // it did start: no effect
  EXPECT_EQ(ReadRunState(path)->state, "stopping");
  writer.Ended("interrupted by the user at 0.75 s", 9);
  mark = ReadRunState(path);
  EXPECT_EQ(mark->state, "ended");
  EXPECT_EQ(mark->stop_reason, "interrupted by the user at 0.75 s");
  EXPECT_EQ(mark->records, 9u);
  EXPECT_FALSE(fs::exists(dir / "run_state.json.next"));
}

TEST(RunStateWriterTest, NeverStartedKeepsWhy) {
  const fs::path dir = surge::testing::FreshDir("surge_run_state_never");
  RunStateWriter writer(dir, 1000);
  writer.Waiting();
  writer.NeverStarted("only 0 of 2 workers were ready");
  auto mark = ReadRunState(dir / "run_state.json");
  ASSERT_TRUE(mark.ok());
  EXPECT_EQ(mark->state, "never_started");
  EXPECT_EQ(mark->stop_reason, "only 0 of 2 workers were ready");
}

TEST(ReadRunStateTest, MissingAndBrokenFilesAreTold) {
  const fs::path dir = surge::testing::FreshDir("surge_run_state_bad");
  EXPECT_TRUE(absl::IsNotFound(ReadRunState(dir / "run_state.json").status()));
  std::ofstream(dir / "run_state.json") << "{\"state\": 3";
  EXPECT_TRUE(absl::IsDataLoss(ReadRunState(dir / "run_state.json").status()));
}

}  // namespace
}  // namespace surge::coordinator
