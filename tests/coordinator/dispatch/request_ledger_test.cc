// The request ledger on its own (R-DIST-5, R-DIST-6):
// exactly one final record per request, fencing of stale owners and
// attempts, and the provably-unsent / send_unknown split at a death, with
// times given as ns after t0 (no clock).
#include "coordinator/dispatch/request_ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace surge::coordinator {
namespace {

using State = RequestLedger::State;
constexpr int64_t kMs = 1000 * 1000;

// Requests planned every 100 ms: request i at (i + 1) * 100 ms.
RequestLedger Every100Ms(int n, int owners) {
  std::vector<int64_t> offsets;
  for (int i = 0; i < n; ++i) offsets.push_back((i + 1) * 100 * kMs);
  return RequestLedger(offsets, owners);
}

surge::v1::RequestRecord Ok(uint64_t index, uint32_t attempt) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_attempt(attempt);
  r.set_status(surge::v1::OK);
  r.set_sent(true);
  return r;
}

// Assigns everything due before `horizon_ns` round-robin over `owners`.
void AssignAll(RequestLedger& ledger, int64_t horizon_ns, int owners) {
  int next = 0;
  while (auto i = ledger.NextDue(horizon_ns)) {
    ledger.Assign(*i, next);
    next = (next + 1) % owners;
  }
}

TEST(RequestLedgerTest, NextDueHonoursTheHorizonAndAssignSetsOwner) {
  RequestLedger ledger = Every100Ms(5, 2);
  EXPECT_FALSE(ledger.NextDue(100 * kMs).has_value());  // request 0 at exactly 100 ms
  ASSERT_EQ(ledger.NextDue(100 * kMs + 1), std::optional<uint64_t>(0));
  EXPECT_EQ(ledger.Assign(0, 1), 0);
  EXPECT_EQ(ledger.state(0), State::kAssigned);
  EXPECT_EQ(ledger.owner(0), 1);
  EXPECT_EQ(ledger.outstanding(1), 1u);
  EXPECT_EQ(ledger.outstanding(0), 0u);
  EXPECT_FALSE(ledger.NextDue(200 * kMs).has_value());
  EXPECT_EQ(ledger.NextDue(201 * kMs), std::optional<uint64_t>(1));
}

TEST(RequestLedgerTest, RecordFromOwnerIsFinalOnceWithPlannedTime) {
  RequestLedger ledger = Every100Ms(3, 2);
  AssignAll(ledger, 1000 * kMs, 2);  // 0,2 → worker 0; 1 → worker 1
  auto accepted = ledger.Accept(0, Ok(2, 0));
  ASSERT_TRUE(accepted.has_value());
  EXPECT_EQ(accepted->planned_ns(), 300 * kMs);
  EXPECT_EQ(ledger.state(2), State::kFinal);
  EXPECT_EQ(ledger.outstanding(0), 1u);
  EXPECT_EQ(ledger.final_count(), 1u);
  // A second record for the same request (a duplicate batch) is refused.
  EXPECT_FALSE(ledger.Accept(0, Ok(2, 0)).has_value());
  EXPECT_EQ(ledger.refused(), 1u);
  EXPECT_EQ(ledger.final_count(), 1u);
}

TEST(RequestLedgerTest, RecordFromWrongOwnerOrUnknownIndexIsRefused) {
  RequestLedger ledger = Every100Ms(3, 2);
  AssignAll(ledger, 1000 * kMs, 2);
  EXPECT_FALSE(ledger.Accept(1, Ok(0, 0)).has_value());  // request 0 is worker 0's
  EXPECT_FALSE(ledger.Accept(0, Ok(3, 0)).has_value());  // no request 3
  EXPECT_EQ(ledger.refused(), 2u);
  EXPECT_EQ(ledger.state(0), State::kAssigned);
  EXPECT_EQ(ledger.final_count(), 0u);
}

