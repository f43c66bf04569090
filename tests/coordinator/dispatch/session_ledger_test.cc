// The request ledger with multi-turn sessions (docs/SESSIONS.md): a plan
// request is a session whose turns each end in exactly one record, in turn
// order; a session that has begun is never reassigned, and at a worker's
// loss each turn without a record is judged by the earliest it can be due.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "coordinator/dispatch/request_ledger.h"

namespace surge::coordinator {
namespace {

using State = RequestLedger::State;
constexpr int64_t kMs = 1000 * 1000;

// Sessions 0, 1, 2 start at 100, 200, 300 ms with 3, 1 and 2 turns; every
// think time is 1 s. Wire indices: session 0 → 0..2, 1 → 3, 2 → 4..5.
RequestLedger ThreeSessions(int owners) {
  RequestLedger ledger({100 * kMs, 200 * kMs, 300 * kMs}, owners);
  ledger.SetSessions({3, 1, 2}, {0, 1000 * kMs, 1000 * kMs, 0, 0, 1000 * kMs});
  return ledger;
}

surge::v1::RequestRecord Turn(uint64_t index, int64_t sent_ns, int64_t next_due_ns) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_status(surge::v1::OK);
  r.set_sent(true);
  r.set_released(true);
  r.set_sent_ns(sent_ns);
  r.set_planned_ns(sent_ns);
  r.set_next_turn_due_ns(next_due_ns);
  return r;
}

std::vector<surge::v1::RequestRecord> Collect(
    const std::function<void(RequestLedger::Emit)>& call) {
  std::vector<surge::v1::RequestRecord> out;
  call([&](surge::v1::RequestRecord r) { out.push_back(std::move(r)); });
  return out;
}

TEST(SessionLedgerTest, WireIndicesCountTurnsAndSlotsMapBack) {
  RequestLedger ledger = ThreeSessions(1);
  EXPECT_EQ(ledger.records_expected(), 6u);
  EXPECT_EQ(ledger.plan_records(), 6u);
  EXPECT_EQ(ledger.WireIndex(0), 0u);
  EXPECT_EQ(ledger.WireIndex(1), 3u);
  EXPECT_EQ(ledger.WireIndex(2), 4u);
  EXPECT_EQ(ledger.SlotOf(2), 0u);
  EXPECT_EQ(ledger.SlotOf(3), 1u);
  EXPECT_EQ(ledger.SlotOf(5), 2u);
  EXPECT_EQ(ledger.SlotOf(6), ledger.size());
  EXPECT_EQ(ledger.TurnsOf(0), 3u);
  EXPECT_EQ(ledger.TurnsOf(2), 2u);
}

TEST(SessionLedgerTest, TurnsAreAcceptedInOrderOnceAndTheSessionEndsWithItsLast) {
  RequestLedger ledger = ThreeSessions(2);
  ASSERT_EQ(ledger.NextDue(1000 * kMs), std::optional<uint64_t>(0));
  ledger.Assign(0, 1);
  // Turn 1 before turn 0, and a stranger's turn: refused.
  EXPECT_FALSE(ledger.Accept(1, Turn(1, 2000 * kMs, 0)).has_value());
  EXPECT_FALSE(ledger.Accept(0, Turn(0, 100 * kMs, 0)).has_value());
  auto t0 = ledger.Accept(1, Turn(0, 101 * kMs, 1600 * kMs));
  ASSERT_TRUE(t0.has_value());
  EXPECT_EQ(t0->index(), 0u);
  EXPECT_EQ(t0->planned_ns(), 100 * kMs);  // turn 0: the plan's start
  EXPECT_TRUE(t0->in_session());
  EXPECT_EQ(t0->session(), 0u);
  EXPECT_EQ(t0->turn(), 0u);
  EXPECT_EQ(ledger.state(0), State::kAssigned);
  EXPECT_EQ(ledger.outstanding(1), 1u);
  EXPECT_FALSE(ledger.Accept(1, Turn(0, 101 * kMs, 0)).has_value());  // twice
  auto t1 = ledger.Accept(1, Turn(1, 1601 * kMs, 3000 * kMs));
  ASSERT_TRUE(t1.has_value());
  EXPECT_EQ(t1->turn(), 1u);
  EXPECT_EQ(t1->planned_ns(), 1601 * kMs);  // a later turn keeps the worker's due time
  EXPECT_EQ(t1->think_ns(), 1000 * kMs);
  auto t2 = ledger.Accept(1, Turn(2, 3001 * kMs, 0));
  ASSERT_TRUE(t2.has_value());
  EXPECT_EQ(ledger.state(0), State::kFinal);
  EXPECT_EQ(ledger.outstanding(1), 0u);
  EXPECT_EQ(ledger.final_count(), 3u);
  EXPECT_EQ(ledger.refused(), 3u);
}

TEST(SessionLedgerTest, ALostWorkersBegunSessionIsNeverReassignedAndItsTurnsAreJudgedByDueTime) {
  RequestLedger ledger = ThreeSessions(2);
  while (auto i = ledger.NextDue(10000 * kMs)) ledger.Assign(*i, 0);
  // Session 0 has turn 0 recorded, turn 1 due at 1600 ms; session 2 has not
  // begun (planned at 300 ms); session 1 (1 turn) is in flight.
  ASSERT_TRUE(ledger.Accept(0, Turn(0, 101 * kMs, 1600 * kMs)).has_value());
  // The worker may have sent until 1700 ms: session 0's turn 1 (due 1600)
  // may have gone; its turn 2 is due no sooner than 2600 ms: provably not.
  const auto records = Collect([&](RequestLedger::Emit emit) {
    const auto counts =
        ledger.TakeBack(0, 1700 * kMs, 1650 * kMs, /*may_reassign=*/true, "test", emit);
    EXPECT_EQ(counts.reassigned, 0u);  // session 2 is due already (300 ms)
  });
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0].index(), 1u);
  EXPECT_EQ(records[0].status(), surge::v1::LOST);
  EXPECT_THAT(records[0].error(), ::testing::StartsWith("send_unknown: worker 0 lost"));
  EXPECT_EQ(records[1].index(), 2u);
  EXPECT_EQ(records[1].status(), surge::v1::NOT_SENT);
  EXPECT_THAT(records[1].error(), ::testing::StartsWith("not_sent: session_lost: worker 0 lost"));
  EXPECT_EQ(records[1].planned_ns(), 2600 * kMs);
  EXPECT_EQ(records[2].index(), 3u);  // session 1: planned 200 ms, may have been sent
  EXPECT_EQ(records[2].status(), surge::v1::LOST);
  EXPECT_EQ(records[3].index(), 4u);  // session 2's start: planned 300 ms
  EXPECT_EQ(records[3].status(), surge::v1::LOST);
  EXPECT_EQ(records[4].index(), 5u);  // its turn 1: no sooner than 1300 ms
  EXPECT_EQ(records[4].status(), surge::v1::LOST);
  EXPECT_EQ(ledger.final_count(), 6u);
}

