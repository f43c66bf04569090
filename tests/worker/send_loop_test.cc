// The pacer on simulated time: every request is released exactly at
// t0 + offset_i (absolute deadlines), whatever the order of arrival, and the
// lease and the concurrency cap hold requests back (R-REQ-2).
// Each request is prepared exactly prepare_lead before its deadline. One
// thread runs the pacer on an AutoAdvanceClock; where a second party acts
// while the pacer waits (a stop, an answer), both run on a SimulatedClock.
// The late-send policies are in send_loop_late_policy_test.cc.
#include "worker/send_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "tests/testing/fake_request_sender.h"
#include "tests/testing/simulated_clock.h"

namespace surge::worker {
namespace {

using surge::testing::AutoAdvanceClock;
using surge::testing::FakeRequestSender;
using surge::testing::kSimulatedStart;
using surge::testing::SimulatedClock;

constexpr auto& Make = surge::testing::MakeAssignment;
constexpr int64_t kMs = 1000000;
constexpr int64_t kS = 1000000000;

TEST(SendLoopTest, ReleasesAtExactAbsoluteDeadlines) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  std::vector<surge::v1::RequestRecord> records;
  SendLoop loop(clock, sender, SendLoopOptions{.worker_index = 3},
                [&](surge::v1::RequestRecord r) { records.push_back(std::move(r)); });
  const int64_t t0 = ToNanos(clock.Now()) + 500000000;
  loop.SetStart(t0);
  // Out of order on purpose; the pacer orders by offset.
  loop.Enqueue({Make(2, 300000000), Make(0, 100000000), Make(1, 100000001), Make(3, 2500000000)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 3) loop.Stop();
  });
  loop.Run();
  const auto sent = sender.sent();
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].index, 0u);
  EXPECT_EQ(sent[0].at_ns, t0 + 100000000);
  EXPECT_EQ(sent[1].index, 1u);
  EXPECT_EQ(sent[1].at_ns, t0 + 100000001);
  EXPECT_EQ(sent[2].at_ns, t0 + 300000000);
  EXPECT_EQ(sent[3].at_ns, t0 + 2500000000);
  ASSERT_EQ(records.size(), 4u);
  // Record times are relative to t0; lateness = sent − planned = 0 here.
  EXPECT_EQ(records[2].planned_ns(), 300000000);
  EXPECT_EQ(records[2].sent_ns(), 300000000);
  EXPECT_EQ(records[2].released_ns(), 300000000);
  EXPECT_EQ(records[2].worker(), 3);
}

// R-DIST-4: the plan is on the coordinator's clock; each deadline goes
// through the clock mapping current at that moment, and record times come
// back on the coordinator's clock.
TEST(SendLoopTest, DeadlinesGoThroughTheClockMappingReadAtEachDeadline) {
  AutoAdvanceClock clock;  // the worker's own clock
  FakeRequestSender sender(clock);
  std::vector<surge::v1::RequestRecord> records;
  SendLoop loop(clock, sender, SendLoopOptions{},
                [&](surge::v1::RequestRecord r) { records.push_back(std::move(r)); });
  // worker = coordinator + 250 ms + 200 ppm · (coordinator − ref).
  const int64_t ref = ToNanos(clock.Now()) - 250000000;
  const ClockMapping first{ref, 250000000, 200};
  loop.SetClockMapping(first);
  const int64_t t0_coord = ref + 1000000000;
  loop.SetStart(t0_coord);
  loop.Enqueue({Make(0, 0), Make(1, 2000000000), Make(2, 4000000000)});
  // After request 1, a corrected estimate (+1 ms, drift −100 ppm): request 2
  // must use it.
  const ClockMapping second{ref + 3000000000, 251000000, -100};
  sender.set_after_send([&](uint64_t index) {
    if (index == 1) loop.SetClockMapping(second);
    if (index == 2) loop.Stop();
  });
  loop.Run();
  const auto sent = sender.sent();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].at_ns, ref + 1000000000 + 250000000 + 200000);  // 1 s × 200 ppm
  EXPECT_EQ(sent[1].at_ns, ref + 3000000000 + 250000000 + 600000);  // 3 s × 200 ppm
  EXPECT_EQ(sent[2].at_ns, ref + 5000000000 + 251000000 - 200000);  // 2 s × −100 ppm
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    // On time on the coordinator's clock, whatever the local clock says.
    EXPECT_EQ(r.sent_ns(), r.planned_ns()) << r.index();
    EXPECT_EQ(r.released_ns(), r.planned_ns()) << r.index();
  }
}

