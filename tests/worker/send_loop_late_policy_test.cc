// The late-send policies of the pacer (send, skip, cap; Welcome's
// late_policy) on simulated time, with exact send times.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/testing/fake_request_sender.h"
#include "tests/testing/simulated_clock.h"
#include "worker/send_loop.h"

namespace surge::worker {
namespace {

using surge::testing::AutoAdvanceClock;
using surge::testing::FakeRequestSender;
using surge::testing::SimulatedClock;

constexpr int64_t kMs = 1000000;
constexpr int64_t kS = 1000000000;

constexpr auto& Make = surge::testing::MakeAssignment;

// The late-send policy on simulated time. Ten requests
// planned 10 ms apart (offsets 10..100 ms); the send of request 1 (at 20 ms)
// stalls the pacer for 55 ms, so it reaches request 2 (due at 30 ms) at
// 75 ms: 45 ms late, request 3 35 ms, 4 25 ms, 5 15 ms, 6 5 ms, 7 on time.
// Threshold 20 ms: late = reached more than 20 ms after the deadline.
struct LateRun {
  std::vector<surge::v1::RequestRecord> records;  // by index
  std::vector<FakeRequestSender::Sent> sent;
  std::vector<FakeRequestSender::Sent> cancelled;
  uint64_t late = 0, skipped = 0, delayed = 0;
};

LateRun RunWithStall(SendLoopOptions options) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  LateRun out;
  std::vector<surge::v1::RequestRecord> records;
  SendLoop loop(clock, sender, options,
                [&](surge::v1::RequestRecord r) { records.push_back(std::move(r)); });
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  std::vector<surge::v1::Assignment> list;
  for (uint64_t i = 0; i < 10; ++i) list.push_back(Make(i, static_cast<int64_t>(i + 1) * 10 * kMs));
  loop.Enqueue(list);
  sender.set_after_send([&](uint64_t index) {
    if (index == 1) clock.AdvanceBy(std::chrono::milliseconds(55));
    if (index == 9) loop.Stop();
  });
  loop.Run();
  out.sent = sender.sent();
  for (auto& s : out.sent) s.at_ns -= t0;  // relative to t0
  out.cancelled = sender.cancelled();
  std::sort(records.begin(), records.end(),
            [](const auto& a, const auto& b) { return a.index() < b.index(); });
  out.records = std::move(records);
  out.late = loop.late();
  out.skipped = loop.skipped();
  out.delayed = loop.delayed();
  return out;
}

SendLoopOptions LateOptions(surge::v1::LatePolicy policy, int64_t spacing_ns = 0) {
  SendLoopOptions o;
  o.prepare_lead = std::chrono::microseconds(0);
  o.late_policy = policy;
  o.late_threshold_ns = 20 * kMs;
  o.catch_up_spacing_ns = spacing_ns;
  return o;
}

// "send" (the default) sends every late request at once, as before; the
// ones reached more than 20 ms late (2, 3, 4) are marked late.
TEST(SendLoopLatePolicyTest, SendSendsLateRequestsAtOnceAndMarksThem) {
  const LateRun run = RunWithStall(LateOptions(surge::v1::LATE_POLICY_SEND));
  ASSERT_EQ(run.sent.size(), 10u);
  const int64_t expected_ms[] = {10, 20, 75, 75, 75, 75, 75, 80, 90, 100};
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(run.sent[i].index, i);
    EXPECT_EQ(run.sent[i].at_ns, expected_ms[i] * kMs) << i;
  }
  ASSERT_EQ(run.records.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(run.records[i].late(), i >= 2 && i <= 4) << i;
    EXPECT_EQ(run.records[i].catch_up_delay_ns(), 0) << i;
    EXPECT_EQ(run.records[i].status(), surge::v1::OK) << i;
  }
  EXPECT_EQ(run.late, 3u);
  EXPECT_EQ(run.skipped, 0u);
  EXPECT_EQ(run.delayed, 0u);
}

