// The shared clock's results as run facts and in words (R-DIST-4).
#include "coordinator/report/clock_summary.h"

#include <gtest/gtest.h>

namespace surge::coordinator {
namespace {

surge::v1::ClockReport Report(int64_t offset_ns, double ppm, int64_t u_ns) {
  surge::v1::ClockReport r;
  r.set_offset_ns(offset_ns);
  r.set_drift_ppm(ppm);
  r.set_uncertainty_ns(u_ns);
  r.set_ref_coord_ns(5'000'000'000);
  r.set_samples(40);
  r.set_rejected(1);
  r.set_min_rtt_ns(80'000);
  r.set_largest_step_ns(300'000);
  r.set_drift_fitted(true);
  return r;
}

TEST(ClockSummaryTest, JsonPerWorkerWithTruthForSimulatedClocks) {
  surge::v1::ClockReport skewed = Report(252'000'123, 199.87654, 55'000);
  skewed.set_simulated(true);
  skewed.set_simulated_offset_ns(252'030'000);
  skewed.set_simulated_drift_ppm(200);
  const ClockSyncFacts j = ClockSyncFactsOf({skewed, Report(-40'000, -1.5, 60'000), {}});
  ASSERT_EQ(j.size(), 3);
  EXPECT_EQ(j[0].worker(), 0u);
  EXPECT_TRUE(j[0].reported());
  EXPECT_EQ(j[0].offset_ns(), 252'000'123);
  EXPECT_DOUBLE_EQ(j[0].offset_ms(), 252.000123);
  EXPECT_DOUBLE_EQ(j[0].drift_ppm(), 199.877);
  EXPECT_EQ(j[0].uncertainty_ns(), 55'000);
  EXPECT_EQ(j[0].at_coord_ns(), 5'000'000'000);
  EXPECT_EQ(j[0].offset_error_ns(), 252'000'123 - 252'030'000);
  EXPECT_EQ(j[0].samples(), 40u);
  EXPECT_FALSE(j[1].has_simulated_offset_ns());
  EXPECT_EQ(j[2].worker(), 2u);
  EXPECT_FALSE(j[2].reported());
  EXPECT_FALSE(j[2].has_offset_ns());
  EXPECT_EQ(ClockSyncText(j),
            "worker 0 +252.000 ms ±0.055 ms, +199.9 ppm (simulated +252.030 ms, +200.0 ppm); "
            "worker 1 -0.040 ms ±0.060 ms, -1.5 ppm; worker 2 no estimate");
}

// A worker that `surge run` started on its own host maps with offset 0,
// exactly; its probes' estimate is kept and shown as a check.
TEST(ClockSummaryTest, SameClockWorkerShowsZeroAndWhatItsProbesMeasured) {
  surge::v1::ClockReport local = Report(0, 0, 0);
  local.set_largest_step_ns(0);
  local.set_same_clock(true);
  local.set_measured_offset_ns(-123'456);
  const ClockSyncFacts j = ClockSyncFactsOf({local, Report(-40'000, -1.5, 60'000)});
  ASSERT_EQ(j.size(), 2);
  EXPECT_TRUE(j[0].has_offset_ns());
  EXPECT_EQ(j[0].offset_ns(), 0);
  EXPECT_EQ(j[0].uncertainty_ns(), 0);
  EXPECT_TRUE(j[0].has_same_clock());
  EXPECT_TRUE(j[0].same_clock());
  EXPECT_EQ(j[0].measured_offset_ns(), -123'456);
  EXPECT_DOUBLE_EQ(j[0].measured_offset_ms(), -0.123456);
  EXPECT_FALSE(j[1].has_same_clock());
  EXPECT_FALSE(j[1].has_measured_offset_ns());
  EXPECT_EQ(ClockSyncText(j),
            "worker 0 same clock (probes measured -0.123 ms); "
            "worker 1 -0.040 ms ±0.060 ms, -1.5 ppm");
}

TEST(ClockSummaryTest, ManyWorkersAreSummarizedAsRangesAndOldSummariesGiveNothing) {
  std::vector<surge::v1::ClockReport> many;
  for (int k = 0; k < 10; ++k) many.push_back(Report(k * 10'000, k - 5.0, 20'000 + k * 1000));
  EXPECT_EQ(ClockSyncText(ClockSyncFactsOf(many)),
            "10 workers: offset +0.000 to +0.090 ms, uncertainty ≤ 0.029 ms, drift -5.0 to +4.0 "
            "ppm");
  EXPECT_EQ(ClockSyncText(ClockSyncFacts()), "");
}

}  // namespace
}  // namespace surge::coordinator