TEST(SendLoopTest, LateWakeUpsShowAsLatenessAndDoNotAccumulate) {
  AutoAdvanceClock clock;
  clock.set_oversleep(std::chrono::microseconds(40));
  FakeRequestSender sender(clock);
  std::vector<surge::v1::RequestRecord> records;
  SendLoop loop(clock, sender, SendLoopOptions{},
                [&](surge::v1::RequestRecord r) { records.push_back(std::move(r)); });
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  std::vector<surge::v1::Assignment> list;
  for (uint64_t i = 0; i < 100; ++i)
    list.push_back(Make(i, static_cast<int64_t>(i + 1) * 10000000));
  loop.Enqueue(list);
  sender.set_after_send([&](uint64_t index) {
    if (index == 99) loop.Stop();
  });
  loop.Run();
  ASSERT_EQ(records.size(), 100u);
  // Each wake-up is 40 µs late, but deadlines are absolute: the error stays
  // 40 µs instead of growing to 100 × 40 µs.
  for (const auto& r : records) EXPECT_EQ(r.sent_ns() - r.planned_ns(), 40000) << r.index();
}

// The same 40 µs, seen live by the worker's SendHealth at the hand-off.
TEST(SendLoopTest, LateWakeUpsShowInSendHealth) {
  AutoAdvanceClock clock;
  clock.set_oversleep(std::chrono::microseconds(40));
  FakeRequestSender sender(clock);
  const int64_t t0 = ToNanos(clock.Now());
  SendHealth health(t0, {}, std::chrono::seconds(2));
  SendLoop loop(clock, sender, SendLoopOptions{.health = &health}, [](surge::v1::RequestRecord) {});
  loop.SetStart(t0);
  std::vector<surge::v1::Assignment> list;
  for (uint64_t i = 0; i < 100; ++i)
    list.push_back(Make(i, static_cast<int64_t>(i + 1) * 10000000));
  loop.Enqueue(list);
  sender.set_after_send([&](uint64_t index) {
    if (index == 99) loop.Stop();
  });
  loop.Run();
  const surge::v1::SendHealth r = health.Report(ToNanos(clock.Now()), {}, 0);
  EXPECT_EQ(r.sends(), 100u);
  EXPECT_EQ(r.lateness_p50_ns(), 40000);
  EXPECT_EQ(r.lateness_p99_ns(), 40000);
  EXPECT_EQ(r.lateness_max_ns(), 40000);
  EXPECT_EQ(r.gate_waits(), 0u);
}

// A wait that began in time and ended at least 50 µs late is a late wake
// (the pacer lost its CPU): 40 µs late is none, 60 µs late is one per
// release. A wait that began already late is none: the pacer was behind
// (here a 25 ms hand-off of request 0, a slow hand-off, makes requests 1 and
// 2 late).
TEST(SendLoopTest, WaitsThatEndLateInTimeAreLateWakes) {
  const auto run = [](std::chrono::microseconds oversleep, SendHealth* health) {
    auto clock = std::make_unique<AutoAdvanceClock>();
    clock->set_oversleep(oversleep);
    FakeRequestSender sender(*clock);
    auto loop = std::make_unique<SendLoop>(*clock, sender, SendLoopOptions{.health = health},
                                           [](surge::v1::RequestRecord) {});
    loop->SetStart(ToNanos(clock->Now()));
    std::vector<surge::v1::Assignment> list;
    for (uint64_t i = 0; i < 100; ++i)
      list.push_back(Make(i, static_cast<int64_t>(i + 1) * 10000000));
    loop->Enqueue(list);
    sender.set_after_send([&](uint64_t index) {
      if (index == 0) clock->SleepUntilCoarse(clock->Now() + std::chrono::milliseconds(25));
      if (index == 99) loop->Stop();
    });
    loop->Run();
    // Request 0's hand-off is the one slow one.
    EXPECT_EQ(loop->slow_handoffs(), 1u);
    EXPECT_EQ(loop->slow_handoff_max_ns(), 25 * kMs);
    return std::make_pair(loop->late_wakes(), loop->late_wake_max_ns());
  };
  EXPECT_EQ(run(std::chrono::microseconds(40), nullptr), std::make_pair(uint64_t{0}, int64_t{0}));

  const int64_t t0 = ToNanos(kSimulatedStart);
  SendHealth health(t0, {}, std::chrono::seconds(10));
  EXPECT_EQ(run(std::chrono::microseconds(60), &health),
            std::make_pair(uint64_t{98}, int64_t{60000}));
  const surge::v1::SendHealth r = health.Report(t0 + 2 * kS, {}, 0);
  EXPECT_EQ(r.sends(), 100u);
  EXPECT_EQ(r.pacer_late_wakes(), 98u);
  EXPECT_EQ(r.pacer_late_wake_max_ns(), 60000);
  EXPECT_EQ(r.pacer_late_wake_ns(), 98 * 60000);
  // Requests 1 and 2 were late by the slow send, not by a late wake.
  EXPECT_GT(r.lateness_max_ns(), 10 * kMs);
}