// Worker 1 may have sent up to 1.5 s (its last message
// at 0.45 s + 1 s lease + margin) and is declared dead at 2.0 s: requests
// planned up to 1.5 s end LOST send_unknown; those after 1.5 s but due before
// 2.0 + 0.05 s are provably unsent yet too late to move: NOT_SENT; later
// ones are queued again (attempt 1). Records come in index order.
TEST(RequestLedgerTest, TakeBackSplitsIntoLostNotSentAndReassigned) {
  RequestLedger ledger = Every100Ms(40, 2);  // 0.1 s … 4.0 s
  AssignAll(ledger, 3000 * kMs, 2);          // requests 0..28 (≤ 2.9 s)
  std::vector<surge::v1::RequestRecord> ended;
  const RequestLedger::TakeBackCounts counts =
      ledger.TakeBack(1, 1500 * kMs, 2000 * kMs, /*may_reassign=*/true, "silent for 1500 ms",
                      [&](surge::v1::RequestRecord r) { ended.push_back(std::move(r)); });
  // Worker 1 held the odd indices 1..27 (0.2 s … 2.8 s): 1..13 (≤ 1.4 s) are
  // lost, 15..19 (1.6 … 2.0 s) not sent, 21..27 (2.2 … 2.8 s) go back.
  ASSERT_EQ(ended.size(), 10u);
  for (size_t k = 0; k < ended.size(); ++k) {
    const bool lost = k < 7;
    EXPECT_EQ(ended[k].index(), 2 * k + 1);
    EXPECT_EQ(ended[k].status(), lost ? surge::v1::LOST : surge::v1::NOT_SENT);
    EXPECT_EQ(ended[k].worker(), 1);
    EXPECT_EQ(ended[k].attempt(), 0u);
    EXPECT_EQ(ended[k].planned_ns(), static_cast<int64_t>(2 * k + 2) * 100 * kMs);
    EXPECT_EQ(ended[k].error(),
              lost ? "send_unknown: worker 1 lost (silent for 1500 ms)"
                   : "not_sent: worker 1 lost before this request could be sent (silent for "
                     "1500 ms)");
  }
  // The counts name the same split as the records: 7 lost, 3 not sent, 4
  // queued again (14 = what worker 1 held).
  EXPECT_EQ(counts.lost, 7u);
  EXPECT_EQ(counts.not_sent, 3u);
  EXPECT_EQ(counts.reassigned, 4u);
  EXPECT_EQ(ledger.reassigned(), 4u);
  EXPECT_EQ(ledger.outstanding(1), 0u);
  for (uint64_t i : {21u, 23u, 25u, 27u}) {
    EXPECT_EQ(ledger.state(i), State::kUnassigned) << i;
    EXPECT_EQ(ledger.attempt(i), 1) << i;
    EXPECT_EQ(ledger.owner(i), -1) << i;
  }
  // Taken-back requests come before never-assigned ones planned later, and
  // carry their new attempt.
  ASSERT_EQ(ledger.NextDue(10000 * kMs), std::optional<uint64_t>(21));
  EXPECT_EQ(ledger.Assign(21, 0), 1);
  EXPECT_EQ(ledger.NextDue(10000 * kMs), std::optional<uint64_t>(23));
}

// Worker 1 leaves on its own at 1.0 s and hands back what it never
// released: the odd indices 9..27 (1.0 s … 2.8 s), plus index 3 with a
// stale attempt and index 0 that is worker 0's (both skipped). Those
// planned after 1.0 + 0.05 s go back with attempt 1, the one due at 1.0 s
// ends NOT_SENT "left"; what it still has in flight (1..7) stays its own.
TEST(RequestLedgerTest, HandBackQueuesWhatIsAheadAndKeepsWhatIsInFlight) {
  RequestLedger ledger = Every100Ms(40, 2);
  AssignAll(ledger, 3000 * kMs, 2);  // worker 1: odd indices 1..27
  std::vector<RequestLedger::HandedBack> back = {{3, 1}, {0, 0}};
  for (uint64_t i = 9; i <= 27; i += 2) back.push_back({i, 0});
  std::vector<surge::v1::RequestRecord> ended;
  const RequestLedger::TakeBackCounts counts =
      ledger.HandBack(1, back, 1000 * kMs, /*may_reassign=*/true, "SIGTERM",
                      [&](surge::v1::RequestRecord r) { ended.push_back(std::move(r)); });
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].index(), 9u);
  EXPECT_EQ(ended[0].status(), surge::v1::NOT_SENT);
  EXPECT_EQ(ended[0].error(),
            "not_sent: worker 1 left before this request could be sent (SIGTERM)");
  EXPECT_EQ(counts.lost, 0u);
  EXPECT_EQ(counts.not_sent, 1u);
  EXPECT_EQ(counts.reassigned, 9u);
  EXPECT_EQ(ledger.reassigned(), 9u);
  // In flight: 1, 3, 5, 7 are still worker 1's, attempt 0.
  EXPECT_EQ(ledger.outstanding(1), 4u);
  for (uint64_t i : {1u, 3u, 5u, 7u}) {
    EXPECT_EQ(ledger.owner(i), 1) << i;
    EXPECT_EQ(ledger.attempt(i), 0) << i;
  }
  EXPECT_EQ(ledger.owner(0), 0);
  EXPECT_EQ(ledger.state(0), State::kAssigned);
  // Their records still count; the handed-back ones go to the others first.
  EXPECT_TRUE(ledger.Accept(1, Ok(3, 0)).has_value());
  ASSERT_EQ(ledger.NextDue(10000 * kMs), std::optional<uint64_t>(11));
  EXPECT_EQ(ledger.Assign(11, 0), 1);
  // A record from worker 1 for a request it handed back is refused.
  EXPECT_FALSE(ledger.Accept(1, Ok(13, 0)).has_value());
}

