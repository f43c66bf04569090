// The worker registry on its own, with exact timestamps (R-DIST-1,
// R-DIST-6): joins, readiness, the heartbeat ack, death
// by silence or process exit, the stall guard and the idle-owner rule.
#include "coordinator/dispatch/worker_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace surge::coordinator {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using Death = WorkerRegistry::Death;

const Clock::TimePoint kT = FromNanos(1'000'000'000'000);  // an arbitrary instant

WorkerRegistryOptions Options(int n) {
  WorkerRegistryOptions o;
  o.num_workers = n;
  return o;
}

surge::v1::Heartbeat Beat(uint64_t seq, int64_t t1_ns, uint32_t inflight, uint32_t queued) {
  surge::v1::Heartbeat hb;
  hb.set_hb_seq(seq);
  hb.set_t1_worker_ns(t1_ns);
  hb.set_inflight(inflight);
  hb.set_queued(queued);
  return hb;
}

std::vector<int32_t> Indices(const std::vector<Death>& deaths) {
  std::vector<int32_t> out;
  for (const auto& d : deaths) out.push_back(d.index);
  return out;
}

TEST(WorkerRegistryTest, JoinGivesRequestedOrLowestFreeIndexAndRefusesExtraOrLateWorkers) {
  WorkerRegistry registry(Options(3));
  bool fresh = false;
  WorkerRegistry::Worker* b = registry.Join("b", 7, 2, kT, &fresh);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(b->index, 2);
  EXPECT_EQ(b->incarnation, 7u);
  // Index 2 is taken, 9 is out of range: both get the lowest free one.
  EXPECT_EQ(registry.Join("a", 1, 2, kT, &fresh)->index, 0);
  EXPECT_EQ(registry.Join("c", 1, 9, kT, &fresh)->index, 1);
  // Sorted by index, whatever the join order.
  ASSERT_EQ(registry.workers().size(), 3u);
  EXPECT_EQ(registry.workers()[0].peer, "a");
  EXPECT_EQ(registry.workers()[2].peer, "b");
  EXPECT_EQ(registry.Join("d", 1, 0, kT, &fresh), nullptr);  // all three are there
  // A repeated Hello (the Welcome crossed it) is the same worker, heard again.
  WorkerRegistry::Worker* again = registry.Join("b", 7, 2, kT + milliseconds(40), &fresh);
  ASSERT_NE(again, nullptr);
  EXPECT_FALSE(fresh);
  EXPECT_EQ(again->index, 2);
  EXPECT_EQ(again->last_heard, kT + milliseconds(40));
  EXPECT_EQ(registry.workers().size(), 3u);

  WorkerRegistry started(Options(3));
  started.Start(kT);
  EXPECT_EQ(started.Join("late", 1, 0, kT, &fresh), nullptr);
}

TEST(WorkerRegistryTest, HeartbeatMakesReadyAndIsAcknowledgedWithEchoAndReceiptTime) {
  WorkerRegistry registry(Options(2));
  bool fresh = false;
  registry.Join("a", 1, 0, kT, &fresh);
  registry.Join("b", 1, 1, kT, &fresh);
  auto* w = registry.Find("a");  // valid until the next Join
  EXPECT_EQ(registry.ready_count(), 0);
  const auto received = kT + milliseconds(250) + nanoseconds(17);
  const surge::v1::HeartbeatAck ack = registry.OnHeartbeat(*w, Beat(5, 123456789, 3, 9), received);
  EXPECT_EQ(ack.hb_seq(), 5u);
  EXPECT_EQ(ack.t1_worker_ns(), 123456789);
  EXPECT_EQ(ack.t2_coord_ns(), ToNanos(received));
  EXPECT_TRUE(w->ready);
  EXPECT_EQ(registry.ready_count(), 1);
  EXPECT_EQ(w->inflight, 3u);
  EXPECT_EQ(registry.inflight(), 3u);
  EXPECT_FALSE(w->idle);
}