// The default options are the "send" policy: the same sends, bit for bit.
TEST(SendLoopLatePolicyTest, DefaultOptionsAreSendWithTenMsThreshold) {
  SendLoopOptions defaults;
  EXPECT_EQ(defaults.late_policy, surge::v1::LATE_POLICY_SEND);
  EXPECT_EQ(defaults.late_threshold_ns, 10 * kMs);
  defaults.prepare_lead = std::chrono::microseconds(0);
  const LateRun run = RunWithStall(defaults);
  ASSERT_EQ(run.sent.size(), 10u);
  EXPECT_EQ(run.sent[6].at_ns, 75 * kMs);
  // 10 ms threshold: 2 (45), 3 (35), 4 (25), 5 (15) are late; 6 (5) is not.
  EXPECT_EQ(run.late, 4u);
}

// "skip": 2, 3 and 4 are not sent; each is a SKIPPED record naming its
// lateness and the threshold. 5 (15 ms late) goes at 75 ms.
TEST(SendLoopLatePolicyTest, SkipRecordsLateRequestsAsSkippedWithTheReason) {
  const LateRun run = RunWithStall(LateOptions(surge::v1::LATE_POLICY_SKIP));
  ASSERT_EQ(run.sent.size(), 7u);
  const uint64_t sent_index[] = {0, 1, 5, 6, 7, 8, 9};
  const int64_t sent_ms[] = {10, 20, 75, 75, 80, 90, 100};
  for (size_t k = 0; k < 7; ++k) {
    EXPECT_EQ(run.sent[k].index, sent_index[k]);
    EXPECT_EQ(run.sent[k].at_ns, sent_ms[k] * kMs) << k;
  }
  ASSERT_EQ(run.records.size(), 10u);
  const char* errors[] = {
      "skipped_late: reached 45.000 ms after its planned send, more than late_threshold_ms 20 "
      "(late_policy skip)",
      "skipped_late: reached 35.000 ms after its planned send, more than late_threshold_ms 20 "
      "(late_policy skip)",
      "skipped_late: reached 25.000 ms after its planned send, more than late_threshold_ms 20 "
      "(late_policy skip)"};
  for (size_t i = 2; i <= 4; ++i) {
    const auto& r = run.records[i];
    EXPECT_EQ(r.status(), surge::v1::SKIPPED) << i;
    EXPECT_EQ(r.error(), errors[i - 2]);
    EXPECT_FALSE(r.sent());
    EXPECT_FALSE(r.released());
    EXPECT_EQ(r.planned_ns(), static_cast<int64_t>(i + 1) * 10 * kMs);
  }
  for (size_t i : {0, 1, 5, 6, 7, 8, 9}) {
    EXPECT_EQ(run.records[i].status(), surge::v1::OK) << i;
    EXPECT_FALSE(run.records[i].late()) << i;
  }
  EXPECT_EQ(run.late, 0u);
  EXPECT_EQ(run.skipped, 3u);
  EXPECT_EQ(run.delayed, 0u);
}

// "skip" with preparation: a skipped request was prepared, so its
// reservation is given back.
TEST(SendLoopLatePolicyTest, SkipCancelsTheSkippedRequestsPreparation) {
  SendLoopOptions o = LateOptions(surge::v1::LATE_POLICY_SKIP);
  o.prepare_lead = std::chrono::microseconds(5000);
  const LateRun run = RunWithStall(o);
  EXPECT_EQ(run.skipped, 3u);
  std::vector<uint64_t> cancelled;
  for (const auto& c : run.cancelled) cancelled.push_back(c.index);
  EXPECT_EQ(cancelled, (std::vector<uint64_t>{2, 3, 4}));
}

// "cap" at 200 RPS (5 ms spacing): 2 goes at 75 ms (the last release, at
// 20 ms, is long past); 3, 4 and 5 are late and spaced 5 ms apart (80, 85,
// 90 ms), each delayed 5 ms from when the pacer reached it; 6 is reached at
// 90 ms only 20 ms late (not late), so it goes at once, as do 7..9.
TEST(SendLoopLatePolicyTest, CapSpacesLateReleasesUntilBackOnSchedule) {
  const LateRun run = RunWithStall(LateOptions(surge::v1::LATE_POLICY_CAP, 5 * kMs));
  ASSERT_EQ(run.sent.size(), 10u);
  const int64_t expected_ms[] = {10, 20, 75, 80, 85, 90, 90, 90, 90, 100};
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(run.sent[i].index, i);
    EXPECT_EQ(run.sent[i].at_ns, expected_ms[i] * kMs) << i;
  }
  ASSERT_EQ(run.records.size(), 10u);
  const int64_t delay_ms[] = {0, 0, 0, 5, 5, 5, 0, 0, 0, 0};
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(run.records[i].late(), i >= 2 && i <= 5) << i;
    EXPECT_EQ(run.records[i].catch_up_delay_ns(), delay_ms[i] * kMs) << i;
    EXPECT_EQ(run.records[i].released_ns(), expected_ms[i] * kMs) << i;
  }
  EXPECT_EQ(run.late, 4u);
  EXPECT_EQ(run.skipped, 0u);
  EXPECT_EQ(run.delayed, 3u);
}

