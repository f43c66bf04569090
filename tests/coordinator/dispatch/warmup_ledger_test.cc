// The request ledger with warm-ups (RunConfig.num_warmups): slots 0..W-1
// are the warm-ups, planned before t0, carried as indices N..N+W-1 so they
// never collide with the plan's 0..N-1; every warm-up ends in exactly one
// record marked warmup, also after a stop or a lost worker.
#include <gtest/gtest.h>

#include <vector>

#include "coordinator/dispatch/request_ledger.h"

namespace surge::coordinator {
namespace {

constexpr int64_t kMs = 1000 * 1000;

// Two warm-ups at -200 and -100 ms, then three planned at 100, 200, 300 ms.
RequestLedger TwoWarmupsThreePlanned(int owners) {
  return RequestLedger({-200 * kMs, -100 * kMs, 100 * kMs, 200 * kMs, 300 * kMs}, owners, 2);
}

surge::v1::RequestRecord Ok(uint64_t index) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_status(surge::v1::OK);
  r.set_sent(true);
  return r;
}

TEST(WarmupLedgerTest, WireIndicesFollowThePlan) {
  RequestLedger ledger = TwoWarmupsThreePlanned(1);
  EXPECT_EQ(ledger.size(), 5u);
  EXPECT_EQ(ledger.plan_size(), 3u);
  EXPECT_EQ(ledger.num_warmups(), 2u);
  EXPECT_EQ(ledger.WireIndex(0), 3u);
  EXPECT_EQ(ledger.WireIndex(1), 4u);
  EXPECT_EQ(ledger.WireIndex(2), 0u);
  EXPECT_EQ(ledger.WireIndex(4), 2u);
  EXPECT_EQ(ledger.SlotOf(3), 0u);
  EXPECT_EQ(ledger.SlotOf(0), 2u);
  EXPECT_EQ(ledger.SlotOf(5), 5u);  // no slot
  EXPECT_TRUE(ledger.is_warmup(1));
  EXPECT_FALSE(ledger.is_warmup(2));
}

TEST(WarmupLedgerTest, WarmupsAreDueFirstAndTheirRecordsAreMarked) {
  RequestLedger ledger = TwoWarmupsThreePlanned(1);
  // Before t0 (now = -0.5 s, 2 s window) everything is due in slot order.
  std::vector<uint64_t> order;
  while (auto i = ledger.NextDue(1500 * kMs)) {
    ledger.Assign(*i, 0);
    order.push_back(*i);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  auto warm = ledger.Accept(0, Ok(3));
  ASSERT_TRUE(warm.has_value());
  EXPECT_TRUE(warm->warmup());
  EXPECT_EQ(warm->index(), 3u);
  EXPECT_EQ(warm->planned_ns(), -200 * kMs);
  auto planned = ledger.Accept(0, Ok(0));
  ASSERT_TRUE(planned.has_value());
  EXPECT_FALSE(planned->warmup());
  EXPECT_EQ(planned->index(), 0u);
  EXPECT_EQ(planned->planned_ns(), 100 * kMs);
  // A second record of either, or an unknown index, is refused.
  EXPECT_FALSE(ledger.Accept(0, Ok(3)).has_value());
  EXPECT_FALSE(ledger.Accept(0, Ok(7)).has_value());
  EXPECT_EQ(ledger.refused(), 2u);
}

TEST(WarmupLedgerTest, AStopDuringTheWarmupsLeavesOneRecordEach) {
  RequestLedger ledger = TwoWarmupsThreePlanned(1);
  // Only the first warm-up is assigned, then the run stops.
  auto first = ledger.NextDue(-150 * kMs);
  ASSERT_TRUE(first.has_value());
  ledger.Assign(*first, 0);
  EXPECT_FALSE(ledger.NextDue(-150 * kMs).has_value());
  std::vector<surge::v1::RequestRecord> out;
  ledger.CloseUnassigned("not_sent: interrupted",
                         [&out](surge::v1::RequestRecord r) { out.push_back(std::move(r)); });
  ledger.CloseOpen(/*stopping=*/true,
                   [&out](surge::v1::RequestRecord r) { out.push_back(std::move(r)); });
  ASSERT_EQ(out.size(), 5u);
  // Unassigned first: the second warm-up (index 4), then the plan 0, 1, 2.
  EXPECT_EQ(out[0].index(), 4u);
  EXPECT_TRUE(out[0].warmup());
  EXPECT_EQ(out[0].status(), surge::v1::NOT_SENT);
  EXPECT_EQ(out[1].index(), 0u);
  EXPECT_FALSE(out[1].warmup());
  // The assigned warm-up without a record: interrupted, marked.
  EXPECT_EQ(out[4].index(), 3u);
  EXPECT_TRUE(out[4].warmup());
  EXPECT_EQ(out[4].status(), surge::v1::INTERRUPTED);
  EXPECT_EQ(ledger.final_count(), 5u);
}

TEST(WarmupLedgerTest, ALostWorkersWarmupsSplitLikeAnyRequest) {
  RequestLedger ledger = TwoWarmupsThreePlanned(2);
  int owner = 0;
  while (auto i = ledger.NextDue(1500 * kMs)) {
    ledger.Assign(*i, owner);
    owner = 1 - owner;
  }
  // Worker 0 holds slots 0, 2, 4 (warm-up index 3, plan 0 and 2); it may
  // have sent up to -150 ms; now is -150 ms.
  std::vector<surge::v1::RequestRecord> out;
  const RequestLedger::TakeBackCounts counts =
      ledger.TakeBack(0, -150 * kMs, -150 * kMs, /*may_reassign=*/true, "test",
                      [&out](surge::v1::RequestRecord r) { out.push_back(std::move(r)); });
  EXPECT_EQ(counts.lost, 1u);
  EXPECT_EQ(counts.reassigned, 2u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].index(), 3u);
  EXPECT_TRUE(out[0].warmup());
  EXPECT_EQ(out[0].status(), surge::v1::LOST);
  // The reassigned plan requests keep their wire indices.
  auto next = ledger.NextDue(1500 * kMs);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(ledger.WireIndex(*next), 0u);
  EXPECT_EQ(ledger.attempt(*next), 1u);
}

}  // namespace
}  // namespace surge::coordinator
