// The warm pool's accounting on simulated time: the take rate over its
// window, the mean hold, the spare target from them (Little's law with
// headroom), and the refills it asks for under the in-progress and total
// caps.
#include "worker/http/warm_pool.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace surge::worker {
namespace {

constexpr int64_t kMs = 1'000'000;

// Takes at `rate_rps` from `from_ns` for `duration_ns` (evenly spaced);
// returns the time after the last take.
int64_t TakeAtRate(WarmPool& pool, double rate_rps, int64_t from_ns, int64_t duration_ns,
                   bool cold = false) {
  const int64_t gap = static_cast<int64_t>(1e9 / rate_rps);
  int64_t t = from_ns;
  for (; t < from_ns + duration_ns; t += gap) pool.OnTake(t, cold);
  return t;
}

TEST(WarmPoolTest, NothingIsOpenedBeforeTheFirstTake) {
  WarmPool pool;
  EXPECT_EQ(pool.TakeRate(5 * kMs), 0.0);
  EXPECT_EQ(pool.SpareTarget(5 * kMs), 0u);
  EXPECT_EQ(pool.RefillsDue(5 * kMs, 0, 0), 0);
}

TEST(WarmPoolTest, TakeRateCountsTheLastWindowOnly) {
  WarmPool pool(WarmPoolOptions{.rate_window_ns = 80 * kMs});  // 8 slices of 10 ms
  // 10,000 takes/s for 80 ms: 800 takes in the window.
  const int64_t end = TakeAtRate(pool, 10000, 0, 80 * kMs);
  EXPECT_EQ(end, 80 * kMs);
  EXPECT_DOUBLE_EQ(pool.TakeRate(79 * kMs), 10000.0);
  // 40 ms later the first four slices (400 takes) have left the window.
  EXPECT_DOUBLE_EQ(pool.TakeRate(119 * kMs), 5000.0);
  // A whole window later nothing is left.
  EXPECT_DOUBLE_EQ(pool.TakeRate(160 * kMs), 0.0);
  EXPECT_EQ(pool.counts().takes, 800u);
  EXPECT_EQ(pool.counts().cold_takes, 0u);
}

TEST(WarmPoolTest, TheFirstTakesAreNotAveragedWithTheQuietBefore) {
  WarmPool pool(WarmPoolOptions{.rate_window_ns = 80 * kMs});  // 8 slices of 10 ms
  TakeAtRate(pool, 10000, 1000 * kMs, 30 * kMs);               // 300 takes from t = 1 s
  // Three slices since the first take: 300 over 30 ms, not over 80 ms.
  EXPECT_DOUBLE_EQ(pool.TakeRate(1029 * kMs), 10000.0);
  // From 1,079 ms the window is whole: 300 over 80 ms.
  EXPECT_DOUBLE_EQ(pool.TakeRate(1079 * kMs), 3750.0);
}

TEST(WarmPoolTest, HoldStartsAtTheFirstReturnThenAveragesWithItsWeight) {
  WarmPool pool(WarmPoolOptions{.initial_hold_ns = 3 * kMs, .hold_weight = 0.25});
  EXPECT_EQ(pool.hold_ns(), 3 * kMs);
  pool.OnReturn(2 * kMs);
  EXPECT_EQ(pool.hold_ns(), 2 * kMs);
  pool.OnReturn(6 * kMs);  // 2 + 0.25 × (6 − 2)
  EXPECT_EQ(pool.hold_ns(), 3 * kMs);
  pool.OnReturn(-5);  // a clock that went back counts as 0
  EXPECT_EQ(pool.hold_ns(), 2'250'000);
}

TEST(WarmPoolTest, SpareTargetIsRateTimesHoldTimesHeadroomPlusMinSpare) {
  WarmPool pool(WarmPoolOptions{.headroom = 0.5, .min_spare = 2, .rate_window_ns = 80 * kMs});
  TakeAtRate(pool, 20000, 0, 80 * kMs);
  pool.OnReturn(7 * kMs);  // a 6.4 ms preparation lead plus a 0.6 ms answer
  // 20,000/s × 7 ms = 140 busy on average; half as many again idle, plus 2.
  EXPECT_EQ(pool.SpareTarget(79 * kMs), 72u);
  EXPECT_EQ(pool.RefillsDue(79 * kMs, /*idle=*/72, /*open=*/212), 0);
  EXPECT_EQ(pool.RefillsDue(79 * kMs, /*idle=*/70, /*open=*/210), 2);
}

TEST(WarmPoolTest, LongAnswersAskForTheHorizonsTakesOnly) {
  WarmPool pool(WarmPoolOptions{.headroom = 0.5,
                                .max_spare_horizon_ns = 20 * kMs,
                                .min_spare = 2,
                                .rate_window_ns = 80 * kMs});
  TakeAtRate(pool, 1000, 0, 80 * kMs);
  pool.OnReturn(10'000 * kMs);  // 10 s streams: 10,000 busy at 1,000/s
  // Not 5,000 spare: the takes of the next 20 ms (20), plus 2.
  EXPECT_EQ(pool.SpareTarget(79 * kMs), 22u);
}

TEST(WarmPoolTest, RefillsInProgressAreCappedAndCountTowardTheTarget) {
  WarmPool pool(WarmPoolOptions{.headroom = 1.0,
                                .min_spare = 0,
                                .max_refilling = 16,
                                .rate_window_ns = 80 * kMs,
                                .initial_hold_ns = 10 * kMs});
  TakeAtRate(pool, 10000, 0, 80 * kMs, /*cold=*/true);
  // Before any return: 10,000/s × 10 ms = 100 busy, 100 spare wanted; an
  // empty pool may start 16 refills at once.
  EXPECT_EQ(pool.SpareTarget(79 * kMs), 100u);
  int due = pool.RefillsDue(79 * kMs, 0, 100);
  EXPECT_EQ(due, 16);
  pool.OnRefillsStarted(due);
  EXPECT_EQ(pool.RefillsDue(79 * kMs, 0, 116), 0);  // all 16 in progress
  // Three connect, one fails: four slots free; 3 idle + 12 refilling = 15.
  pool.OnRefillDone(true, 79 * kMs);
  pool.OnRefillDone(true, 79 * kMs);
  pool.OnRefillDone(true, 79 * kMs);
  EXPECT_EQ(pool.refilling(), 13);
  EXPECT_EQ(pool.RefillsDue(79 * kMs, 3, 116), 3);
  EXPECT_EQ(pool.counts().refills, 16u);
  EXPECT_EQ(pool.counts().refills_ok, 3u);
  EXPECT_EQ(pool.counts().cold_takes, 800u);
}

TEST(WarmPoolTest, AFailedRefillPausesTheRefills) {
  WarmPool pool(WarmPoolOptions{.headroom = 1.0,
                                .min_spare = 0,
                                .rate_window_ns = 80 * kMs,
                                .initial_hold_ns = 10 * kMs,
                                .failed_refill_pause_ns = 20 * kMs});
  TakeAtRate(pool, 10000, 0, 80 * kMs);
  pool.OnRefillsStarted(pool.RefillsDue(70 * kMs, 0, 100));  // 16
  pool.OnRefillDone(false, 71 * kMs);                        // refused
  EXPECT_EQ(pool.RefillsDue(71 * kMs, 0, 115), 0);
  EXPECT_EQ(pool.RefillsDue(90 * kMs, 0, 115), 0);
  // The pause is over at 91 ms: one slot is free again (15 in progress).
  EXPECT_EQ(pool.RefillsDue(91 * kMs, 0, 115), 1);
  EXPECT_EQ(pool.counts().refills_ok, 0u);
}

TEST(WarmPoolTest, NoRefillPastTheTotalCap) {
  WarmPool pool(WarmPoolOptions{.headroom = 1.0,
                                .min_spare = 0,
                                .max_refilling = 100,
                                .max_total = 120,
                                .rate_window_ns = 80 * kMs,
                                .initial_hold_ns = 10 * kMs});
  TakeAtRate(pool, 10000, 0, 80 * kMs);
  EXPECT_EQ(pool.RefillsDue(79 * kMs, 0, 100), 20);  // 100 wanted, 20 below the cap
  EXPECT_EQ(pool.RefillsDue(79 * kMs, 0, 120), 0);
  EXPECT_EQ(pool.RefillsDue(79 * kMs, 0, 500), 0);
}

TEST(WarmPoolTest, BelowTheMinimumRateNoSparesAreKept) {
  WarmPool pool(WarmPoolOptions{.min_spare = 2, .min_rate_rps = 500, .rate_window_ns = 80 * kMs});
  pool.OnReturn(4 * kMs);
  const int64_t slow_end = TakeAtRate(pool, 400, 0, 80 * kMs);
  EXPECT_DOUBLE_EQ(pool.TakeRate(slow_end - 1), 400.0);
  EXPECT_EQ(pool.SpareTarget(slow_end - 1), 0u);
  EXPECT_EQ(pool.RefillsDue(slow_end - 1, 0, 2), 0);
  // At 800/s (800 × 4 ms × 0.5 = 1.6, so 2) plus min_spare: 4.
  const int64_t fast_end = TakeAtRate(pool, 800, slow_end, 80 * kMs);
  EXPECT_DOUBLE_EQ(pool.TakeRate(fast_end - 1), 800.0);
  EXPECT_EQ(pool.SpareTarget(fast_end - 1), 4u);
  EXPECT_EQ(pool.RefillsDue(fast_end - 1, 0, 4), 4);
}

TEST(WarmPoolTest, TheStartOpensItsPreparationsTheBusyAndTheSpares) {
  WarmPool pool;  // initial hold 1 ms, headroom 0.5, min_spare 2, min rate 500/s
  // 20,000/s with 128 preparations: a hold of 6.4 ms (their lead) + 1 ms,
  // 148 busy; 20,000 × 3.7 ms = 74 spare, + 2.
  EXPECT_EQ(pool.StartConnections(20000, 128), 224u);
  // Below the minimum rate nothing, whatever the preparations.
  EXPECT_EQ(pool.StartConnections(400, 20), 0u);
  EXPECT_EQ(pool.StartConnections(0, 0), 0u);
  pool.OnStartConnectsStarted(224);
  EXPECT_EQ(pool.refilling(), 224);
  EXPECT_EQ(pool.counts().refills, 224u);
  EXPECT_EQ(pool.counts().at_start, 224u);
  // They count toward the target once takes begin: 224 refilling, nothing due.
  TakeAtRate(pool, 20000, 0, 10 * kMs);
  EXPECT_EQ(pool.RefillsDue(10 * kMs - 1, 0, 360), 0);
}

TEST(WarmPoolTest, TheStartStaysUnderTheTotalCap) {
  WarmPool pool(WarmPoolOptions{.max_total = 100});
  EXPECT_EQ(pool.StartConnections(20000, 128), 100u);
}

TEST(WarmPoolTest, TheTargetFollowsTheRateDown) {
  WarmPool pool(WarmPoolOptions{.headroom = 0.5, .min_spare = 2, .rate_window_ns = 80 * kMs});
  pool.OnReturn(4 * kMs);
  const int64_t end = TakeAtRate(pool, 20000, 0, 80 * kMs);
  EXPECT_EQ(pool.SpareTarget(end - 1), 42u);  // 80 busy × 0.5 + 2
  const int64_t slow_end = TakeAtRate(pool, 1000, end, 80 * kMs);
  // 1,000/s × 4 ms = 4 busy: 2 + 2 spare, so 40 idle ask for nothing.
  EXPECT_EQ(pool.SpareTarget(slow_end - 1), 4u);
  EXPECT_EQ(pool.RefillsDue(slow_end - 1, 40, 44), 0);
}

}  // namespace
}  // namespace surge::worker