// A coarse sleep on the way to a release that wakes past it is a late wake
// too. Coarse sleeps 3.5 ms late, releases 10 ms apart, no preparations:
// from 0 the pacer sleeps toward min(due − 1 ms, now + 2 ms) while more
// than a 2 ms slice is left, so it wakes at 5.5 and 11 ms (1 ms past the
// 10 ms deadline), at 16.5 and 22 ms (2 ms past 20), at 27.5 and 32.5 ms
// (2.5 past 30) and at 38 ms, from where the precise sleep reaches 40 ms
// on time; then the cycle repeats. 100 releases: 75 late wakes.
TEST(SendLoopTest, ACoarseSleepThatWakesPastTheReleaseIsALateWake) {
  AutoAdvanceClock clock;
  clock.set_coarse_oversleep(std::chrono::microseconds(3500));
  FakeRequestSender sender(clock);
  const int64_t t0 = ToNanos(clock.Now());
  SendHealth health(t0, {}, std::chrono::seconds(10));
  std::vector<int64_t> lateness;
  SendLoop loop(
      clock, sender,
      SendLoopOptions{.prepare_lead = std::chrono::microseconds(0), .health = &health},
      [&](surge::v1::RequestRecord r) { lateness.push_back(r.sent_ns() - r.planned_ns()); });
  loop.SetStart(t0);
  std::vector<surge::v1::Assignment> list;
  for (uint64_t i = 0; i < 100; ++i)
    list.push_back(Make(i, static_cast<int64_t>(i + 1) * 10 * kMs));
  loop.Enqueue(list);
  sender.set_after_send([&](uint64_t index) {
    if (index == 99) loop.Stop();
  });
  loop.Run();
  ASSERT_EQ(lateness.size(), 100u);
  const int64_t cycle[] = {kMs, 2 * kMs, 2500 * 1000, 0};
  for (size_t i = 0; i < lateness.size(); ++i) EXPECT_EQ(lateness[i], cycle[i % 4]) << i;
  EXPECT_EQ(loop.late_wakes(), 75u);
  EXPECT_EQ(loop.late_wake_max_ns(), 2500 * 1000);
  EXPECT_EQ(loop.slow_handoffs(), 0u);
  const surge::v1::SendHealth r = health.Report(t0 + 2 * kS, {}, 0);
  EXPECT_EQ(r.pacer_late_wakes(), 75u);
  EXPECT_EQ(r.pacer_late_wake_ns(), 25 * 5500 * 1000);
}

// An AutoAdvanceClock that calls `hook` with each sleep's deadline before
// the sleep: the test looks at the pacer while it waits.
class HookedClock final : public Clock {
 public:
  std::function<void(TimePoint)> hook;
  AutoAdvanceClock inner;
  TimePoint Now() override { return inner.Now(); }
  std::chrono::system_clock::time_point WallNow() override { return inner.WallNow(); }
  void SleepUntil(TimePoint deadline) override {
    if (hook) hook(deadline);
    inner.SleepUntil(deadline);
  }
  void SleepUntilCoarse(TimePoint deadline) override {
    if (hook) hook(deadline);
    inner.SleepUntilCoarse(deadline);
  }
  bool Await(ClockCondition& condition, std::unique_lock<std::mutex>& lock,
             absl::FunctionRef<bool()> done, TimePoint deadline) override {
    return inner.Await(condition, lock, done, deadline);
  }
  void Notify(ClockCondition& condition) override { inner.Notify(condition); }
};