// Fencing: after the take-back, a record from the dead worker (attempt 0)
// is refused for every kind of request it held; the new owner's record
// (attempt 1) is the final one.
TEST(RequestLedgerTest, StaleAttemptAndFencedOwnerAreRefused) {
  RequestLedger ledger = Every100Ms(40, 2);
  AssignAll(ledger, 3000 * kMs, 2);
  ledger.TakeBack(1, 2050 * kMs, 2000 * kMs, true, "process exited",
                  [](surge::v1::RequestRecord) {});
  EXPECT_FALSE(ledger.Accept(1, Ok(3, 0)).has_value());   // already final (lost)
  EXPECT_FALSE(ledger.Accept(1, Ok(21, 0)).has_value());  // reassigned, unassigned now
  while (auto i = ledger.NextDue(3000 * kMs)) ledger.Assign(*i, 0);
  EXPECT_FALSE(ledger.Accept(1, Ok(21, 0)).has_value());  // stale owner and attempt
  EXPECT_FALSE(ledger.Accept(0, Ok(21, 0)).has_value());  // new owner, stale attempt
  EXPECT_EQ(ledger.refused(), 4u);
  auto r = ledger.Accept(0, Ok(21, 1));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->attempt(), 1u);
  EXPECT_EQ(ledger.state(21), State::kFinal);
}

// After a stop nothing is reassigned: what the dead worker may have sent is
// send_unknown, the provably unsent rest is not_sent.
TEST(RequestLedgerTest, TakeBackWithoutReassignMovesNothing) {
  RequestLedger ledger = Every100Ms(10, 2);
  AssignAll(ledger, 2000 * kMs, 2);  // worker 0 holds 0, 2, 4, 6, 8 (0.1 … 0.9 s)
  std::vector<surge::v1::RequestStatus> ended;
  const RequestLedger::TakeBackCounts counts =
      ledger.TakeBack(0, 400 * kMs, 0, /*may_reassign=*/false, "x",
                      [&](surge::v1::RequestRecord r) { ended.push_back(r.status()); });
  EXPECT_EQ(counts.lost, 2u);
  EXPECT_EQ(counts.not_sent, 3u);
  EXPECT_EQ(counts.reassigned, 0u);
  EXPECT_EQ(ended, (std::vector<surge::v1::RequestStatus>{surge::v1::LOST, surge::v1::LOST,
                                                          surge::v1::NOT_SENT, surge::v1::NOT_SENT,
                                                          surge::v1::NOT_SENT}));
  EXPECT_EQ(ledger.reassigned(), 0u);
  EXPECT_EQ(ledger.outstanding(0), 0u);
}

TEST(RequestLedgerTest, GiveUpIdleEndsOnlyPastDueRequests) {
  RequestLedger ledger = Every100Ms(10, 1);
  AssignAll(ledger, 2000 * kMs, 1);
  ASSERT_TRUE(ledger.Accept(0, Ok(1, 0)).has_value());
  std::vector<uint64_t> lost;
  EXPECT_EQ(ledger.GiveUpIdle(0, 400 * kMs,
                              [&](surge::v1::RequestRecord r) {
                                EXPECT_EQ(r.status(), surge::v1::LOST);
                                EXPECT_EQ(r.error(),
                                          "record_lost: worker 0 has been idle without "
                                          "reporting this request");
                                lost.push_back(r.index());
                              }),
            3u);
  EXPECT_EQ(lost, (std::vector<uint64_t>{0, 2, 3}));  // 1 had its record; 4 is later
  EXPECT_EQ(ledger.outstanding(0), 6u);
}

