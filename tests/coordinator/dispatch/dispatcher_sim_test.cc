// The dispatcher on simulated time: scripted workers step on the test's
// thread whenever the dispatcher waits to receive (the AutoAdvanceClock's
// world), and the in-memory transport's receive deadlines are on that
// clock, so a run of seconds takes milliseconds and every timestamp is exact
// and reproducible (R-DIST-3, R-DIST-5, R-DIST-6).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/plan/traffic.h"
#include "tests/testing/dispatch_fixtures.h"
#include "tests/testing/in_memory_transport.h"
#include "tests/testing/scripted_worker.h"
#include "tests/testing/simulated_clock.h"
#include "worker/send_health.h"

namespace surge::coordinator {
namespace {

using std::chrono::milliseconds;
using surge::testing::AutoAdvanceClock;
using surge::testing::ConstantPlan;
using surge::testing::InMemoryRouter;
using surge::testing::kSimulatedStart;
using surge::testing::TestOptions;

constexpr int64_t kMs = 1000 * 1000;
const Clock::TimePoint kStart = kSimulatedStart;

// A dispatcher and scripted workers on one AutoAdvanceClock.
using SimRig = surge::testing::DispatchRig<AutoAdvanceClock>;

// Runs `plan` with `options.num_workers` scripted workers ("w0", "w1", ...);
// `before_step(clock, rig)` runs before the workers step and returns false
// to skip their step.
std::unique_ptr<SimRig> RunSimulated(
    const ArrivalSchedule& plan, DispatcherOptions options,
    std::function<bool(AutoAdvanceClock&, SimRig&)> before_step = nullptr) {
  const int num_workers = options.num_workers;
  auto rig = std::make_unique<SimRig>(plan, std::move(options));
  for (int k = 0; k < num_workers; ++k) rig->AddScriptedWorker(absl::StrCat("w", k), k);
  rig->clock.set_world([&rig = *rig, before_step] {
    if (before_step && !before_step(rig.clock, rig)) return;
    for (auto& w : rig.scripted) w->Step();
  });
  rig->Run();
  return rig;
}

TEST(DispatcherSimTest, StripedRunWithExactTimestamps) {
  const ArrivalSchedule plan = ConstantPlan(100, 200);  // 10 ms apart, 2 s
  const std::unique_ptr<SimRig> owner = RunSimulated(plan, TestOptions(2));
  SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  // Both workers were ready at the first instant: t0 = start + lead exactly.
  EXPECT_EQ(run.outcome->t0_ns, ToNanos(kStart) + 100 * kMs);
  EXPECT_EQ(run.outcome->records, 200u);
  EXPECT_EQ(run.outcome->rejected_records, 0u);
  EXPECT_EQ(run.outcome->workers_lost, 0u);
  ASSERT_EQ(run.records.size(), 200u);
  std::set<uint64_t> seen;
  for (const auto& r : run.records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    EXPECT_EQ(r.status(), surge::v1::OK);
    EXPECT_EQ(r.worker(), static_cast<int32_t>(r.index() % 2)) << r.index();
    EXPECT_EQ(r.planned_ns(), static_cast<int64_t>(r.index() + 1) * 10 * kMs);
    // The simulated receive deadlines fall on 5 ms steps, so every request
    // is released exactly at its planned instant.
    EXPECT_EQ(r.sent_ns(), r.planned_ns()) << r.index();
  }
  for (const auto& w : run.scripted) {
    EXPECT_EQ(w->stop_reason(), "done");
    EXPECT_EQ(w->sent().size(), 100u);
    EXPECT_GT(w->acks(), 7u);  // about one per 250 ms of the 2.1 s
  }
  // Simulated, not real, time passed: the run ended soon after the plan.
  EXPECT_GE(run.ended, kStart + milliseconds(2100));
  EXPECT_LT(run.ended, kStart + milliseconds(2400));
}

// On simulated time: worker 1 goes silent at
// t0 + 1 s; it is declared dead 1.5 s after it was last heard (within one
// 100 ms sweep); what it held planned after death + lease (1 s) + 50 ms goes
// to worker 0 with attempt 1, the rest of its share is LOST send_unknown;
// nothing is sent twice, and two runs are identical.
TEST(DispatcherSimTest, SilentWorkerIsTakenOverAtTheLeaseBoundary) {
  const ArrivalSchedule plan = ConstantPlan(100, 500);  // 10 ms apart, 5 s
  const Clock::TimePoint silence_at = kStart + milliseconds(100) + milliseconds(1000);
  auto run_once = [&] {
    return RunSimulated(plan, TestOptions(2), [&](AutoAdvanceClock& clock, SimRig& run) {
      if (clock.Now() >= silence_at) run.scripted[1]->Silence();
      return true;
    });
  };
  const std::unique_ptr<SimRig> owner = run_once();
  SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_EQ(run.outcome->workers_lost, 1u);
  ASSERT_EQ(run.records.size(), 500u);
  // The silence began at 1.0 s after t0, so worker 1 was last heard just
  // before 1.0 s and may have released up to its lease end + margin (about
  // 2.05 s); it is declared dead at 2.5 s to 2.6 s (+ a step). Its requests
  // split three ways: lost up to ≈2.05 s, not sent from
  // there to the death + 50 ms (provably unsent but already due), reassigned
  // after that.
  std::set<uint64_t> seen;
  int64_t max_lost_ns = 0, min_not_sent_ns = INT64_MAX, max_not_sent_ns = 0,
          min_retried_ns = INT64_MAX;
  uint64_t lost = 0, not_sent = 0, retried = 0;
  for (const auto& r : run.records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    if (r.status() == surge::v1::LOST) {
      ++lost;
      EXPECT_EQ(r.index() % 2, 1u) << r.index();
      EXPECT_EQ(r.error(), "send_unknown: worker 1 lost (silent for 1500 ms)");
      // Silent from exactly 1.0 s on: request 99, due then, was not sent.
      EXPECT_GE(r.planned_ns(), 1000 * kMs) << r.index();
      max_lost_ns = std::max(max_lost_ns, r.planned_ns());
    } else if (r.status() == surge::v1::NOT_SENT) {
      ++not_sent;
      EXPECT_EQ(r.index() % 2, 1u) << r.index();
      EXPECT_EQ(r.error(),
                "not_sent: worker 1 lost before this request could be sent (silent for 1500 ms)");
      min_not_sent_ns = std::min(min_not_sent_ns, r.planned_ns());
      max_not_sent_ns = std::max(max_not_sent_ns, r.planned_ns());
    } else {
      EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
    }
    if (r.attempt() == 1) {
      ++retried;
      EXPECT_EQ(r.worker(), 0) << r.index();
      EXPECT_EQ(r.index() % 2, 1u) << r.index();
      min_retried_ns = std::min(min_retried_ns, r.planned_ns());
    }
  }
  EXPECT_EQ(run.outcome->send_unknown, lost);
  EXPECT_EQ(retried, run.outcome->reassigned);
  EXPECT_GE(max_lost_ns, 1800 * kMs);  // last heard ≥ 0.75 s (one heartbeat)
  EXPECT_LE(max_lost_ns, 2050 * kMs);
  EXPECT_EQ(min_not_sent_ns, max_lost_ns + 20 * kMs);  // the next one of worker 1's share
  EXPECT_GE(max_not_sent_ns, 2500 * kMs);
  EXPECT_LE(max_not_sent_ns, 2670 * kMs);
  EXPECT_EQ(min_retried_ns, max_not_sent_ns + 20 * kMs);
  EXPECT_GT(lost, 40u);  // about 1.05 s of worker 1's share (50/s)
  EXPECT_LT(lost, 54u);
  EXPECT_GT(not_sent, 20u);  // about 0.5 s of it
  EXPECT_LT(not_sent, 45u);
  EXPECT_GT(retried, 90u);  // the rest of its share up to 5.0 s (≈ 2.4 s)
  // The loss event for the summary and the actual page: who, when, why and
  // the same three-way split as the records above.
  ASSERT_EQ(run.outcome->worker_losses.size(), 1u);
  const WorkerLoss& loss = run.outcome->worker_losses[0];
  EXPECT_EQ(loss.worker, 1);
  EXPECT_EQ(loss.why, "silent for 1500 ms");
  EXPECT_GE(loss.at_ns, 2500 * kMs);
  EXPECT_LE(loss.at_ns, 2620 * kMs);
  // The not-sent ones are due by the death + 50 ms; the reassigned after it.
  EXPECT_LE(max_not_sent_ns, loss.at_ns + RequestLedger::kReassignMarginNs);
  EXPECT_GT(min_retried_ns, loss.at_ns + RequestLedger::kReassignMarginNs);
  EXPECT_EQ(loss.send_unknown, lost);
  EXPECT_EQ(loss.not_sent, not_sent);
  EXPECT_EQ(loss.reassigned, retried);
  EXPECT_EQ(loss.reassigned, run.outcome->reassigned);
  // Fencing in practice: the silent worker sent nothing after it fell
  // silent, and no index was sent by both workers.
  std::set<uint64_t> by_silent;
  for (const auto& s : run.scripted[1]->sent()) {
    EXPECT_LT(s.sent_ns, 1000 * kMs);
    by_silent.insert(s.index);
  }
  for (const auto& s : run.scripted[0]->sent()) EXPECT_EQ(by_silent.count(s.index), 0u);

  const std::unique_ptr<SimRig> again = run_once();
  ASSERT_EQ(again->records.size(), run.records.size());
  for (size_t k = 0; k < run.records.size(); ++k) {
    EXPECT_EQ(again->records[k].SerializeAsString(), run.records[k].SerializeAsString()) << k;
  }
  EXPECT_EQ(again->ended, run.ended);
}

// R-DIST-6/7: worker 1 is frozen at 1.0 s
// (SIGSTOP), declared dead ~1.5 s later, and continued at 3.0 s. Its first
// message after that is answered with Stop "fenced", once counted and
// logged; it releases nothing after it woke, and every request still has
// exactly one record.
TEST(DispatcherSimTest, WorkerThatWakesAfterItsDeathIsToldToStop) {
  const ArrivalSchedule plan = ConstantPlan(100, 500);  // 10 ms apart, 5 s
  const Clock::TimePoint frozen_at = kStart + milliseconds(100) + milliseconds(1000);
  const Clock::TimePoint woken_at = frozen_at + milliseconds(2000);
  size_t sent_when_frozen = 0;
  bool woken = false;
  const std::unique_ptr<SimRig> owner =
      RunSimulated(plan, TestOptions(2), [&](AutoAdvanceClock& clock, SimRig& r) {
        if (clock.Now() >= frozen_at && !woken && clock.Now() < woken_at) {
          if (sent_when_frozen == 0) sent_when_frozen = r.scripted[1]->sent().size();
          r.scripted[1]->Silence();
        } else if (clock.Now() >= woken_at && !woken) {
          woken = true;
          r.scripted[1]->Wake();
        }
        return true;
      });
  SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_TRUE(woken);
  EXPECT_EQ(run.outcome->workers_lost, 1u);
  EXPECT_EQ(run.outcome->workers_fenced, 1u);
  EXPECT_EQ(run.scripted[1]->stop_reason(), "fenced");
  EXPECT_TRUE(run.scripted[1]->gone());
  EXPECT_EQ(run.scripted[1]->sent().size(), sent_when_frozen);
  EXPECT_GT(sent_when_frozen, 40u);  // about 50 in its first second
  EXPECT_EQ(run.scripted[0]->stop_reason(), "done");
  ASSERT_EQ(run.records.size(), 500u);
  std::set<uint64_t> seen;
  for (const auto& r : run.records) EXPECT_TRUE(seen.insert(r.index()).second) << r.index();
}

// A worker declared dead that then leaves on its own (it gave up on the
// coordinator: Goodbye "coordinator_lost") is told to stop when it speaks,
// but is no fenced worker: only one that heard the Stop and left for it is.
TEST(DispatcherSimTest, WorkerThatLeftOnItsOwnIsNotCountedAsFenced) {
  const ArrivalSchedule plan = ConstantPlan(100, 500);
  const Clock::TimePoint silent_at = kStart + milliseconds(1100);
  const Clock::TimePoint speaks_at = silent_at + milliseconds(2000);  // after its death
  std::unique_ptr<Transport> again;
  std::vector<std::string> told;
  const std::unique_ptr<SimRig> owner =
      RunSimulated(plan, TestOptions(2), [&](AutoAdvanceClock& clock, SimRig& r) {
        if (clock.Now() >= silent_at) r.scripted[1]->Silence();
        if (clock.Now() >= speaks_at && again == nullptr) {
          // Its last words, as a worker whose lease ended says them: a
          // heartbeat (the question once more), then its Goodbye.
          again = r.router.Connect("w1");
          surge::v1::Envelope hb;
          hb.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
          hb.mutable_heartbeat()->set_hb_seq(99);
          EXPECT_TRUE(again->Send("", hb).ok());
          surge::v1::Envelope bye;
          bye.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
          bye.mutable_goodbye()->set_reason("coordinator_lost");
          EXPECT_TRUE(again->Send("", bye).ok());
        }
        if (again != nullptr) {
          for (auto in = again->Receive(clock.Now()); in.ok() && in->has_value();
               in = again->Receive(clock.Now())) {
            if ((*in)->message.has_stop()) told.push_back((*in)->message.stop().reason());
          }
        }
        return true;
      });
  SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_EQ(run.outcome->workers_lost, 1u);
  EXPECT_EQ(told, (std::vector<std::string>{"fenced"}));
  EXPECT_EQ(run.outcome->workers_fenced, 0u);
  EXPECT_EQ(run.records.size(), 500u);
}

// --worker-lease-ms / --worker-silence-ms: worker 1 is silent for 2 s from
// t0 + 1 s (a network blip). With the default lease (1 s) and silence
// (1.5 s) it is declared dead and its requests are taken over; with a 3 s
// lease and 3.5 s silence it is not: its pacer never stopped, nothing is
// lost, nothing reassigned, and what was due during the blip goes out when
// it ends.
TEST(DispatcherSimTest, LongerLeaseAndSilenceRideOutATwoSecondBlip) {
  const ArrivalSchedule plan = ConstantPlan(100, 500);  // 5 s
  const Clock::TimePoint silent_at = kStart + milliseconds(1100);
  const Clock::TimePoint back_at = silent_at + milliseconds(2000);
  auto run_with = [&](uint32_t lease_ms, uint32_t silence_ms) {
    DispatcherOptions options = TestOptions(2);
    options.lease_ms = lease_ms;
    options.dead_after = milliseconds(silence_ms);
    bool back = false;
    return RunSimulated(plan, options, [&, back](AutoAdvanceClock& clock, SimRig& r) mutable {
      if (clock.Now() >= silent_at && clock.Now() < back_at) r.scripted[1]->Silence();
      if (clock.Now() >= back_at && !back) {
        back = true;
        r.scripted[1]->Resume();
      }
      return true;
    });
  };
  const std::unique_ptr<SimRig> short_lease = run_with(1000, 1500);
  ASSERT_TRUE(short_lease->outcome.ok()) << short_lease->outcome.status();
  EXPECT_EQ(short_lease->outcome->workers_lost, 1u);
  EXPECT_GT(short_lease->outcome->send_unknown, 0u);
  const std::unique_ptr<SimRig> long_lease = run_with(3000, 3500);
  SimRig& run = *long_lease;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_EQ(run.outcome->workers_lost, 0u);
  EXPECT_EQ(run.outcome->send_unknown, 0u);
  EXPECT_EQ(run.outcome->reassigned, 0u);
  ASSERT_EQ(run.records.size(), 500u);
  for (const auto& r : run.records) {
    EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
    EXPECT_EQ(r.attempt(), 0u) << r.index();
  }
  // Its share of the blip went out when it
  // came back, at t0 + 3.0 s: its 101 requests planned from 1.0 s to 3.0 s
  // inclusive, none before.
  size_t at_return = 0;
  for (const auto& sent : run.scripted[1]->sent()) {
    EXPECT_FALSE(sent.sent_ns > 1000 * kMs && sent.sent_ns < 3000 * kMs) << sent.index;
    at_return += sent.sent_ns == 3000 * kMs;
  }
  EXPECT_EQ(at_return, 101u);
  EXPECT_EQ(run.scripted[1]->sent().size(), 250u);
}

// The coordinator stalls for 2 s (the clock
// jumps while nobody runs): the stall guard moves every silence deadline
// back, so nobody is evicted and nothing is lost; requests due during the
// stall are sent late.
TEST(DispatcherSimTest, CoordinatorStallOfTwoSecondsEvictsNobody) {
  const ArrivalSchedule plan = ConstantPlan(100, 300);  // 3 s
  bool jumped = false;
  const std::unique_ptr<SimRig> owner =
      RunSimulated(plan, TestOptions(2), [&](AutoAdvanceClock& clock, SimRig&) {
        if (!jumped && clock.Now() >= kStart + milliseconds(1100)) {
          jumped = true;
          clock.AdvanceBy(std::chrono::seconds(2));
          return false;
        }
        return true;
      });
  SimRig& run = *owner;
  ASSERT_TRUE(jumped);
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_EQ(run.outcome->workers_lost, 0u);
  EXPECT_TRUE(run.outcome->worker_losses.empty());
  EXPECT_EQ(run.outcome->reassigned, 0u);
  ASSERT_EQ(run.records.size(), 300u);
  int64_t max_late_ns = 0;
  for (const auto& r : run.records) {
    EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
    max_late_ns = std::max(max_late_ns, r.sent_ns() - r.planned_ns());
  }
  EXPECT_GE(max_late_ns, 1900 * kMs);  // due just after 1.0 s, sent after the stall
}

// The least-loaded policy through the dispatcher: with equal workers it
// stripes like round-robin, and every request still ends exactly once.
TEST(DispatcherSimTest, LeastLoadedPolicyRunsAPlanToTheEnd) {
  const ArrivalSchedule plan = ConstantPlan(100, 120);
  DispatcherOptions options = TestOptions(3);
  options.assign = AssignPolicyKind::kLeastLoaded;
  const std::unique_ptr<SimRig> owner = RunSimulated(plan, options);
  SimRig& run = *owner;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  ASSERT_EQ(run.records.size(), 120u);
  std::map<int32_t, int> per_worker;
  for (const auto& r : run.records) {
    EXPECT_EQ(r.status(), surge::v1::OK);
    ++per_worker[r.worker()];
  }
  EXPECT_EQ(per_worker, (std::map<int32_t, int>{{0, 40}, {1, 40}, {2, 40}}));
}

// Who may join. A third worker before the start is told the
// run has all its workers (REJECT_RUN_FULL), one after the start that it
// started without it (REJECT_RUN_STARTED): both exit 0, nothing to do. A
// worker of another protocol version is refused naming both versions.
TEST(DispatcherSimTest, LateExtraAndForeignWorkersAreRefusedWithTheirReason) {
  const ArrivalSchedule plan = ConstantPlan(100, 50);  // 0.5 s
  std::unique_ptr<Transport> extra, late, foreign;
  std::vector<surge::v1::Reject> extra_got, late_got, foreign_got;
  bool late_sent = false;
  auto hello = [](Transport& t, uint32_t version) {
    surge::v1::Envelope e;
    e.set_protocol_version(version);
    e.mutable_hello()->set_requested_index(-1);
    ASSERT_TRUE(t.Send("", e).ok());
  };
  auto drain = [](Transport& t, std::vector<surge::v1::Reject>& got) {
    for (;;) {
      auto in = t.Receive(Clock::TimePoint::min());
      if (!in.ok() || !in->has_value()) return;
      if ((*in)->message.has_reject()) got.push_back((*in)->message.reject());
    }
  };
  SimRig run(plan, TestOptions(2));
  AutoAdvanceClock& clock = run.clock;
  for (int k = 0; k < 2; ++k) run.AddScriptedWorker(absl::StrCat("w", k), k);
  extra = run.router.Connect("extra");
  foreign = run.router.Connect("foreign");
  late = run.router.Connect("late");
  hello(*foreign, surge::v1::PROTOCOL_VERSION_CURRENT + 7);
  bool extra_sent = false;
  clock.set_world([&] {
    for (auto& w : run.scripted) w->Step();
    // Once the two have said Hello (their first step), a third one does.
    if (!extra_sent) {
      hello(*extra, surge::v1::PROTOCOL_VERSION_CURRENT);
      extra_sent = true;
    }
    // After the start (t0 = start + 100 ms), the late worker says Hello.
    if (!late_sent && clock.Now() >= kStart + milliseconds(300)) {
      hello(*late, surge::v1::PROTOCOL_VERSION_CURRENT);
      late_sent = true;
    }
    drain(*extra, extra_got);
    drain(*late, late_got);
    drain(*foreign, foreign_got);
  });
  run.Run();
  drain(*extra, extra_got);
  drain(*late, late_got);
  drain(*foreign, foreign_got);
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  EXPECT_EQ(run.records.size(), 50u);
  ASSERT_EQ(extra_got.size(), 1u);
  EXPECT_EQ(extra_got[0].kind(), surge::v1::REJECT_RUN_FULL);
  EXPECT_EQ(extra_got[0].reason(), "the run has all the 2 workers it expects");
  ASSERT_TRUE(late_sent);
  ASSERT_EQ(late_got.size(), 1u);
  EXPECT_EQ(late_got[0].kind(), surge::v1::REJECT_RUN_STARTED);
  EXPECT_THAT(late_got[0].reason(), ::testing::HasSubstr("already started"));
  ASSERT_EQ(foreign_got.size(), 1u);
  EXPECT_EQ(foreign_got[0].kind(), surge::v1::REJECT_PROTOCOL_VERSION);
  EXPECT_EQ(
      foreign_got[0].reason(),
      absl::StrCat("the worker speaks protocol version ", surge::v1::PROTOCOL_VERSION_CURRENT + 7,
                   ", this coordinator speaks version ", surge::v1::PROTOCOL_VERSION_CURRENT,
                   ": run the same surge release on both sides"));
}

// A run without workers fails at once (it used to wait for records that no
// one would ever send).
TEST(DispatcherSimTest, NoWorkersIsAnErrorNotAHang) {
  SimRig rig(ConstantPlan(100, 5), TestOptions(0));
  const auto& outcome = rig.Run();
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(outcome.status().message()), ::testing::HasSubstr("at least one worker"));
  EXPECT_TRUE(rig.records.empty());
  EXPECT_EQ(rig.clock.Now(), kStart);
}

// The lateness alarm on simulated time. A worker's pacer, modelled: its
// requests are due every `interval_ns` from `first_ns` to `last_ns` (ns
// after t0); from `saturate_at_ns` on each waits for one of its 8 in-flight
// slots and they leave `cost_ns` apart (the server answers slower than the
// plan sends), so lateness grows by cost − interval per request. Its
// heartbeats carry the report of a real worker::SendHealth fed with those
// hand-offs.
struct ModelledPacer {
  int64_t first_ns = 0;
  int64_t interval_ns = 0;
  int64_t last_ns = 0;
  int64_t saturate_at_ns = INT64_MAX;
  int64_t cost_ns = 0;