// The live metrics' inputs: the first bytes a worker has
// written (never lowered by an older count) and its last send window.
TEST(WorkerRegistryTest, HeartbeatKeepsSentTotalAndTheLastSendWindow) {
  WorkerRegistry registry(Options(1));
  bool fresh = false;
  registry.Join("a", 1, 0, kT, &fresh);
  auto* w = registry.Find("a");
  surge::v1::Heartbeat hb = Beat(1, 0, 2, 0);
  hb.set_sent_total(7);
  hb.mutable_send_health()->set_sends(5);
  hb.mutable_send_health()->set_window_ns(1'000'000'000);
  registry.OnHeartbeat(*w, hb, kT);
  EXPECT_EQ(w->sent_total, 7u);
  EXPECT_EQ(w->window_sends, 5u);
  EXPECT_EQ(w->window_ns, 1'000'000'000);
  hb = Beat(2, 0, 0, 0);  // an older count, no SendHealth (before Start)
  hb.set_sent_total(6);
  registry.OnHeartbeat(*w, hb, kT + milliseconds(250));
  EXPECT_EQ(w->sent_total, 7u);
  EXPECT_EQ(w->window_sends, 5u);
}

TEST(WorkerRegistryTest, SilenceLongerThanDeadAfterIsDeath) {
  WorkerRegistry registry(Options(2));
  bool fresh = false;
  registry.Join("a", 1, 0, kT, &fresh);
  registry.Join("b", 1, 1, kT, &fresh);
  auto* a = registry.Find("a");
  registry.Start(kT);
  registry.Heard(*a, kT + milliseconds(1000));
  // Worker 1 was last heard at the start (seeded then: a worker that dies
  // before its first heartbeat is still caught).
  EXPECT_TRUE(registry.FindDead(kT + milliseconds(1500), nullptr).empty());
  const auto dead = registry.FindDead(kT + milliseconds(1500) + nanoseconds(1), nullptr);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].index, 1);
  EXPECT_EQ(dead[0].why, "silent for 1500 ms");
  registry.MarkDead(*registry.ByIndex(1));
  EXPECT_TRUE(registry.FindDead(kT + milliseconds(2500), nullptr).empty());
  EXPECT_EQ(Indices(registry.FindDead(kT + milliseconds(2501), nullptr)),
            (std::vector<int32_t>{0}));
  registry.MarkDead(*a);
  EXPECT_FALSE(registry.any_alive());
}