// While the pacer waits for a release it began waiting for in time, a
// report can see how far past the deadline it already is (a stopped or
// preempted pacer, before its wait ends): from 50 µs past on; before the
// deadline, below the threshold, and outside a wait, nothing.
TEST(SendLoopTest, AWaitStillGoingOnPastItsDeadlineIsSeenAsItLasts) {
  HookedClock clock;
  FakeRequestSender sender(clock);
  SendLoop loop(clock, sender, SendLoopOptions{.prepare_lead = std::chrono::microseconds(0)},
                [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now());
  const int64_t due = t0 + 10 * kMs;
  int looked = 0;
  clock.hook = [&](Clock::TimePoint) {
    if (ToNanos(clock.Now()) >= due) return;
    ++looked;
    EXPECT_EQ(loop.WaitingLateNs(due + kMs), kMs);
    EXPECT_EQ(loop.WaitingLateNs(due + 50 * 1000), 50 * 1000);
    EXPECT_EQ(loop.WaitingLateNs(due + 49 * 1000), 0);
    EXPECT_EQ(loop.WaitingLateNs(due - kMs), 0);
  };
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 10 * kMs)});
  sender.set_after_send([&](uint64_t) {
    EXPECT_EQ(loop.WaitingLateNs(due + kMs), 0);  // released: not waiting
    loop.Stop();
  });
  loop.Run();
  EXPECT_GE(looked, 5);  // coarse sleeps of a 2 ms slice over 10 ms, then the precise one
}

TEST(SendLoopTest, NothingIsReleasedAfterTheLeaseExpires) {
  SimulatedClock clock;
  FakeRequestSender sender(clock);
  SendLoop loop(clock, sender, SendLoopOptions{}, [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  loop.SetLeaseExpiry(t0 + 150000000);
  loop.Enqueue({Make(0, 100000000), Make(1, 200000000), Make(2, 300000000)});
  // The coordinator's stop comes at 1 s, long after the lease ran out.
  std::thread stopper = clock.StartThread([&] {
    clock.SleepUntil(FromNanos(t0 + 1000000000));
    loop.Stop();
  });
  loop.Run();
  clock.Join(stopper);
  ASSERT_EQ(sender.sent().size(), 1u);
  EXPECT_EQ(sender.sent()[0].index, 0u);
  EXPECT_EQ(sender.sent()[0].at_ns, t0 + 100000000);
  const auto unreleased = loop.TakeUnreleased();
  ASSERT_EQ(unreleased.size(), 2u);
  EXPECT_EQ(unreleased[0].index(), 1u);
}

// A cap of 1: request 1, due at 20 ms, waits for the slot request 0 holds
// until its answer at 50 ms; it goes out at that instant, blocked 30 ms.
TEST(SendLoopTest, ConcurrencyCapHoldsRequestsAndRecordsBlockedTime) {
  SimulatedClock clock;
  FakeRequestSender sender(clock, /*complete_at_once=*/false);
  std::vector<surge::v1::RequestRecord> records;
  std::mutex mu;
  SendLoop loop(clock, sender, SendLoopOptions{.max_inflight = 1}, [&](surge::v1::RequestRecord r) {
    std::lock_guard<std::mutex> lock(mu);
    records.push_back(std::move(r));
  });
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 10000000), Make(1, 20000000)});
  std::thread pacer = clock.StartThread([&] { loop.Run(); });
  clock.SleepUntil(FromNanos(t0 + 50000000));
  EXPECT_EQ(sender.sent().size(), 1u);
  sender.CompleteOne();  // the answer to request 0
  clock.SleepUntil(FromNanos(t0 + 60000000));
  loop.Stop();
  clock.Join(pacer);
  sender.Shutdown(std::chrono::milliseconds(0));
  const auto sent = sender.sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].at_ns, t0 + 10000000);
  EXPECT_EQ(sent[1].at_ns, t0 + 50000000);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(records.size(), 2u);
  const auto& second = records[0].index() == 1 ? records[0] : records[1];
  EXPECT_EQ(second.released_ns(), 20000000);
  EXPECT_EQ(second.blocked_ns(), 30000000);
  EXPECT_EQ(second.sent_ns() - second.released_ns(), second.blocked_ns());
}