TEST(RequestLedgerTest, CloseUnassignedTakesTakenBackFirstThenTheRest) {
  RequestLedger ledger = Every100Ms(10, 2);
  AssignAll(ledger, 600 * kMs, 2);  // 0..4
  ledger.TakeBack(0, -1000 * kMs, -1000 * kMs, true, "x", [](surge::v1::RequestRecord) {});
  // Worker 0 held 0, 2, 4, all planned after −0.95 s: all three go back.
  std::vector<uint64_t> order;
  ledger.CloseUnassigned("not_sent: interrupted", [&](surge::v1::RequestRecord r) {
    EXPECT_EQ(r.status(), surge::v1::NOT_SENT);
    EXPECT_EQ(r.error(), "not_sent: interrupted");
    EXPECT_EQ(r.worker(), -1);
    order.push_back(r.index());
  });
  EXPECT_EQ(order, (std::vector<uint64_t>{0, 2, 4, 5, 6, 7, 8, 9}));
  EXPECT_FALSE(ledger.NextDue(100000 * kMs).has_value());
}

TEST(RequestLedgerTest, CloseOpenEndsEveryOpenRequestByState) {
  for (const bool stopping : {false, true}) {
    RequestLedger ledger = Every100Ms(6, 1);
    AssignAll(ledger, 350 * kMs, 1);  // 0, 1, 2
    ASSERT_TRUE(ledger.Accept(0, Ok(1, 0)).has_value());
    std::vector<surge::v1::RequestRecord> closed;
    ledger.CloseOpen(stopping, [&](surge::v1::RequestRecord r) { closed.push_back(r); });
    ASSERT_EQ(closed.size(), 5u);
    EXPECT_EQ(closed[0].index(), 0u);
    EXPECT_EQ(closed[0].status(), stopping ? surge::v1::INTERRUPTED : surge::v1::LOST);
    EXPECT_EQ(closed[0].error(),
              stopping ? "interrupted: no_record" : "lost: no_record_before_drain_deadline");
    EXPECT_EQ(closed[0].worker(), 0);
    EXPECT_EQ(closed[2].index(), 3u);
    EXPECT_EQ(closed[2].status(), surge::v1::NOT_SENT);
    EXPECT_EQ(closed[2].error(), "not_sent: run_ended");
    EXPECT_EQ(ledger.final_count(), 6u);
  }
}

// Property: whatever mix of records, deaths and closes, each request gets
// exactly one final record and refused ones never become final.
TEST(RequestLedgerTest, EveryRequestEndsExactlyOnceUnderChurn) {
  RequestLedger ledger = Every100Ms(200, 4);
  std::multiset<uint64_t> finals;
  auto emit = [&](surge::v1::RequestRecord r) { finals.insert(r.index()); };
  int64_t now = 0;
  int next = 0;
  std::vector<bool> dead(4, false);
  for (int step = 0; step < 60; ++step, now += 300 * kMs) {
    while (auto i = ledger.NextDue(now + 2000 * kMs)) {
      do next = (next + 1) % 4;
      while (dead[next] && !(dead[0] && dead[1] && dead[2] && dead[3]));
      ledger.Assign(*i, next);
    }
    // Every live worker reports its requests due by now; dead ones try too.
    for (uint64_t i = 0; i < ledger.size(); ++i) {
      if (ledger.offset_ns(i) > now || ledger.state(i) != State::kAssigned) continue;
      const int32_t owner = ledger.owner(i);
      if (auto r = ledger.Accept(owner == 3 ? 2 : owner, Ok(i, ledger.attempt(i)))) emit(*r);
    }
    if (step == 10) {
      dead[1] = true;
      ledger.TakeBack(1, now - 500 * kMs, now, true, "x", emit);
    }
  }
  ledger.CloseOpen(false, emit);
  EXPECT_EQ(finals.size(), 200u);
  for (uint64_t i = 0; i < 200; ++i) EXPECT_EQ(finals.count(i), 1u) << i;
  EXPECT_EQ(ledger.final_count(), 200u);
  EXPECT_GT(ledger.refused(), 0u);  // worker 2 reported worker 3's requests
  EXPECT_GT(ledger.reassigned(), 0u);
}

}  // namespace
}  // namespace surge::coordinator