TEST(SessionLedgerTest, ASessionNotBegunAndAheadIsReassignedWhole) {
  RequestLedger ledger({5000 * kMs}, 2);
  ledger.SetSessions({2}, {0, 100 * kMs});
  ledger.Assign(*ledger.NextDue(10000 * kMs), 0);
  const auto records = Collect([&](RequestLedger::Emit emit) {
    EXPECT_EQ(ledger.TakeBack(0, 1000 * kMs, 1000 * kMs, true, "test", emit).reassigned, 1u);
  });
  EXPECT_TRUE(records.empty());
  ASSERT_EQ(ledger.NextDue(10000 * kMs), std::optional<uint64_t>(0));
  EXPECT_EQ(ledger.Assign(0, 1), 1);  // attempt 1
  surge::v1::RequestRecord r = Turn(0, 5001 * kMs, 5200 * kMs);
  r.set_attempt(1);
  EXPECT_TRUE(ledger.Accept(1, r).has_value());
}

TEST(SessionLedgerTest, AHandedBackTurnEndsTheRestOfItsSession) {
  RequestLedger ledger = ThreeSessions(1);
  ledger.Assign(*ledger.NextDue(150 * kMs), 0);
  ASSERT_TRUE(ledger.Accept(0, Turn(0, 101 * kMs, 1600 * kMs)).has_value());
  // Not the next turn: skipped.
  EXPECT_TRUE(Collect([&](RequestLedger::Emit emit) {
                ledger.HandBack(0, {{2, 0}}, 1500 * kMs, true, "SIGTERM", emit);
              }).empty());
  const auto records = Collect([&](RequestLedger::Emit emit) {
    EXPECT_EQ(ledger.HandBack(0, {{1, 0}}, 1500 * kMs, true, "SIGTERM", emit).not_sent, 2u);
  });
  ASSERT_EQ(records.size(), 2u);
  EXPECT_THAT(records[0].error(),
              ::testing::StartsWith("not_sent: worker 0 left before this request"));
  EXPECT_THAT(records[1].error(), ::testing::StartsWith("not_sent: session_lost: worker 0 left"));
  EXPECT_EQ(ledger.state(0), State::kFinal);
}

TEST(SessionLedgerTest, CloseOpenEndsEveryTurnLeftOnceTheFirstAsItsRuleSays) {
  RequestLedger ledger = ThreeSessions(1);
  ledger.Assign(*ledger.NextDue(150 * kMs), 0);
  ASSERT_TRUE(ledger.Accept(0, Turn(0, 101 * kMs, 1600 * kMs)).has_value());
  const auto records =
      Collect([&](RequestLedger::Emit emit) { ledger.CloseOpen(/*stopping=*/true, emit); });
  // Session 0: turn 1 interrupted, turn 2 not sent; sessions 1 and 2 never
  // assigned: 1 + 2 turns not sent.
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0].status(), surge::v1::INTERRUPTED);
  EXPECT_EQ(records[1].status(), surge::v1::NOT_SENT);
  EXPECT_THAT(records[1].error(), ::testing::HasSubstr("session_ended"));
  for (size_t k = 2; k < 5; ++k) EXPECT_EQ(records[k].error(), "not_sent: run_ended");
  EXPECT_EQ(ledger.final_count(), ledger.records_expected());
}

TEST(SessionLedgerTest, WarmupsComeAfterEveryTurn) {
  RequestLedger ledger({-50 * kMs, 100 * kMs, 200 * kMs}, 1, /*num_warmups=*/1);
  ledger.SetSessions({2, 2}, {0, kMs, 0, kMs});
  EXPECT_EQ(ledger.records_expected(), 5u);
  EXPECT_EQ(ledger.WireIndex(0), 4u);  // the warm-up
  EXPECT_EQ(ledger.SlotOf(4), 0u);
  EXPECT_EQ(ledger.SlotOf(3), 2u);
  EXPECT_EQ(ledger.TurnsOf(0), 1u);
}

}  // namespace
}  // namespace surge::coordinator