// R-REQ-2: a cap of 2, 6 requests due at once, a server
// that answers in 1.0 s. Requests 2..5 are held back: 2 and 3 get a slot at
// 1 s, 4 and 5 at 2 s. blocked_ns is the whole wait from the planned send to
// the slot, also for 3 and 5, which were queued behind a held-back request
// (before: 2 and 4 showed 1 s, 3 and 5 showed 0), so lateness = blocked.
TEST(SendLoopTest, BlockedTimeIsTheWholeWaitFromThePlannedSendToTheSlot) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  sender.set_latency(std::chrono::seconds(1));
  std::vector<surge::v1::RequestRecord> records;
  std::mutex mu;
  SendLoop loop(clock, sender,
                SendLoopOptions{.max_inflight = 2, .prepare_lead = std::chrono::microseconds(0)},
                [&](surge::v1::RequestRecord r) {
                  std::lock_guard<std::mutex> lock(mu);
                  records.push_back(std::move(r));
                });
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 0), Make(1, 0), Make(2, 0), Make(3, 0), Make(4, 0), Make(5, 0)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 5) loop.Stop();
  });
  loop.Run();
  clock.AdvanceBy(std::chrono::seconds(1));
  EXPECT_EQ(sender.inflight(), 0u);  // answers the last two
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(records.size(), 6u);
  std::sort(records.begin(), records.end(),
            [](const auto& a, const auto& b) { return a.index() < b.index(); });
  const int64_t expected_blocked[] = {0, 0, kS, kS, 2 * kS, 2 * kS};
  for (const auto& r : records) {
    EXPECT_EQ(r.blocked_ns(), expected_blocked[r.index()]) << r.index();
    EXPECT_EQ(r.sent_ns() - r.planned_ns(), r.blocked_ns()) << r.index();
  }
  // Request 3 was released (its deadline reached by the pacer) only when 2
  // got its slot; it waited no more at the gate itself.
  EXPECT_EQ(records[3].released_ns(), kS);
  EXPECT_EQ(records[2].released_ns(), 0);
}

// The pacer tells the worker's SendHealth the lateness of
// every hand-off and every wait at the gate, as they happen (no record is
// awaited). Cap 2, six requests due at 0, answers after 1 s: lateness 0, 0,
// 1, 1, 2, 2 s; the pacer waited at the gate twice (for requests 2 and 4).
TEST(SendLoopTest, HandOffLatenessAndGateWaitsReachSendHealth) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  sender.set_latency(std::chrono::seconds(1));
  const int64_t t0 = ToNanos(clock.Now());
  SendHealth health(t0, {}, std::chrono::seconds(10));
  SendLoop loop(
      clock, sender,
      SendLoopOptions{
          .max_inflight = 2, .prepare_lead = std::chrono::microseconds(0), .health = &health},
      [](surge::v1::RequestRecord) {});
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 0), Make(1, 0), Make(2, 0), Make(3, 0), Make(4, 0), Make(5, 0)});
  // Before the pacer runs, request 0 is already due: overdue by 0 at t0,
  // by 5 ms 5 ms later.
  EXPECT_EQ(loop.OverdueNs(t0), 0);
  EXPECT_EQ(loop.OverdueNs(t0 + 5000000), 5000000);
  sender.set_after_send([&](uint64_t index) {
    if (index == 5) loop.Stop();
  });
  loop.Run();
  EXPECT_EQ(loop.OverdueNs(t0 + 2 * kS), 0);  // nothing queued
  const surge::v1::SendHealth r = health.Report(t0 + 2 * kS, {}, 0);
  EXPECT_EQ(r.window_ns(), 2 * kS);
  EXPECT_EQ(r.sends(), 6u);
  EXPECT_EQ(r.gate_waits(), 2u);
  EXPECT_EQ(r.lateness_p50_ns(), kS);
  EXPECT_EQ(r.lateness_p99_ns(), 2 * kS);
  EXPECT_EQ(r.lateness_max_ns(), 2 * kS);
  clock.AdvanceBy(std::chrono::seconds(1));
}

