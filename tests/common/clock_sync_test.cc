// The clock-sync estimator (R-DIST-4) on exact synthetic exchanges: a known
// true relation worker = coord + offset + drift·(coord − c0), chosen network
// delays per leg (symmetric, asymmetric, outliers), and the estimate checked
// against the truth at its own reference instant.
#include "common/clock_sync.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "common/skewed_clock.h"
#include "tests/testing/simulated_clock.h"

namespace surge {
namespace {

// The true worker clock: worker(c) = c + offset + drift·(c − c0).
struct TrueClock {
  int64_t c0_ns = 1'000'000'000'000;  // ~17 min after the coordinator's epoch
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t Worker(int64_t coord_ns) const {
    return coord_ns + offset_ns +
           static_cast<int64_t>(std::llround((coord_ns - c0_ns) * drift_ppm * 1e-6));
  }
  int64_t OffsetAt(int64_t coord_ns) const { return Worker(coord_ns) - coord_ns; }
};

// One exchange that leaves the worker at coordinator instant `send_coord`,
// takes `up` to the coordinator, `proc` there and `down` back.
ClockSample Exchange(const TrueClock& truth, int64_t send_coord, int64_t up, int64_t proc,
                     int64_t down) {
  ClockSample s;
  s.t1_worker_ns = truth.Worker(send_coord);
  s.t2_coord_ns = send_coord + up;
  s.t3_coord_ns = s.t2_coord_ns + proc;
  s.t4_worker_ns = truth.Worker(s.t3_coord_ns + down);
  return s;
}

TEST(ClockSyncTest, ConstantOffsetSymmetricDelaysIsExactAfterEightProbes) {
  TrueClock truth;
  truth.offset_ns = 250'000'000;
  ClockSyncEstimator est;
  int64_t c = truth.c0_ns;
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(est.ready(), k >= 8) << k;
    ASSERT_TRUE(est.AddSample(Exchange(truth, c, 40'000, 10'000, 40'000)));
    c += 5'000'000;  // 16 probes, 5 ms apart (the worker's default)
  }
  ASSERT_TRUE(est.ready());
  const ClockEstimate& e = est.estimate();
  EXPECT_EQ(e.mapping.offset_ns, 250'000'000);
  EXPECT_EQ(e.mapping.drift_ppm, 0.0);
  EXPECT_EQ(e.min_rtt_ns, 80'000);
  EXPECT_EQ(e.uncertainty_ns, 40'000 + 1'000);  // δ/2 + 1 µs
  EXPECT_EQ(e.samples, 16u);
  EXPECT_FALSE(e.drift_fitted);
  // Coordinator t0 → worker deadline and back.
  EXPECT_EQ(e.mapping.ToWorker(truth.c0_ns + 3'000'000'000), truth.c0_ns + 3'250'000'000);
  EXPECT_EQ(e.mapping.ToCoord(truth.c0_ns + 3'250'000'000), truth.c0_ns + 3'000'000'000);
}

TEST(ClockSyncTest, SevenProbesAreNotReady) {
  TrueClock truth;
  ClockSyncEstimator est;
  for (int k = 0; k < 7; ++k) {
    est.AddSample(Exchange(truth, truth.c0_ns + k * 5'000'000, 50'000, 0, 50'000));
  }
  EXPECT_FALSE(est.ready());
  est.AddSample(Exchange(truth, truth.c0_ns + 7 * 5'000'000, 50'000, 0, 50'000));
  EXPECT_TRUE(est.ready());
}

// Asymmetric legs bias one sample by (up − down)/2; the lowest-δ samples
// have the smallest bias. Outliers (a 20 ms stall on one leg) must not move
// the estimate.
struct Feeding {
  ClockSyncEstimator est;
  int64_t last_coord = 0;
};

void Feed(Feeding& run, const TrueClock& truth, double seconds, bool outliers, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> up_jitter(0, 300'000);    // 0..300 µs queueing
  std::uniform_int_distribution<int64_t> down_jitter(0, 100'000);  // 0..100 µs
  int64_t c = truth.c0_ns;
  int n = 0;
  auto one = [&](int64_t at) {
    int64_t up = 30'000 + up_jitter(rng);
    int64_t down = 30'000 + down_jitter(rng);
    if (outliers && n % 7 == 3) up += 20'000'000;  // a stalled leg
    if (outliers && n % 11 == 5) down += 15'000'000;
    ++n;
    run.est.AddSample(Exchange(truth, at, up, 5'000, down));
    run.last_coord = at;
  };
  for (int k = 0; k < 16; ++k) one(c + k * 5'000'000);  // pre-start probes
  // Then one heartbeat every 250 ms.
  for (int64_t t = 100'000'000; t <= static_cast<int64_t>(seconds * 1e9); t += 250'000'000) {
    one(c + t);
  }
}

TEST(ClockSyncTest, OffsetAndDriftWithAsymmetricDelaysAndOutliers) {
  TrueClock truth;
  truth.offset_ns = 250'000'000;
  truth.drift_ppm = 200;
  Feeding run;
  Feed(run, truth, 30, /*outliers=*/true, 7);
  const ClockEstimate& e = run.est.estimate();
  ASSERT_TRUE(e.ready);
  ASSERT_TRUE(e.drift_fitted);
  // The 20 ms stalls are under the 50 ms cap: accepted, then out-voted by
  // each bucket's lowest-δ sample.
  EXPECT_EQ(e.rejected, 0u);
  EXPECT_EQ(e.samples, 16u + 120u);
  const int64_t ref = e.mapping.ref_coord_ns;
  const int64_t err = e.mapping.offset_ns - truth.OffsetAt(ref);
  // Worst bias of one sample is (300 − 0)/2 µs = 150 µs; minima are far better.
  EXPECT_LT(std::llabs(err), 100'000) << err;
  EXPECT_NEAR(e.mapping.drift_ppm, 200.0, 5.0);
  // The stated uncertainty covers the actual error.
  EXPECT_GE(e.uncertainty_ns, std::llabs(err));
  EXPECT_LT(e.uncertainty_ns, 500'000);
  // The mapping the pacer reads: a deadline 2 s past the last sample.
  const int64_t later = ref + 2'000'000'000;
  EXPECT_LT(std::llabs(e.mapping.ToWorker(later) - truth.Worker(later)), 150'000);
  EXPECT_LE(std::llabs(e.mapping.ToCoord(e.mapping.ToWorker(later)) - later), 1);
}

TEST(ClockSyncTest, OutliersWithLargeRttDoNotMoveTheEstimate) {
  TrueClock truth;
  truth.offset_ns = -80'000'000;
  truth.drift_ppm = -50;
  Feeding clean, noisy;
  Feed(clean, truth, 20, /*outliers=*/false, 11);
  Feed(noisy, truth, 20, /*outliers=*/true, 11);
  const ClockEstimate& a = clean.est.estimate();
  const ClockEstimate& b = noisy.est.estimate();
  const int64_t ref = b.mapping.ref_coord_ns;
  EXPECT_LT(std::llabs(b.mapping.offset_ns - truth.OffsetAt(ref)), 100'000);
  EXPECT_NEAR(b.mapping.drift_ppm, -50.0, 8.0);
  // Same answer as without the outliers, within the jitter's reach.
  EXPECT_LT(std::llabs(a.mapping.ToWorker(ref) - b.mapping.ToWorker(ref)), 100'000);
}

TEST(ClockSyncTest, RejectsImpossibleAndHugeRoundTrips) {
  ClockSyncEstimator est;
  EXPECT_FALSE(est.AddSample({1000, 5000, 6000, 900}));         // t4 < t1
  EXPECT_FALSE(est.AddSample({1000, 5000, 4000, 9000}));        // t3 < t2
  EXPECT_FALSE(est.AddSample({0, 0, 60'000'000, 10'000'000}));  // δ < 0
  EXPECT_FALSE(est.AddSample({0, 0, 0, 60'000'000}));           // δ = 60 ms > 50 ms
  EXPECT_EQ(est.estimate().rejected, 4u);
  EXPECT_EQ(est.estimate().samples, 0u);
  EXPECT_TRUE(est.AddSample({0, 5, 5, 10}));
  EXPECT_EQ(est.estimate().mapping.offset_ns, 0);
}

TEST(ClockSyncTest, LargestStepIsTheBiggestJumpOfTheMappedDeadline) {
  TrueClock truth;
  truth.offset_ns = 1'000'000;
  ClockSyncEstimator est;
  for (int k = 0; k < 8; ++k) {
    est.AddSample(Exchange(truth, truth.c0_ns + k * 5'000'000, 50'000, 0, 50'000));
  }
  EXPECT_EQ(est.estimate().largest_step_ns, 0);
  // A clock that stepped by 5 ms, seen through a better (lower-δ) sample.
  truth.offset_ns = 6'000'000;
  est.AddSample(Exchange(truth, truth.c0_ns + 100'000'000, 10'000, 0, 10'000));
  // The mean of the three lowest-δ samples moved by 5 ms / 3.
  EXPECT_EQ(est.estimate().mapping.offset_ns, 1'000'000 + 5'000'000 / 3);
  EXPECT_EQ(est.estimate().largest_step_ns, 5'000'000 / 3);
}

TEST(ClockMappingTest, IdentityByDefaultAndDriftScalesWithDistance) {
  ClockMapping identity;
  EXPECT_EQ(identity.ToWorker(123456789), 123456789);
  EXPECT_EQ(identity.ToCoord(123456789), 123456789);
  ClockMapping m{1'000'000'000, 250'000'000, 200};
  EXPECT_EQ(m.ToWorker(1'000'000'000), 1'250'000'000);
  EXPECT_EQ(m.ToWorker(11'000'000'000), 11'252'000'000);  // +200 µs/s × 10 s
  EXPECT_EQ(m.ToCoord(11'252'000'000), 11'000'000'000);
  EXPECT_EQ(m.ToWorker(-9'000'000'000), -9'000'000'000 + 250'000'000 - 2'000'000);
}

TEST(SkewedClockTest, ShiftsAndSkewsItsBaseAndSleepsToTheSkewedDeadline) {
  surge::testing::AutoAdvanceClock base(Clock::TimePoint(std::chrono::seconds(100)));
  SkewedClock skewed(base, 250'000'000, 200);
  EXPECT_EQ(ToNanos(skewed.Now()), 100'250'000'000);
  base.AdvanceBy(std::chrono::seconds(10));
  EXPECT_EQ(ToNanos(skewed.Now()), 110'252'000'000);  // + 200 µs/s × 10 s
  EXPECT_EQ(skewed.TrueOffsetAt(110'000'000'000), 252'000'000);
  skewed.SleepUntil(FromNanos(120'254'000'000));  // 10 s later on the skewed clock
  EXPECT_EQ(ToNanos(base.Now()), 120'000'000'000);
  EXPECT_EQ(ToNanos(skewed.Now()), 120'254'000'000);
  EXPECT_EQ(skewed.ToBase(skewed.FromBase(123'456'789'012)), 123'456'789'012);
}

}  // namespace
}  // namespace surge