// "cap" slower than the plan never catches up: every late release is
// spaced, so the backlog drains at the catch-up rate (50 RPS: 20 ms).
TEST(SendLoopLatePolicyTest, CapSlowerThanThePlanKeepsTheSpacing) {
  const LateRun run = RunWithStall(LateOptions(surge::v1::LATE_POLICY_CAP, 20 * kMs));
  ASSERT_EQ(run.sent.size(), 10u);
  // 2 at 75; then every request is late by more than 20 ms when reached.
  const int64_t expected_ms[] = {10, 20, 75, 95, 115, 135, 155, 175, 195, 215};
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(run.sent[i].at_ns, expected_ms[i] * kMs) << i;
  EXPECT_EQ(run.late, 8u);
  EXPECT_EQ(run.delayed, 7u);
}

// A stop while a late request waits for its catch-up slot leaves it
// unreleased (reported as never sent by the session), not sent.
TEST(SendLoopLatePolicyTest, StopDuringTheCatchUpWaitLeavesTheRequestUnreleased) {
  SimulatedClock clock;
  FakeRequestSender sender(clock);
  SendLoop loop(clock, sender, LateOptions(surge::v1::LATE_POLICY_CAP, 1000 * kS),
                [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now());
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 10 * kMs), Make(1, 20 * kMs)});
  sender.set_after_send([&](uint64_t index) {
    // The send of 0 stalls the pacer 100 ms: 1 is reached 90 ms late.
    if (index == 0) clock.SleepUntil(clock.Now() + std::chrono::milliseconds(100));
  });
  std::thread stopper = clock.StartThread([&] {
    clock.SleepUntil(FromNanos(t0 + 2 * kS));
    loop.Stop();
  });
  loop.Run();
  clock.Join(stopper);
  ASSERT_EQ(sender.sent().size(), 1u);
  EXPECT_EQ(sender.sent()[0].at_ns, t0 + 10 * kMs);
  const auto unreleased = loop.TakeUnreleased();
  ASSERT_EQ(unreleased.size(), 1u);
  EXPECT_EQ(unreleased[0].index(), 1u);
  EXPECT_EQ(loop.delayed(), 0u);
}

// The policy as the worker takes it from Welcome: a cap of 250 RPS for
// this worker is 4 ms spacing; no threshold keeps 10 ms; SEND by default.
TEST(SendLoopLatePolicyTest, WelcomeSetsThePolicyThresholdAndSpacing) {
  SendLoopOptions o;
  ApplyLatePolicy(surge::v1::Welcome(), &o);
  EXPECT_EQ(o.late_policy, surge::v1::LATE_POLICY_SEND);
  EXPECT_EQ(o.late_threshold_ns, 10 * kMs);
  EXPECT_EQ(o.catch_up_spacing_ns, 0);
  surge::v1::Welcome cap;
  cap.set_late_policy(surge::v1::LATE_POLICY_CAP);
  cap.set_late_threshold_ns(25 * kMs);
  cap.set_catch_up_rps(250);
  ApplyLatePolicy(cap, &o);
  EXPECT_EQ(o.late_policy, surge::v1::LATE_POLICY_CAP);
  EXPECT_EQ(o.late_threshold_ns, 25 * kMs);
  EXPECT_EQ(o.catch_up_spacing_ns, 4 * kMs);
  surge::v1::Welcome third;  // 1/3 RPS: 3.333... s, rounded to the ns
  third.set_late_policy(surge::v1::LATE_POLICY_CAP);
  third.set_catch_up_rps(1.0 / 3.0);
  ApplyLatePolicy(third, &o);
  EXPECT_EQ(o.catch_up_spacing_ns, 3000000000);
  EXPECT_EQ(o.late_threshold_ns, 25 * kMs);  // 0 in Welcome: unchanged
}

}  // namespace
}  // namespace surge::worker