TEST(WorkerRegistryTest, ExitedProcessIsDeadAtOnce) {
  WorkerRegistry registry(Options(3));
  bool fresh = false;
  for (const char* p : {"a", "b", "c"}) registry.Join(p, 1, -1, kT, &fresh);
  registry.Start(kT);
  const auto dead =
      registry.FindDead(kT + milliseconds(1), [](int32_t index) { return index != 1; });
  EXPECT_EQ(Indices(dead), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(dead[0].why, "process exited");
}

// A 2 s jump between two sweeps (the coordinator
// stalled) evicts nobody; deadlines move back by the lag.
TEST(WorkerRegistryTest, StallGuardPushesSilenceDeadlinesBackByTheLag) {
  WorkerRegistry registry(Options(1));
  bool fresh = false;
  registry.Join("a", 1, 0, kT, &fresh);
  registry.Start(kT);
  EXPECT_FALSE(registry.BeginSweep(kT + milliseconds(99)));
  EXPECT_TRUE(registry.BeginSweep(kT + milliseconds(100)));
  EXPECT_FALSE(registry.BeginSweep(kT + milliseconds(150)));
  // Nothing ran for 2 s; the worker was silent throughout, as seen from here.
  EXPECT_TRUE(registry.BeginSweep(kT + milliseconds(2100)));
  EXPECT_EQ(registry.workers()[0].last_heard, kT + milliseconds(2000));
  EXPECT_TRUE(registry.FindDead(kT + milliseconds(2100), nullptr).empty());
  // Still silent afterwards: dead 1.5 s after the pushed-back deadline.
  EXPECT_TRUE(registry.BeginSweep(kT + milliseconds(2200)));
  EXPECT_EQ(registry.workers()[0].last_heard, kT + milliseconds(2000));  // no lag this time
  EXPECT_TRUE(registry.FindDead(kT + milliseconds(3500), nullptr).empty());
  EXPECT_EQ(registry.FindDead(kT + milliseconds(3501), nullptr).size(), 1u);
}

// Before the start: a ready worker is gone after dead_after of silence, one
// still building its sender (no heartbeat yet) only after setup_silence; a
// worker that left frees its index for the next Hello and is remembered.
TEST(WorkerRegistryTest, SilentWorkerLeavesBeforeTheStartAndANewcomerTakesItsIndex) {
  WorkerRegistry registry(Options(2));
  registry.BeginWait(kT);
  bool fresh = false;
  registry.Join("a", 1, 0, kT, &fresh);
  registry.Join("b", 1, 1, kT, &fresh);
  registry.OnHeartbeat(*registry.Find("a"), Beat(1, 0, 0, 0), kT + milliseconds(250));
  registry.Heard(*registry.Find("a"), kT + milliseconds(250));
  EXPECT_EQ(registry.ready_count(), 1);
  EXPECT_TRUE(registry.FindGoneBeforeStart(kT + milliseconds(1750)).empty());
  auto gone = registry.FindGoneBeforeStart(kT + milliseconds(1750) + nanoseconds(1));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].index, 0);
  EXPECT_EQ(gone[0].why, "silent for 1500 ms");
  // "b" has not heartbeated: 10 s of silence before it counts as gone.
  EXPECT_EQ(Indices(registry.FindGoneBeforeStart(kT + milliseconds(10000))),
            (std::vector<int32_t>{0}));
  EXPECT_EQ(Indices(registry.FindGoneBeforeStart(kT + milliseconds(10001))),
            (std::vector<int32_t>{0, 1}));
  // Quiet for 300 ms at 500 ms: "b" (heard at 0), not "a" (heard at 250).
  EXPECT_EQ(registry.QuietFor(kT + milliseconds(500), milliseconds(300)),
            (std::vector<int32_t>{1}));
  EXPECT_EQ(registry.QuietFor(kT + milliseconds(600), milliseconds(0)),
            (std::vector<int32_t>{0, 1}));
  registry.ByIndex(0)->host = "w1";
  registry.ByIndex(0)->address = "10.0.0.7";
  EXPECT_EQ(WorkerRegistry::Describe(*registry.ByIndex(0)), "10.0.0.7, host w1");
  EXPECT_EQ(WorkerRegistry::Describe(*registry.ByIndex(1)), "peer b");
  registry.Leave(0);
  ASSERT_EQ(registry.workers().size(), 1u);
  EXPECT_EQ(registry.ready_count(), 0);
  ASSERT_NE(registry.FindLeft("a"), nullptr);
  EXPECT_EQ(registry.FindLeft("a")->index, 0);
  EXPECT_EQ(registry.FindLeft("a")->who, "10.0.0.7, host w1");
  EXPECT_EQ(registry.FindLeft("b"), nullptr);
  // The slot is free again: a newcomer asking for no index in particular
  // gets it.
  WorkerRegistry::Worker* c = registry.Join("c", 2, -1, kT + milliseconds(2000), &fresh);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(c->index, 0);
  EXPECT_EQ(registry.workers()[0].peer, "c");
}

TEST(WorkerRegistryTest, IdleForTheGraceOnlyWhenEveryHeartbeatSaysIdle) {
  WorkerRegistry registry(Options(1));
  bool fresh = false;
  auto* w = registry.Join("a", 1, 0, kT, &fresh);
  registry.OnHeartbeat(*w, Beat(1, 0, 0, 0), kT);
  registry.OnHeartbeat(*w, Beat(2, 0, 0, 0), kT + milliseconds(250));  // still since kT
  EXPECT_EQ(w->idle_since, kT);
  EXPECT_TRUE(registry.IdleFor(kT + milliseconds(2999)).empty());
  EXPECT_EQ(registry.IdleFor(kT + milliseconds(3000)), (std::vector<int32_t>{0}));
  // New work sent: idle again only from the next idle heartbeat.
  registry.OnAssignmentsSent(*w);
  EXPECT_TRUE(registry.IdleFor(kT + milliseconds(4000)).empty());
  registry.OnHeartbeat(*w, Beat(3, 0, 0, 0), kT + milliseconds(4000));
  EXPECT_TRUE(registry.IdleFor(kT + milliseconds(6999)).empty());
  EXPECT_EQ(registry.IdleFor(kT + milliseconds(7000)), (std::vector<int32_t>{0}));
  // Something queued: not idle.
  registry.OnHeartbeat(*w, Beat(4, 0, 0, 1), kT + milliseconds(7250));
  EXPECT_TRUE(registry.IdleFor(kT + milliseconds(20000)).empty());
  registry.MarkDead(*w);
  registry.OnHeartbeat(*w, Beat(5, 0, 0, 0), kT + milliseconds(7500));
  EXPECT_TRUE(registry.IdleFor(kT + milliseconds(20000)).empty());  // dead: not counted
  EXPECT_EQ(registry.inflight(), 0u);
}

}  // namespace
}  // namespace surge::coordinator