// A request due after the pacer's last wait for a slot is not held back:
// blocked stays 0 even when it is sent with other requests in flight.
TEST(SendLoopTest, ARequestDueAfterTheWaitIsNotBlocked) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  sender.set_latency(std::chrono::seconds(1));
  std::vector<surge::v1::RequestRecord> records;
  std::mutex mu;
  SendLoop loop(clock, sender,
                SendLoopOptions{.max_inflight = 1, .prepare_lead = std::chrono::microseconds(0)},
                [&](surge::v1::RequestRecord r) {
                  std::lock_guard<std::mutex> lock(mu);
                  records.push_back(std::move(r));
                });
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  // 0 at 0 s; 1 at 0.5 s waits until 1 s; 2 at 2.5 s finds the slot free.
  loop.Enqueue({Make(0, 0), Make(1, kS / 2), Make(2, 5 * kS / 2)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 2) loop.Stop();
  });
  loop.Run();
  clock.AdvanceBy(std::chrono::seconds(1));
  EXPECT_EQ(sender.inflight(), 0u);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(records.size(), 3u);
  std::sort(records.begin(), records.end(),
            [](const auto& a, const auto& b) { return a.index() < b.index(); });
  EXPECT_EQ(records[0].blocked_ns(), 0);
  EXPECT_EQ(records[1].blocked_ns(), kS / 2);
  EXPECT_EQ(records[1].sent_ns(), kS);
  EXPECT_EQ(records[2].blocked_ns(), 0);
  EXPECT_EQ(records[2].sent_ns(), 5 * kS / 2);
}

TEST(SendLoopTest, PrepareComesExactlyPrepareLeadBeforeEachDeadline) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  SendLoopOptions options;
  options.prepare_lead = std::chrono::milliseconds(50);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now()) + 500 * kMs;
  loop.SetStart(t0);
  // Offsets 1 ns apart, closer than the lead, and far apart; out of order.
  loop.Enqueue({Make(3, 400 * kMs), Make(0, 100 * kMs), Make(1, 100 * kMs + 1),
                Make(2, 130 * kMs + 7), Make(4, 3000 * kMs)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 4) loop.Stop();
  });
  loop.Run();
  const auto prepared = sender.prepared();
  const auto sent = sender.sent();
  ASSERT_EQ(prepared.size(), 5u);
  ASSERT_EQ(sent.size(), 5u);
  const int64_t offsets[] = {100 * kMs, 100 * kMs + 1, 130 * kMs + 7, 400 * kMs, 3000 * kMs};
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(prepared[i].index, i);
    EXPECT_EQ(prepared[i].at_ns, t0 + offsets[i] - 50 * kMs) << i;
    EXPECT_EQ(sent[i].index, i);
    EXPECT_EQ(sent[i].at_ns, t0 + offsets[i]) << i;
  }
  EXPECT_TRUE(sender.cancelled().empty());
}

TEST(SendLoopTest, LateAssignmentsArePreparedAtOnceAndStillSentOnTime) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  SendLoopOptions options;
  options.prepare_lead = std::chrono::milliseconds(50);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  // Due in 10 ms and 30 ms: both less than the lead away.
  loop.Enqueue({Make(0, 10 * kMs), Make(1, 30 * kMs)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 1) loop.Stop();
  });
  loop.Run();
  const auto prepared = sender.prepared();
  ASSERT_EQ(prepared.size(), 2u);
  EXPECT_EQ(prepared[0].at_ns, t0);
  EXPECT_EQ(prepared[1].at_ns, t0);
  ASSERT_EQ(sender.sent().size(), 2u);
  EXPECT_EQ(sender.sent()[0].at_ns, t0 + 10 * kMs);
  EXPECT_EQ(sender.sent()[1].at_ns, t0 + 30 * kMs);
}

TEST(SendLoopTest, PreparationWaitsWhileAReleaseIsWithinTheGuard) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  SendLoopOptions options;
  options.prepare_lead = std::chrono::milliseconds(50);
  options.prepare_guard = std::chrono::milliseconds(1);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  // Request 1 would be prepared at 99.6 ms, 0.4 ms before request 0 goes
  // out: it is prepared right after that release instead.
  loop.Enqueue({Make(0, 100 * kMs), Make(1, 149'600'000)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 1) loop.Stop();
  });
  loop.Run();
  const auto prepared = sender.prepared();
  ASSERT_EQ(prepared.size(), 2u);
  EXPECT_EQ(prepared[1].index, 1u);
  EXPECT_EQ(prepared[1].at_ns, t0 + 100 * kMs);
  EXPECT_EQ(sender.sent()[0].at_ns, t0 + 100 * kMs);
  EXPECT_EQ(sender.sent()[1].at_ns, t0 + 149'600'000);
}

// What RunRegular saw: t0 and every Prepare and Send, in call order.
struct RegularRun {
  int64_t t0 = 0;
  std::vector<FakeRequestSender::Sent> prepared;
  std::vector<FakeRequestSender::Sent> sent;
};

