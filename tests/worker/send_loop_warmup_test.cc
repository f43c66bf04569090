// Warm-ups in the pacer (Assignment.warmup; docs/DATASETS.md "Warm-up and
// steady state"), on simulated time: never late, so the skip and cap
// policies release them as due; their records are marked warmup; the send
// health (the lateness alarm's input) is not told of them.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/fake_request_sender.h"
#include "tests/testing/simulated_clock.h"
#include "worker/send_loop.h"

namespace surge::worker {
namespace {

using surge::testing::AutoAdvanceClock;
using surge::testing::FakeRequestSender;

constexpr int64_t kMs = 1000 * 1000;

// Six requests planned 10 ms apart (10..60 ms), the first `warmups` of them
// warm-ups; the send of request 0 stalls the pacer 55 ms, so 1..5 are all
// reached at 65 ms: 45, 35, 25, 15, 5 ms late (threshold 20 ms).
struct StallRun {
  std::vector<FakeRequestSender::Sent> sent;  // times relative to t0
  std::vector<surge::v1::RequestRecord> records;
  uint64_t late = 0, skipped = 0, delayed = 0, health_sends = 0;
};

StallRun RunWithStall(surge::v1::LatePolicy policy, int warmups) {
  AutoAdvanceClock clock;
  FakeRequestSender sender(clock);
  const int64_t t0 = ToNanos(clock.Now());
  SendHealth health(t0, HealthTotals{});
  SendLoopOptions options;
  options.prepare_lead = std::chrono::microseconds(0);
  options.late_policy = policy;
  options.late_threshold_ns = 20 * kMs;
  options.catch_up_spacing_ns = 50 * kMs;
  options.health = &health;
  StallRun out;
  SendLoop loop(clock, sender, options,
                [&](surge::v1::RequestRecord r) { out.records.push_back(std::move(r)); });
  loop.SetStart(t0);
  std::vector<surge::v1::Assignment> list;
  for (int i = 0; i < 6; ++i) {
    surge::v1::Assignment a;
    a.set_index(i);
    a.set_offset_ns((i + 1) * 10 * kMs);
    a.set_warmup(i < warmups);
    list.push_back(a);
  }
  loop.Enqueue(list);
  sender.set_after_send([&](uint64_t index) {
    if (index == 0) clock.AdvanceBy(std::chrono::milliseconds(55));
    if (index == 5) loop.Stop();
  });
  loop.Run();
  out.sent = sender.sent();
  for (auto& s : out.sent) s.at_ns -= t0;
  out.late = loop.late();
  out.skipped = loop.skipped();
  out.delayed = loop.delayed();
  out.health_sends = health.Report(ToNanos(clock.Now()), HealthTotals{}, 0).sends();
  return out;
}

TEST(SendLoopWarmupTest, WarmupsAreReleasedAsDueWhateverThePolicy) {
  for (const auto policy : {surge::v1::LATE_POLICY_SKIP, surge::v1::LATE_POLICY_CAP}) {
    const StallRun run = RunWithStall(policy, /*warmups=*/6);
    ASSERT_EQ(run.sent.size(), 6u) << policy;
    const int64_t expected_ms[] = {10, 65, 65, 65, 65, 65};
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(run.sent[i].at_ns, expected_ms[i] * kMs) << i;
    ASSERT_EQ(run.records.size(), 6u);
    for (const auto& r : run.records) {
      EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
      EXPECT_FALSE(r.late()) << r.index();
      EXPECT_TRUE(r.warmup()) << r.index();
    }
    EXPECT_EQ(run.late + run.skipped + run.delayed, 0u);
    EXPECT_EQ(run.health_sends, 0u);  // the alarm never sees them
  }
}

TEST(SendLoopWarmupTest, PlannedRequestsBehindThemKeepThePolicy) {
  // Warm-ups 0 and 1 (1 is 45 ms late, sent); the planned 2 and 3 (35 and
  // 25 ms late) are skipped, 4 and 5 (15, 5 ms) go. The health is told of
  // the planned sends only.
  const StallRun run = RunWithStall(surge::v1::LATE_POLICY_SKIP, /*warmups=*/2);
  ASSERT_EQ(run.sent.size(), 4u);
  const uint64_t sent_index[] = {0, 1, 4, 5};
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(run.sent[k].index, sent_index[k]) << k;
  EXPECT_EQ(run.skipped, 2u);
  EXPECT_EQ(run.health_sends, 2u);
}

}  // namespace
}  // namespace surge::worker
