// Warm-ups through the dispatcher and real worker sessions on simulated
// time (RunConfig.num_warmups): they are sent before t0 at exactly their
// planned negative offsets, over every worker, as indices after the plan's,
// each in exactly one record marked warmup; the outcome counts them apart;
// a stop during the warm-ups still leaves one record per warm-up and per
// planned request.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/plan/warmup.h"
#include "tests/testing/dispatch_fixtures.h"
#include "tests/testing/session_harness.h"

namespace surge::coordinator {
namespace {

using surge::testing::ConstantPlan;
using surge::testing::DispatchRig;
using surge::testing::FixedPayloads;
using surge::testing::LocalWorker;
using surge::testing::TestOptions;

TEST(DispatcherWarmupTest, WarmupsGoBeforeT0AtTheirOffsetsOverEveryWorker) {
  FixedPayloads warmup_payloads;
  DispatcherOptions options = TestOptions(2);
  options.warmup_offsets_ns = WarmupOffsetsNs(6, 100.0);  // -60 .. -10 ms
  options.warmup_payloads = &warmup_payloads;
  DispatchRig rig(ConstantPlan(100, 20), options);  // 10 ms apart, from 10 ms
  LocalWorker& w0 = rig.AddWorker("a", 0);
  LocalWorker& w1 = rig.AddWorker("b", 1);
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->records, 20u);
  EXPECT_EQ(outcome->warmup_records, 6u);
  EXPECT_EQ(outcome->rejected_records, 0u);
  ASSERT_EQ(records.size(), 26u);
  std::set<uint64_t> seen;
  std::set<int32_t> warmup_workers;
  for (const auto& r : records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
    EXPECT_TRUE(r.sent());
    EXPECT_EQ(r.sent_ns(), r.planned_ns()) << r.index();
    if (r.index() >= 20) {
      EXPECT_TRUE(r.warmup()) << r.index();
      EXPECT_EQ(r.planned_ns(), -static_cast<int64_t>(26 - r.index()) * 10'000'000) << r.index();
      warmup_workers.insert(r.worker());
    } else {
      EXPECT_FALSE(r.warmup()) << r.index();
      EXPECT_EQ(r.planned_ns(), static_cast<int64_t>(r.index() + 1) * 10'000'000);
    }
  }
  EXPECT_EQ(warmup_workers, (std::set<int32_t>{0, 1}));
  EXPECT_EQ(w0.sender->sent().size() + w1.sender->sent().size(), 26u);
  // On each worker every warm-up went before every planned request.
  for (const LocalWorker* w : {&w0, &w1}) {
    bool planned_seen = false;
    for (const auto& s : w->sender->sent()) {
      if (s.index < 20) planned_seen = true;
      if (s.index >= 20) {
        EXPECT_FALSE(planned_seen) << "warm-up " << s.index << " after the plan";
      }
    }
  }
}

TEST(DispatcherWarmupTest, AStopDuringTheWarmupsLeavesOneRecordEach) {
  FixedPayloads warmup_payloads;
  DispatcherOptions options = TestOptions(2);
  options.warmup_offsets_ns = WarmupOffsetsNs(100, 100.0);  // -1 s .. -10 ms
  options.warmup_payloads = &warmup_payloads;
  options.drain = std::chrono::milliseconds(0);
  DispatchRig rig(ConstantPlan(100, 20), options);
  rig.AddWorker("a", 0);
  rig.AddWorker("b", 1);
  // t0 comes 1.175 s after the start (once the workers are ready, the
  // 0.1 s lead and 1 s of warm-ups): stop 1 s after the start, in the
  // middle of the warm-ups.
  rig.StartThread([&rig] {
    rig.clock.SleepUntil(rig.clock.Now() + std::chrono::milliseconds(1000));
    rig.dispatcher.RequestStop();
  });
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->interrupted);
  EXPECT_LT(outcome->interrupted_at_ns, 0);
  EXPECT_EQ(outcome->records, 20u);
  EXPECT_EQ(outcome->warmup_records, 100u);
  ASSERT_EQ(records.size(), 120u);
  std::set<uint64_t> seen;
  size_t warm_ok = 0, warm_not_sent = 0;
  for (const auto& r : records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    EXPECT_EQ(r.warmup(), r.index() >= 20) << r.index();
    if (r.index() < 20) {
      EXPECT_EQ(r.status(), surge::v1::NOT_SENT) << r.index();  // nothing planned was sent
    } else if (r.status() == surge::v1::OK) {
      ++warm_ok;
      EXPECT_LE(r.sent_ns(), outcome->interrupted_at_ns) << r.index();
    } else {
      EXPECT_EQ(r.status(), surge::v1::NOT_SENT) << r.index();
      ++warm_not_sent;
    }
  }
  EXPECT_GT(warm_ok, 0u);
  EXPECT_GT(warm_not_sent, 0u);
  EXPECT_EQ(warm_ok + warm_not_sent, 100u);
}

}  // namespace
}  // namespace surge::coordinator