// Runs `n` requests `gap_ns` apart (request i due at t0 + i·gap_ns, t0 =
// now + 100 ms) through a SendLoop with `options` on simulated time, until
// the last one is sent.
RegularRun RunRegular(const SendLoopOptions& options, uint64_t n, int64_t gap_ns) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  RegularRun run;
  run.t0 = ToNanos(clock.Now()) + 100 * kMs;
  loop.SetStart(run.t0);
  std::vector<surge::v1::Assignment> all;
  for (uint64_t i = 0; i < n; ++i) all.push_back(Make(i, static_cast<int64_t>(i) * gap_ns));
  loop.Enqueue(all);
  sender.set_after_send([&](uint64_t index) {
    if (index == n - 1) loop.Stop();
  });
  loop.Run();
  run.prepared = sender.prepared();
  run.sent = sender.sent();
  return run;
}

// Regular traffic (constant 1,000 RPS: a release every 1 ms, never more
// than the 1 ms guard away) must not starve preparations: before, each was
// put off until the prepared requests ran out and then prepared just before
// its own release (< 1 ms ahead, its connection not ready: sent from the
// I/O thread, wire p99 1.4 ms at 1,000 RPS and 3.6 ms at 5,000 RPS in
// docs/PERFORMANCE.md). A preparation that has waited until half the lead
// is left goes at once, whatever the guard says.
TEST(SendLoopTest, RegularTrafficStillPreparesEveryRequestWellAhead) {
  SendLoopOptions options;
  options.prepare_lead = std::chrono::milliseconds(50);
  options.prepare_guard = std::chrono::milliseconds(1);
  constexpr uint64_t kRequests = 300;
  const RegularRun run = RunRegular(options, kRequests, kMs);
  ASSERT_EQ(run.prepared.size(), kRequests);
  ASSERT_EQ(run.sent.size(), kRequests);
  for (uint64_t i = 0; i < kRequests; ++i) {
    const int64_t deadline = run.t0 + static_cast<int64_t>(i) * kMs;
    EXPECT_EQ(run.prepared[i].index, i);
    // Between the full lead and half of it before the deadline.
    EXPECT_LE(run.prepared[i].at_ns, deadline - 25 * kMs) << i;
    EXPECT_GE(run.prepared[i].at_ns, deadline - 50 * kMs) << i;
    EXPECT_EQ(run.sent[i].at_ns, deadline) << i;
  }
}

// At 20,000 RPS a 50 ms lead would hold 1,000 prepared requests (and
// connections); max_prepared bounds them, and each request is still
// prepared before its release: request i right after request i − cap goes.
TEST(SendLoopTest, PreparedRequestsAreCappedAndStillPreparedAhead) {
  SendLoopOptions options;
  options.prepare_lead = std::chrono::milliseconds(50);
  options.max_prepared = 8;
  constexpr uint64_t kRequests = 400;
  constexpr int64_t kGapNs = 50'000;  // 20,000 RPS
  const RegularRun run = RunRegular(options, kRequests, kGapNs);
  ASSERT_EQ(run.prepared.size(), kRequests);
  ASSERT_EQ(run.sent.size(), kRequests);
  for (uint64_t i = 0; i < kRequests; ++i) {
    const int64_t deadline = run.t0 + static_cast<int64_t>(i) * kGapNs;
    EXPECT_EQ(run.sent[i].at_ns, deadline) << i;
    EXPECT_EQ(run.prepared[i].index, i);
    // The first 8 at their full lead; then each at the release of i − 8.
    EXPECT_EQ(run.prepared[i].at_ns, i < 8 ? deadline - 50 * kMs : run.sent[i - 8].at_ns) << i;
    // Never more than 8 prepared and unreleased.
    uint64_t outstanding = 0;
    for (uint64_t j = 0; j <= i; ++j) outstanding += run.sent[j].at_ns > run.prepared[i].at_ns;
    EXPECT_LE(outstanding, 8u) << i;
  }
}

