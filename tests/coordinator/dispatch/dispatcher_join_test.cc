// Membership until the start, on simulated time with scripted workers (the
// AutoAdvanceClock's world): a worker that joins and then goes silent or
// unreachable before t0 is dropped, its slot goes to the next worker that
// joins, the run starts only with live workers, and a worker that stays is
// never dropped however long the wait.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coordinator/dispatch/dispatcher.h"
#include "tests/testing/dispatch_fixtures.h"
#include "tests/testing/scripted_worker.h"
#include "tests/testing/simulated_clock.h"

namespace surge::coordinator {
namespace {

using std::chrono::milliseconds;
using surge::testing::AutoAdvanceClock;
using surge::testing::ConstantPlan;
using surge::testing::kSimulatedStart;
using surge::testing::TestOptions;

constexpr int64_t kMs = 1000 * 1000;
const Clock::TimePoint kStart = kSimulatedStart;

using SimRig = surge::testing::DispatchRig<AutoAdvanceClock>;

// One scripted worker of the world: joins (starts stepping) at `joins`, and
// from `leaves` on is silent; with `disconnect` its connection is closed
// then too (a killed process), and with `wakes` it speaks again from then.
// "Never": far beyond any test (and far from overflowing in nanoseconds).
constexpr milliseconds kNever = std::chrono::hours(24 * 365);

struct Script {
  std::string name;
  int32_t index = 0;
  milliseconds joins{0};
  milliseconds leaves = kNever;
  bool disconnect = false;
  milliseconds wakes = kNever;
  milliseconds setup{0};  // Welcome to its first heartbeat (ready)
};

std::unique_ptr<SimRig> RunWorld(const ArrivalSchedule& plan, DispatcherOptions options,
                                 std::vector<Script> scripts) {
  auto rig = std::make_unique<SimRig>(plan, std::move(options));
  for (const Script& s : scripts) rig->AddScriptedWorker(s.name, s.index).set_setup(s.setup);
  auto left = std::make_shared<std::vector<bool>>(scripts.size(), false);
  auto woke = std::make_shared<std::vector<bool>>(scripts.size(), false);
  rig->clock.set_world([&rig = *rig, scripts, left, woke] {
    const auto since = rig.clock.Now() - kStart;
    for (size_t k = 0; k < scripts.size(); ++k) {
      const Script& s = scripts[k];
      if (since < s.joins) continue;
      if (since >= s.leaves && !(*left)[k]) {
        (*left)[k] = true;
        rig.scripted[k]->Silence();
        if (s.disconnect) rig.router.Disconnect(s.name);
      }
      if (since >= s.wakes && !(*woke)[k]) {
        (*woke)[k] = true;
        rig.scripted[k]->Wake();
      }
      rig.scripted[k]->Step();
    }
  });
  rig->Run();
  return rig;
}

// Every record OK, none lost, none sent twice.
void ExpectAllOk(const SimRig& run, size_t planned) {
  ASSERT_EQ(run.records.size(), planned);
  std::set<uint64_t> seen;
  for (const auto& r : run.records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    EXPECT_EQ(r.status(), surge::v1::OK) << r.index() << " " << r.error();
  }
}

// w0 joins at 0, heartbeats every 250 ms (last at 2.75 s) and goes silent at
// 3 s; w1 joins at 5 s, a new worker asking for index 0 at 6 s. w0 is dropped
// at the first 100 ms sweep more than 1.5 s after it was last heard (4.3 s),
// the newcomer gets index 0 and the run starts with it: t0 = 6 s + 100 ms.
// w0 wakes after the start, speaks and is told to stop; it is no loss.
TEST(DispatcherJoinTest, SilentWorkerIsDroppedBeforeTheStartAndANewcomerTakesItsSlot) {
  const ArrivalSchedule plan = ConstantPlan(100, 200);  // 10 ms apart, 2 s
  DispatcherOptions options = TestOptions(2);
  const std::unique_ptr<SimRig> owner =
      RunWorld(plan, options,
               {{"w0", 0, milliseconds(0), milliseconds(3000), false, milliseconds(6500)},
                {"w1", 1, milliseconds(5000)},
                {"w0-new", 0, milliseconds(6000)}});
  const SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_EQ(run.outcome->t0_ns, ToNanos(kStart) + 6100 * kMs);
  ASSERT_EQ(run.outcome->left_before_start.size(), 1u);
  const JoinDrop& drop = run.outcome->left_before_start[0];
  EXPECT_EQ(drop.worker, 0);
  EXPECT_EQ(drop.who, "peer w0");
  EXPECT_EQ(drop.why, "silent for 1500 ms");
  EXPECT_EQ(drop.at_ns, (4300 - 6100) * kMs);
  ExpectAllOk(run, 200);
  EXPECT_EQ(run.outcome->workers_lost, 0u);
  EXPECT_EQ(run.outcome->workers_fenced, 0u);
  EXPECT_EQ(run.outcome->send_unknown, 0u);
  // Slot 0's share went to the newcomer, none to the dropped worker.
  EXPECT_TRUE(run.scripted[0]->sent().empty());
  EXPECT_EQ(run.scripted[1]->sent().size(), 100u);
  EXPECT_EQ(run.scripted[2]->sent().size(), 100u);
  for (const auto& r : run.records) EXPECT_EQ(r.worker(), static_cast<int32_t>(r.index() % 2));
  EXPECT_EQ(run.scripted[0]->stop_reason(), "fenced");
  EXPECT_EQ(run.scripted[2]->stop_reason(), "done");
}

// The case of a killed worker: w0's connection closes at 3 s and w1 becomes
// ready at 3.05 s, before any silence rule could say w0 is gone. The check
// just before t0 finds w0 unreachable; the run waits for the newcomer (4 s)
// and starts with it, with nothing lost.
TEST(DispatcherJoinTest, WorkerWhoseConnectionClosedIsDroppedJustBeforeT0) {
  const ArrivalSchedule plan = ConstantPlan(100, 200);
  const std::unique_ptr<SimRig> owner =
      RunWorld(plan, TestOptions(2),
               {{"w0", 0, milliseconds(0), milliseconds(3000), /*disconnect=*/true},
                {"w1", 1, milliseconds(3050)},
                {"w0-new", 0, milliseconds(4000)}});
  const SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_EQ(run.outcome->t0_ns, ToNanos(kStart) + 4100 * kMs);
  ASSERT_EQ(run.outcome->left_before_start.size(), 1u);
  EXPECT_EQ(run.outcome->left_before_start[0].worker, 0);
  EXPECT_EQ(run.outcome->left_before_start[0].why, "unreachable (its connection is gone)");
  EXPECT_EQ(run.outcome->left_before_start[0].at_ns, (3050 - 4100) * kMs);
  EXPECT_EQ(run.outcome->left_before_start[0].still_missing, 1);
  ExpectAllOk(run, 200);
  EXPECT_EQ(run.outcome->workers_lost, 0u);
  EXPECT_EQ(run.outcome->send_unknown, 0u);
  EXPECT_TRUE(run.scripted[0]->sent().empty());
  EXPECT_EQ(run.scripted[2]->sent().size(), 100u);
}

// The count of what is missing counts joins, not readiness: w1 has joined
// (3.05 s) but is still setting up (ready at 4.05 s) when the 3.1 s sweep
// finds w0's connection gone, so the run waits for 1 more worker, not 2.
// The newcomer joins at 4.5 s and the run starts with it.
TEST(DispatcherJoinTest, AWorkerStillSettingUpIsNotCountedAsMissing) {
  const ArrivalSchedule plan = ConstantPlan(100, 200);
  const std::unique_ptr<SimRig> owner =
      RunWorld(plan, TestOptions(2),
               {{"w0", 0, milliseconds(0), milliseconds(3000), /*disconnect=*/true},
                {"w1", 1, milliseconds(3050), kNever, false, kNever, /*setup=*/milliseconds(1000)},
                {"w0-new", 0, milliseconds(4500)}});
  const SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  ASSERT_EQ(run.outcome->left_before_start.size(), 1u);
  const JoinDrop& drop = run.outcome->left_before_start[0];
  EXPECT_EQ(drop.worker, 0);
  EXPECT_EQ(drop.why, "unreachable (its connection is gone)");
  EXPECT_EQ(drop.still_missing, 1);
  EXPECT_LT(drop.at_ns, (4050 - 4500) * kMs);  // before w1 was ready
  ExpectAllOk(run, 200);
  EXPECT_EQ(run.outcome->workers_lost, 0u);
  EXPECT_TRUE(run.scripted[0]->sent().empty());
  EXPECT_EQ(run.scripted[1]->sent().size(), 100u);
  EXPECT_EQ(run.scripted[2]->sent().size(), 100u);
}

// Killed while nobody else is joining: the sweep pings a worker quiet for
// 300 ms (w0, last heard at 2.75 s, at the 3.1 s sweep) and drops it at once.
// Without a newcomer the run never starts: it fails at the join timeout, and
// the worker that stayed is told so.
TEST(DispatcherJoinTest, NoRunStartsWithAWorkerKnownToBeGone) {
  const ArrivalSchedule plan = ConstantPlan(100, 200);
  DispatcherOptions options = TestOptions(2);
  options.hello_timeout = milliseconds(8000);
  const std::unique_ptr<SimRig> owner =
      RunWorld(plan, options,
               {{"w0", 0, milliseconds(0), milliseconds(3000), /*disconnect=*/true},
                {"w1", 1, milliseconds(5000)}});
  SimRig& run = *owner;
  run.scripted[1]->Step();  // reads what the failed start sent it
  ASSERT_FALSE(run.outcome.ok());
  EXPECT_EQ(run.outcome.status().message(),
            "only 1 of 2 workers were ready (1 connected) within 8000 ms");
  EXPECT_EQ(run.ended, kStart + milliseconds(8000));
  EXPECT_TRUE(run.records.empty());
  EXPECT_EQ(run.scripted[1]->stop_reason(),
            "start_failed: only 1 of 2 workers were ready (1 connected) within 8000 ms");
  EXPECT_TRUE(run.scripted[1]->sent().empty());
}

// A worker that stays through a long wait (90 s for the second one) is never
// dropped: its heartbeats keep it, and the run starts with both.
TEST(DispatcherJoinTest, WorkerThatStaysIsNeverDroppedWhileTheWaitIsLong) {
  const ArrivalSchedule plan = ConstantPlan(100, 200);
  DispatcherOptions options = TestOptions(2);
  options.hello_timeout = milliseconds(120000);
  const std::unique_ptr<SimRig> owner =
      RunWorld(plan, options, {{"w0", 0, milliseconds(0)}, {"w1", 1, milliseconds(90000)}});
  const SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_TRUE(run.outcome->left_before_start.empty());
  EXPECT_EQ(run.outcome->t0_ns, ToNanos(kStart) + 90100 * kMs);
  ExpectAllOk(run, 200);
  EXPECT_EQ(run.scripted[0]->sent().size(), 100u);
  EXPECT_EQ(run.scripted[1]->sent().size(), 100u);
  // About 4 acks a second for 92 s: it was heard (and answered) throughout.
  EXPECT_GE(run.scripted[0]->acks(), 360u);
}

// A worker whose own pre-flight check says it cannot connect to the target
// keeps the run from starting: nothing is assigned, the failure names the
// worker and why, and every worker is told why the start failed. With
// allow_unreachable_workers the same world starts and sends everything.
TEST(DispatcherJoinTest, WorkerThatCannotReachTheTargetKeepsTheRunFromStarting) {
  const ArrivalSchedule plan = ConstantPlan(100, 20);
  surge::v1::TargetCheck refused;
  refused.set_reachable(false);
  refused.set_error("cannot reach http://10.0.0.9:8000/v1/models: connect: Connection refused");
  surge::v1::TargetCheck fine;
  fine.set_reachable(true);
  for (const bool allow : {false, true}) {
    SCOPED_TRACE(allow ? "allowed" : "refused");
    DispatcherOptions options = TestOptions(2);
    options.allow_unreachable_workers = allow;
    auto rig = std::make_unique<SimRig>(plan, options);
    rig->AddScriptedWorker("w0", 0);
    rig->AddScriptedWorker("w1", 1);
    rig->scripted[0]->set_target_check(fine);
    rig->scripted[1]->set_target_check(refused);
    rig->clock.set_world([&r = *rig] {
      for (auto& w : r.scripted) w->Step();
    });
    rig->Run();
    if (!allow) {
      ASSERT_FALSE(rig->outcome.ok());
      EXPECT_EQ(rig->outcome.status().code(), absl::StatusCode::kUnavailable);
      const std::string message(rig->outcome.status().message());
      EXPECT_NE(message.find("1 of 2 workers cannot connect to the target from their host"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("worker 1 (peer w1): cannot reach http://10.0.0.9:8000/v1/models: "
                             "connect: Connection refused"),
                std::string::npos)
          << message;
      EXPECT_EQ(message.find("worker 0"), std::string::npos) << message;
      EXPECT_TRUE(rig->records.empty());
      for (auto& w : rig->scripted) {
        w->Step();
        EXPECT_TRUE(w->sent().empty());
        EXPECT_EQ(w->stop_reason().rfind("start_failed: 1 of 2 workers cannot connect", 0), 0u)
            << w->stop_reason();
      }
    } else {
      ASSERT_TRUE(rig->outcome.ok()) << rig->outcome.status();
      ExpectAllOk(*rig, 20);
    }
  }
}

}  // namespace
}  // namespace surge::coordinator
