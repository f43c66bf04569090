// The pacer tells the sender the rate its schedule begins at, once, as
// soon as t0 is known and assignments are held, before the first
// preparation (RequestSender::WarmConnections): the held assignments
// within start_rate_window of the first over that window, or over the span
// the queue covers when that is shorter; the preparations held at once,
// min(max_prepared, rate × prepare_lead). On simulated time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/testing/fake_request_sender.h"
#include "tests/testing/simulated_clock.h"
#include "worker/send_loop.h"

namespace surge::worker {
namespace {

using surge::testing::AutoAdvanceClock;
using surge::testing::FakeRequestSender;

constexpr auto& Make = surge::testing::MakeAssignment;
constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;

// `n` assignments `gap_ns` apart from offset 0.
std::vector<surge::v1::Assignment> Regular(int n, int64_t gap_ns) {
  std::vector<surge::v1::Assignment> out;
  for (int i = 0; i < n; ++i) out.push_back(Make(static_cast<uint64_t>(i), i * gap_ns));
  return out;
}

// Runs the pacer over `assignments` (t0 500 ms from now) until request 0
// is sent; returns the sender and t0.
struct Ran {
  std::vector<FakeRequestSender::WarmConnectionsCall> calls;
  std::vector<FakeRequestSender::Sent> prepared;
  int64_t t0 = 0;
};
Ran RunUntilTheFirstSend(std::vector<surge::v1::Assignment> assignments,
                         SendLoopOptions options = {}) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  Ran ran;
  ran.t0 = ToNanos(clock.Now()) + 500 * kMs;
  loop.SetStart(ran.t0);
  loop.Enqueue(std::move(assignments));
  sender.set_after_send([&](uint64_t index) {
    if (index == 0) loop.Stop();
  });
  loop.Run();
  ran.calls = sender.warm_connections_calls();
  ran.prepared = sender.prepared();
  return ran;
}

TEST(SendLoopWarmConnectionsTest, AQueuePastTheWindowGivesItsCountOverTheWindow) {
  // 20,000 RPS for 200 ms: 2,000 in the first 100 ms.
  const Ran ran = RunUntilTheFirstSend(Regular(4000, 50 * kUs));
  ASSERT_EQ(ran.calls.size(), 1u);
  EXPECT_DOUBLE_EQ(ran.calls[0].rate_rps, 20000.0);
  // 20,000/s × 50 ms = 1,000 preparations ahead, capped at max_prepared.
  EXPECT_EQ(ran.calls[0].prepared_at_once, 128u);
  // Before t0 and before the first preparation (t0 + 0 − 50 ms).
  ASSERT_FALSE(ran.prepared.empty());
  EXPECT_LT(ran.calls[0].at_ns, ran.prepared[0].at_ns);
  EXPECT_EQ(ran.prepared[0].at_ns, ran.t0 - 50 * kMs);
}

TEST(SendLoopWarmConnectionsTest, AShorterQueueGivesItsGapsOverItsSpan) {
  // One batch of 512 at 20,000 RPS covers 25.55 ms of the 100 ms window.
  const Ran ran = RunUntilTheFirstSend(Regular(512, 50 * kUs));
  ASSERT_EQ(ran.calls.size(), 1u);
  EXPECT_DOUBLE_EQ(ran.calls[0].rate_rps, 20000.0);
  EXPECT_EQ(ran.calls[0].prepared_at_once, 128u);
}

TEST(SendLoopWarmConnectionsTest, ALowRateAsksForItsOwnLeadsPreparations) {
  // 200 RPS (5 ms apart) for 1 s: 20 in the first 100 ms; 200 × 50 ms = 10.
  const Ran ran = RunUntilTheFirstSend(Regular(200, 5 * kMs));
  ASSERT_EQ(ran.calls.size(), 1u);
  EXPECT_DOUBLE_EQ(ran.calls[0].rate_rps, 200.0);
  EXPECT_EQ(ran.calls[0].prepared_at_once, 10u);
}

TEST(SendLoopWarmConnectionsTest, EveryRequestAtOneInstantCountsOverTheWindow) {
  // Instant mode: 300 at offset 0, 300 over the 100 ms window.
  std::vector<surge::v1::Assignment> all;
  for (uint64_t i = 0; i < 300; ++i) all.push_back(Make(i, 0));
  const Ran ran = RunUntilTheFirstSend(std::move(all));
  ASSERT_EQ(ran.calls.size(), 1u);
  EXPECT_DOUBLE_EQ(ran.calls[0].rate_rps, 3000.0);
  EXPECT_EQ(ran.calls[0].prepared_at_once, 128u);
}

TEST(SendLoopWarmConnectionsTest, WindowZeroNeverAsks) {
  const Ran ran = RunUntilTheFirstSend(
      Regular(100, 50 * kUs), SendLoopOptions{.start_rate_window = std::chrono::milliseconds(0)});
  EXPECT_TRUE(ran.calls.empty());
  EXPECT_FALSE(ran.prepared.empty());
}

TEST(SendLoopWarmConnectionsTest, NothingIsAskedBeforeTheStartIsKnown) {
  // Assignments held and the pacer running (its simulated time going by
  // in slices), no t0: no call. Then t0, and the call with it.
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  SendLoop loop(clock, sender, SendLoopOptions{}, [](surge::v1::RequestRecord) {});
  loop.Enqueue(Regular(100, 1 * kMs));
  std::atomic<bool> sent{false};
  sender.set_after_send([&](uint64_t index) {
    if (index == 0) sent = true;
  });
  std::thread pacer([&loop] { loop.Run(); });
  while (ToNanos(clock.Now()) < ToNanos(surge::testing::kSimulatedStart) + 2000 * kMs) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(sender.warm_connections_calls().empty());
  loop.SetStart(ToNanos(clock.Now()) + 60'000 * kMs);
  for (int i = 0; i < 10000 && !sent; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  loop.Stop();
  pacer.join();
  const auto calls = sender.warm_connections_calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_DOUBLE_EQ(calls[0].rate_rps, 1000.0);  // 100 in the first 100 ms (99 ms covered)
  EXPECT_EQ(calls[0].prepared_at_once, 50u);
}

}  // namespace
}  // namespace surge::worker