// The pacer's coarse sleeps (clock_nanosleep) wake up to ~300 µs late; only
// the last stretch before a release is a precise sleep. A preparation due
// just before a release must not be waited for with a coarse sleep: before,
// request 1's preparation (due at 99.99 ms, 10 µs before request 0's
// release) was slept for coarsely and request 0 went out at its deadline +
// the oversleep (β 0.5 at 1,000 RPS: lateness p90 82 µs on the wire,
// docs/PERFORMANCE.md). Now the coarse sleep ends `prepare_guard` before
// the release, which is then precise, and request 1 is prepared after it.
TEST(SendLoopTest, CoarseSleepsForPreparationsNeverRunIntoARelease) {
  AutoAdvanceClock clock;
  clock.set_coarse_oversleep(std::chrono::microseconds(300));
  FakeRequestSender sender(clock);
  SendLoopOptions options;
  options.prepare_lead = std::chrono::milliseconds(50);
  options.prepare_guard = std::chrono::milliseconds(1);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  // Request 0 is prepared at once (due in 100 ms, > the lead: at 50 ms).
  loop.Enqueue({Make(0, 100 * kMs), Make(1, 149'990'000), Make(2, 400 * kMs)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 2) loop.Stop();
  });
  loop.Run();
  const auto sent = sender.sent();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].at_ns, t0 + 100 * kMs);
  EXPECT_EQ(sent[1].at_ns, t0 + 149'990'000);
  EXPECT_EQ(sent[2].at_ns, t0 + 400 * kMs);
  const auto prepared = sender.prepared();
  ASSERT_EQ(prepared.size(), 3u);
  EXPECT_EQ(prepared[1].index, 1u);
  EXPECT_GE(prepared[1].at_ns, t0 + 100 * kMs);  // after request 0's release
  EXPECT_LT(prepared[1].at_ns, t0 + 149'990'000 - 25 * kMs);
}

TEST(SendLoopTest, StoppingCancelsPreparedButUnreleasedRequests) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  SendLoopOptions options;
  options.prepare_lead = std::chrono::milliseconds(50);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 100 * kMs), Make(1, 120 * kMs), Make(2, 140 * kMs), Make(3, 500 * kMs)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 0) loop.Stop();
  });
  loop.Run();
  ASSERT_EQ(sender.sent().size(), 1u);
  // 1 and 2 were prepared (at 70 and 90 ms), 3 was not.
  ASSERT_EQ(sender.prepared().size(), 3u);
  const auto cancelled = sender.cancelled();
  ASSERT_EQ(cancelled.size(), 2u);
  std::vector<uint64_t> cancelled_indexes = {cancelled[0].index, cancelled[1].index};
  std::sort(cancelled_indexes.begin(), cancelled_indexes.end());
  EXPECT_EQ(cancelled_indexes, (std::vector<uint64_t>{1, 2}));
  const auto unreleased = loop.TakeUnreleased();
  ASSERT_EQ(unreleased.size(), 3u);
  EXPECT_EQ(unreleased[0].index(), 1u);
  EXPECT_EQ(unreleased[1].index(), 2u);
  EXPECT_EQ(unreleased[2].index(), 3u);
}

TEST(SendLoopTest, ZeroPrepareLeadNeverPrepares) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  SendLoopOptions options;
  options.prepare_lead = std::chrono::microseconds(0);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 10 * kMs), Make(1, 20 * kMs)});
  sender.set_after_send([&](uint64_t index) {
    if (index == 1) loop.Stop();
  });
  loop.Run();
  EXPECT_TRUE(sender.prepared().empty());
  ASSERT_EQ(sender.sent().size(), 2u);
  EXPECT_EQ(sender.sent()[1].at_ns, t0 + 20 * kMs);
}

// A keep-alive retry's write time arrives absolute, like
// sent_ns, and leaves the worker relative to t0; sent_ns stays the first write.
TEST(SendLoopTest, RetrySendTimeIsRelativeToT0) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  sender.set_result([](surge::v1::RequestRecord& r) {
    r.set_http_retries(1);
    r.set_retry_reason("keepalive_closed: end of stream");
    r.set_retry_sent_ns(r.sent_ns() + 600000);  // 0.6 ms after the first write
  });
  std::vector<surge::v1::RequestRecord> records;
  SendLoop loop(clock, sender, SendLoopOptions{.worker_index = 0},
                [&](surge::v1::RequestRecord r) { records.push_back(std::move(r)); });
  const int64_t t0 = ToNanos(clock.Now()) + 500000000;
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 100000000)});
  sender.set_after_send([&](uint64_t) { loop.Stop(); });
  loop.Run();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].sent_ns(), 100000000);  // lateness 0: the first write
  EXPECT_EQ(records[0].retry_sent_ns(), 100600000);
  EXPECT_EQ(records[0].http_retries(), 1u);
}

}  // namespace
}  // namespace surge::worker
