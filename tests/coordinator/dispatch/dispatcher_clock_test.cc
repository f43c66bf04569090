// The shared clock through real worker sessions on simulated time: a
// worker on a skewed clock measures it and sends on the coordinator's
// schedule, and a worker told it shares the coordinator's clock maps with
// offset 0 and reports the estimate beside it (R-DIST-4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/skewed_clock.h"
#include "coordinator/dispatch/dispatcher.h"
#include "tests/testing/dispatch_fixtures.h"
#include "tests/testing/session_harness.h"

namespace surge::coordinator {
namespace {

using surge::testing::ConstantPlan;
using surge::testing::DispatchRig;
using surge::testing::LocalWorker;
using surge::testing::TestOptions;

// R-DIST-4: worker 0 runs on a clock 250 ms ahead that gains 200 ppm. It
// measures that (probes, then every heartbeat ack), reports it, and sends on
// the coordinator's schedule: the truth is taken from the skewed clock
// itself (ToBase), not from the worker's own records.
TEST(DispatcherClockTest, SkewedWorkerClockIsMeasuredAndItsSendsStayOnSchedule) {
  DispatchRig rig(ConstantPlan(200, 1000), TestOptions(2));  // 5 s
  SkewedClock skewed(rig.clock, 250'000'000, 200);
  LocalWorker* w[2] = {&rig.AddWorker("skewed", 0, {.clock = &skewed}), &rig.AddWorker("plain", 1)};
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(records.size(), 1000u);
  ASSERT_EQ(outcome->clocks.size(), 2u);

  const surge::v1::ClockReport& c0 = outcome->clocks[0];
  ASSERT_GE(c0.samples(), 16u);  // the probes and then the heartbeats
  const int64_t truth0 = skewed.TrueOffsetAt(c0.ref_coord_ns());
  EXPECT_NEAR(static_cast<double>(c0.offset_ns()), static_cast<double>(truth0), 1e6);
  EXPECT_NEAR(truth0, 250'000'000 + 1'000'000, 1'000'000);  // 200 ppm over ~5 s
  EXPECT_TRUE(c0.drift_fitted());
  EXPECT_NEAR(c0.drift_ppm(), 200, 50);
  const surge::v1::ClockReport& c1 = outcome->clocks[1];
  EXPECT_LT(std::abs(c1.offset_ns()), 1'000'000);
  EXPECT_NEAR(c1.drift_ppm(), 0, 50);

  // True lateness on the coordinator's clock, per worker.
  auto median_lateness_ms = [&](int k) {
    std::vector<double> late;
    for (const auto& s : w[k]->sender->sent()) {
      const int64_t true_ns = k == 0 ? skewed.ToBase(s.at_ns) : s.at_ns;
      late.push_back((true_ns - outcome->t0_ns - static_cast<int64_t>(s.index + 1) * 5'000'000) /
                     1e6);
    }
    EXPECT_EQ(late.size(), 500u);
    std::sort(late.begin(), late.end());
    // Never early by more than the clock error allows.
    EXPECT_GT(late.front(), -1.0) << "worker " << k;
    return late[late.size() / 2];
  };
  const double m0 = median_lateness_ms(0);
  const double m1 = median_lateness_ms(1);
  EXPECT_LT(std::abs(m0 - m1), 2.0) << m0 << " vs " << m1;
  // Without the mapping worker 0 would be 250 ms off.
  EXPECT_LT(std::abs(m0), 2.0);
  // Its records are on the coordinator's clock too: each record's send time
  // is the true one within the estimate's error.
  std::map<uint64_t, int64_t> true_sent_ns;
  for (const auto& s : w[0]->sender->sent()) true_sent_ns[s.index] = skewed.ToBase(s.at_ns);
  for (const auto& r : records) {
    if (r.worker() != 0) continue;
    ASSERT_TRUE(true_sent_ns.count(r.index())) << r.index();
    EXPECT_LT(std::abs(r.sent_ns() - (true_sent_ns[r.index()] - outcome->t0_ns)), 1'000'000)
        << r.index();
  }
}

// A worker told it shares the coordinator's clock (same_clock: `surge run`'s
// own children) maps deadlines with offset 0, whatever its probes estimate,
// and reports 0 with the estimate beside it. Here the claim is deliberately
// false (a clock 250 ms behind), so that the two can be told apart: the sends
// follow the worker's raw clock, and the report still shows the −250 ms the
// probes measured.
TEST(DispatcherClockTest, SameClockWorkerMapsWithOffsetZeroAndReportsTheEstimate) {
  DispatchRig rig(ConstantPlan(200, 100), TestOptions(1));  // 0.5 s
  SkewedClock skewed(rig.clock, -250'000'000, 0);
  LocalWorker& w = rig.AddWorker("local", 0, {.clock = &skewed, .same_clock = true});
  const auto& outcome = rig.Run();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(rig.records.size(), 100u);
  ASSERT_EQ(outcome->clocks.size(), 1u);
  const surge::v1::ClockReport& c = outcome->clocks[0];
  EXPECT_TRUE(c.same_clock());
  EXPECT_EQ(c.offset_ns(), 0);
  EXPECT_EQ(c.drift_ppm(), 0);
  EXPECT_EQ(c.uncertainty_ns(), 0);
  EXPECT_GE(c.samples(), 8u);
  EXPECT_NEAR(static_cast<double>(c.measured_offset_ns()), -250e6, 1e6);
  // Each send at t0 + offset on the worker's own raw clock (never early, on
  // time within generous bounds), i.e. 250 ms late on the true clock.
  ASSERT_EQ(w.sender->sent().size(), 100u);
  std::vector<double> late_ms;
  for (const auto& s : w.sender->sent()) {
    const int64_t planned_ns = outcome->t0_ns + static_cast<int64_t>(s.index + 1) * 5'000'000;
    late_ms.push_back((s.at_ns - planned_ns) / 1e6);
  }
  std::sort(late_ms.begin(), late_ms.end());
  EXPECT_GE(late_ms.front(), 0.0);
  EXPECT_LT(late_ms[late_ms.size() / 2], 50.0);
}

}  // namespace
}  // namespace surge::coordinator