  worker::SendHealth health{0, {}};
  int64_t next_ns = -1;
  int64_t last_handoff_ns = INT64_MIN / 2;
  // Hand-off time of the first request over 10 ms late (−1 while none).
  int64_t crossed_at_ns = -1;

  surge::v1::SendHealth ReportAt(int64_t now) {
    if (next_ns < 0) next_ns = first_ns;
    bool waiting = false;
    while (next_ns <= last_ns) {
      const bool waits = next_ns >= saturate_at_ns;
      const int64_t handoff = waits ? std::max(next_ns, last_handoff_ns + cost_ns) : next_ns;
      if (handoff > now) {
        waiting = waits && next_ns <= now;
        break;
      }
      if (waits) health.OnGateWait();
      health.OnSend(handoff, handoff - next_ns);
      if (crossed_at_ns < 0 && handoff - next_ns > 10 * kMs) crossed_at_ns = handoff;
      last_handoff_ns = handoff;
      next_ns += interval_ns;
    }
    const int64_t overdue = next_ns <= last_ns ? std::max<int64_t>(0, now - next_ns) : 0;
    surge::v1::SendHealth r = health.Report(now, {}, overdue);
    r.set_max_inflight(8);
    r.set_inflight(waiting ? 8 : 1);
    return r;
  }
};

struct AlarmRun {
  std::unique_ptr<SimRig> run;
  std::vector<std::string> lines;
  std::vector<std::unique_ptr<ModelledPacer>> pacers;
};

// `rate_rps` × `n` over 2 workers; worker 1 saturates at `saturate_at_ns`
// (INT64_MAX = never) with `cost_factor` × its interval between sends.
AlarmRun RunWithAlarm(double rate_rps, uint64_t n, int64_t saturate_at_ns, double cost_factor,
                      bool stop_on_alarm) {
  AlarmRun out;
  const ArrivalSchedule plan = ConstantPlan(rate_rps, n);
  DispatcherOptions options = TestOptions(2);
  options.stop_on_alarm = stop_on_alarm;
  options.log_writer = [&out](LogLevel, std::string_view line) { out.lines.emplace_back(line); };
  const int64_t step = static_cast<int64_t>(1e9 / rate_rps);
  for (int k = 0; k < 2; ++k) {
    auto p = std::make_unique<ModelledPacer>();
    p->first_ns = (k + 1) * step;  // request i is due at (i + 1) / rate
    p->interval_ns = 2 * step;
    p->last_ns = static_cast<int64_t>(n) * step;
    if (k == 1) {
      p->saturate_at_ns = saturate_at_ns;
      p->cost_ns = static_cast<int64_t>(cost_factor * static_cast<double>(2 * step));
    }
    out.pacers.push_back(std::move(p));
  }
  bool wired = false;
  out.run = RunSimulated(plan, options, [&](AutoAdvanceClock&, SimRig& run) {
    if (!wired) {
      for (int k = 0; k < 2; ++k) {
        ModelledPacer* p = out.pacers[k].get();
        run.scripted[k]->set_send_health([p](int64_t now) { return p->ReportAt(now); });
      }
      wired = true;
    }
    return true;
  });
  return out;
}

// The alarm fires at the first report after worker 1's lateness crossed
// 10 ms (within 0.5 s; 2 s is the bound it must keep), names worker 1 and the in-flight
// cap; --stop-on-alarm then ends the run within 3 s with one record per
// planned request; the warning is one line.
TEST(DispatcherSimTest, SaturatedWorkerTriggersTheAlarmAndStopOnAlarmEndsTheRun) {
  AlarmRun a = RunWithAlarm(1000, 20000, 3 * 1000 * kMs, 1.25, /*stop_on_alarm=*/true);
  SimRig& run = *a.run;
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.status();
  const DispatchOutcome& o = *run.outcome;
  const int64_t crossed = a.pacers[1]->crossed_at_ns;
  // 2 ms apart, leaving 2.5 ms apart from 3 s: 10 ms late after 20 requests.
  EXPECT_EQ(crossed, 3 * 1000 * kMs + 21 * 5 * kMs / 2 - 2 * kMs);
  EXPECT_TRUE(o.stopped_on_alarm);
  EXPECT_FALSE(o.schedule.kept);
  EXPECT_EQ(o.schedule.worker, 1);
  EXPECT_EQ(o.schedule.diagnosis.cause, LatenessCause::kInflightCap);
  EXPECT_GT(o.schedule.fell_behind_at_ns, crossed);
  EXPECT_LE(o.schedule.fell_behind_at_ns, crossed + 500 * kMs);
  EXPECT_GT(o.schedule.lateness_ns, 10 * kMs);
  EXPECT_NE(o.stop_message.find("worker 1 fell behind its schedule at t="), std::string::npos)
      << o.stop_message;
  // Ended within 3 s of the alarm, everything recorded exactly once.
  EXPECT_LE(ToNanos(run.ended) - (o.t0_ns + o.schedule.fell_behind_at_ns), 3 * 1000 * kMs);
  ASSERT_EQ(run.records.size(), 20000u);
  std::set<uint64_t> seen;
  uint64_t not_sent = 0;
  for (const auto& r : run.records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << r.index();
    not_sent += r.status() == surge::v1::NOT_SENT;
  }
  EXPECT_GT(not_sent, 10000u);  // stopped at about 3.3 s of 20 s
  // Stopped at once: one warning line.
  ASSERT_EQ(a.lines.size(), 1u);
  EXPECT_EQ(a.lines[0].rfind("lateness alarm: worker 1 is behind its schedule", 0), 0u)
      << a.lines[0];
  EXPECT_NE(a.lines[0].find("likely cause: in-flight cap"), std::string::npos) << a.lines[0];
  EXPECT_EQ(o.alarm_lines, 1u);
}

// Overloaded for a whole minute without --stop-on-alarm: hundreds of
// over-threshold reports become at most 10 lines (one per 10 s, each with
// the count of those it stands for), and every report is counted.
TEST(DispatcherSimTest, RepeatedAlarmsAreRateLimitedAndCounted) {
  AlarmRun a = RunWithAlarm(200, 12000, 3 * 1000 * kMs, 1.25, /*stop_on_alarm=*/false);
  ASSERT_TRUE(a.run->outcome.ok()) << a.run->outcome.status();
  const DispatchOutcome& o = *a.run->outcome;
  EXPECT_FALSE(o.stopped_on_alarm);
  EXPECT_FALSE(o.schedule.kept);
  // Worker 1 is behind from about 3.4 s to the end of the 60 s plan and its
  // drain: about 4 reports a second.
  EXPECT_GT(o.schedule.over_reports, 200u);
  EXPECT_LE(a.lines.size(), 10u);
  EXPECT_GE(a.lines.size(), 6u);
  EXPECT_EQ(o.alarm_lines, a.lines.size());
  uint64_t stood_for = 0;
  const std::regex more(R"(\(and (\d+) more like this in the last)");
  for (const std::string& line : a.lines) {
    std::smatch m;
    stood_for += 1 + (std::regex_search(line, m, more) ? std::stoull(m[1]) : 0);
  }
  EXPECT_EQ(stood_for, o.schedule.over_reports);
}

// Both workers on schedule: no alarm, no line, schedule kept.
TEST(DispatcherSimTest, HealthyRunNeverTriggersTheAlarm) {
  AlarmRun a = RunWithAlarm(1000, 5000, INT64_MAX, 0, /*stop_on_alarm=*/true);
  ASSERT_TRUE(a.run->outcome.ok()) << a.run->outcome.status();
  EXPECT_FALSE(a.run->outcome->stopped_on_alarm);
  EXPECT_TRUE(a.run->outcome->schedule.kept);
  EXPECT_EQ(a.run->outcome->schedule.over_reports, 0u);
  EXPECT_EQ(a.run->outcome->schedule.worst_p99_ns, 0);
  EXPECT_TRUE(a.lines.empty());
  for (const auto& r : a.run->records) EXPECT_EQ(r.status(), surge::v1::OK);
}

}  // namespace
}  // namespace surge::coordinator
