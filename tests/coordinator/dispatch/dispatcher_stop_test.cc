// How a run stops, through real worker sessions on simulated time: the
// lateness alarm with --stop-on-alarm, the user's first and second stop,
// and the connect-failure rule (R-UI-5).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/skewed_clock.h"
#include "coordinator/dispatch/dispatcher.h"
#include "tests/testing/dispatch_fixtures.h"
#include "tests/testing/session_harness.h"

namespace surge::coordinator {
namespace {

using surge::testing::ConstantPlan;
using surge::testing::DispatchRig;
using surge::testing::LocalWorker;
using surge::testing::TestOptions;

// How far a send time may come out before its planned time after the
// worker's clock mapping brought it back to the coordinator's clock.
constexpr int64_t kClockToleranceNs = 200'000;

// The lateness alarm through real worker sessions: a worker whose open-file
// limit is 66 holds at most 2 connections (66 − 64 kept), so at 100 RPS with answers after 400 ms
// it falls behind at once. Its heartbeats report the lateness before any answer came back; the
// coordinator names the worker and the descriptor limit, and
// --stop-on-alarm ends the run with one record per planned request.
TEST(DispatcherStopTest, DescriptorCapacityCapsTheWorkerAndStopOnAlarmEndsTheRun) {
  DispatcherOptions options = TestOptions(1);
  options.stop_on_alarm = true;
  std::vector<std::string> lines;
  options.log_writer = [&lines](LogLevel, std::string_view line) { lines.emplace_back(line); };
  DispatchRig rig(ConstantPlan(100, 300), options);  // 3 s
  rig.AddWorker("a", 0, {.fd_limit = 66, .latency = std::chrono::milliseconds(400)});
  const auto& outcome = rig.Run();
  const auto took = rig.ended - rig.started;
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->stopped_on_alarm);
  const ScheduleVerdict& v = outcome->schedule;
  EXPECT_FALSE(v.kept);
  EXPECT_EQ(v.worker, 0);
  EXPECT_EQ(v.diagnosis.cause, LatenessCause::kFileDescriptors) << v.diagnosis.text;
  EXPECT_NE(v.diagnosis.text.find("open-file limit 66, capacity 2 connections"), std::string::npos)
      << v.diagnosis.text;
  // The first answer comes 400 ms after the first send; the alarm needs no
  // answer, only heartbeats (every 250 ms): well before the plan's 3 s.
  EXPECT_EQ(v.fell_behind_at_ns, 150'000'000);
  ASSERT_GE(lines.size(), 1u);
  EXPECT_NE(lines[0].find("lateness alarm: worker 0 is behind its schedule"), std::string::npos)
      << lines[0];
  ASSERT_EQ(records.size(), 300u);
  std::set<uint64_t> seen;
  uint64_t sent = 0;
  for (const auto& r : records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << r.index();
    sent += r.sent();
  }
  // Two at a time, 400 ms each: only a handful went out before the stop.
  EXPECT_LT(sent, 40u);
  EXPECT_GE(sent, 2u);
  // Stopped early, not after the 3 s plan plus 300 × 400 ms / 2 of answers.
  EXPECT_EQ(took, std::chrono::milliseconds(325));
}

// Ctrl-C, then Ctrl-C again: requests on the wire are cut
// off and recorded as interrupted with their send time (not lost), the
// never-released ones are not_sent, and the run ends within cut_wait of the
// second stop.
TEST(DispatcherStopTest, SecondStopCutsOffInflightRequestsAsInterrupted) {
  DispatcherOptions options = TestOptions(2);
  options.drain = std::chrono::milliseconds(10000);
  options.cut_wait = std::chrono::milliseconds(1000);
  DispatchRig rig(ConstantPlan(100, 300), options);  // 3 s
  // Answers never come: every sent request stays in flight.
  LocalWorker& w0 = rig.AddWorker("a", 0, {.complete_at_once = false});
  LocalWorker& w1 = rig.AddWorker("b", 1, {.complete_at_once = false});
  Clock::TimePoint second_stop;
  rig.StartThread([&] {
    rig.clock.SleepUntil(rig.clock.Now() + std::chrono::milliseconds(900));
    rig.dispatcher.RequestStop();
    rig.clock.SleepUntil(rig.clock.Now() + std::chrono::milliseconds(500));
    second_stop = rig.clock.Now();
    rig.dispatcher.RequestStop();
  });
  const auto& outcome = rig.Run();
  const auto ended = rig.ended;
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_LT(ended - second_stop, std::chrono::milliseconds(1000));  // not the 10 s drain
  EXPECT_TRUE(outcome->interrupted);
  // The first stop came ~0.8 s after t0 (0.9 s after the start minus the lead).
  EXPECT_GT(outcome->interrupted_at_ns, 500'000'000);
  EXPECT_LT(outcome->interrupted_at_ns, 1'400'000'000);
  EXPECT_EQ(outcome->send_unknown, 0u);
  ASSERT_EQ(records.size(), 300u);
  const size_t sent_by_workers = w0.sender->sent().size() + w1.sender->sent().size();
  std::map<int, size_t> by_status;
  for (const auto& r : records) {
    ++by_status[r.status()];
    if (r.status() == surge::v1::INTERRUPTED) {
      EXPECT_TRUE(r.sent()) << r.index();
      EXPECT_GE(r.sent_ns(), r.planned_ns() - kClockToleranceNs) << r.index();
      EXPECT_LE(r.sent_ns(), outcome->interrupted_at_ns + 50'000'000) << r.index();
      EXPECT_GT(r.interrupted_ns(), outcome->interrupted_at_ns) << r.index();
      EXPECT_EQ(r.error(), "interrupted: cut_off_at_stop");
    } else {
      EXPECT_EQ(r.status(), surge::v1::NOT_SENT) << r.index();
      EXPECT_FALSE(r.sent()) << r.index();
      EXPECT_THAT(r.error(), ::testing::StartsWith("not_sent: interrupted")) << r.index();
    }
  }
  EXPECT_GT(sent_by_workers, 50u);  // about 80 were due before the stop
  EXPECT_EQ(by_status[surge::v1::INTERRUPTED], sent_by_workers);
  EXPECT_EQ(by_status[surge::v1::INTERRUPTED] + by_status[surge::v1::NOT_SENT], 300u);
}

// When the first K records are all connection failures the
// target is unreachable: the run stops at once, the rest is not_sent.
TEST(DispatcherStopTest, ConnectFailuresAtTheStartStopTheRun) {
  DispatcherOptions options = TestOptions(2);
  options.abort_after_connect_failures = 10;
  DispatchRig rig(ConstantPlan(100, 500), options);  // 5 s
  auto refused = [](surge::v1::RequestRecord& r) {
    r.set_sent(false);
    r.set_sent_ns(0);
    r.set_status(surge::v1::FAILED);
    r.set_http_status(0);
    r.set_error("connect: Connection refused");
  };
  rig.AddWorker("a", 0, {.result = refused});
  rig.AddWorker("b", 1, {.result = refused});
  const auto& outcome = rig.Run();
  const auto start = rig.started;
  const auto ended = rig.ended;
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->target_unreachable);
  EXPECT_FALSE(outcome->interrupted);
  EXPECT_THAT(outcome->stop_message,
              ::testing::HasSubstr("the first 10 requests all failed without any response"));
  EXPECT_THAT(outcome->stop_message, ::testing::HasSubstr("connect: Connection refused"));
  EXPECT_LT(ended - start, std::chrono::milliseconds(3000));  // not the 5 s plan
  ASSERT_EQ(records.size(), 500u);
  size_t failed = 0, not_sent = 0;
  for (const auto& r : records) {
    if (r.status() == surge::v1::FAILED) ++failed;
    if (r.status() == surge::v1::NOT_SENT) {
      ++not_sent;
      EXPECT_THAT(r.error(), ::testing::StartsWith("not_sent: target_unreachable"));
    }
  }
  EXPECT_GE(failed, 10u);
  EXPECT_LT(failed, 100u);
  EXPECT_EQ(failed + not_sent, 500u);
}

// The rule looks at the start only: once the target has answered, later
// connection failures are ordinary failed records; 0 turns the rule off.
TEST(DispatcherStopTest, ConnectFailuresAfterAnAnswerOrWithRuleOffDoNotStopTheRun) {
  for (const uint32_t k : {10u, 0u}) {
    DispatcherOptions options = TestOptions(1);
    options.abort_after_connect_failures = k;
    DispatchRig rig(ConstantPlan(200, 60), options);
    // k = 10: request 0 is answered, all later ones are refused;
    // k = 0: all are refused.
    auto result = [k](surge::v1::RequestRecord& r) {
      if (k != 0 && r.index() == 0) return;
      r.set_sent(false);
      r.set_sent_ns(0);
      r.set_status(surge::v1::FAILED);
      r.set_http_status(0);
      r.set_error("connect: Connection refused");
    };
    rig.AddWorker("a", 0, {.result = result});
    const auto& outcome = rig.Run();
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_FALSE(outcome->target_unreachable) << "k=" << k;
    ASSERT_EQ(rig.records.size(), 60u);
    for (const auto& r : rig.records) EXPECT_NE(r.status(), surge::v1::NOT_SENT) << "k=" << k;
  }
}

// --stop-on-saturation on simulated time: 60 RPS offered to a server of
// 30 RPS (one FIFO queue, FakeRequestSender::set_capacity). The backlog
// grows by 30 a second and each request waits 0.5 s longer per second, so
// the rule fires at its first check with a full 5 s window; nothing more is
// sent, what is in flight is cut off, every planned request has one record.
TEST(DispatcherStopTest, SaturationRuleEndsAnOverloadedRunAndCutsOffItsBacklog) {
  DispatcherOptions options = TestOptions(1);
  options.saturation = SaturationOptions{.window_s = 5, .plan_rate_rps = 60};
  options.alarm_record_wait = std::chrono::milliseconds(1000);
  DispatchRig rig(ConstantPlan(60, 1200), options);  // 20 s
  rig.AddWorker("a", 0, {.latency = std::chrono::milliseconds(20), .capacity_rps = 30});
  const auto& outcome = rig.Run();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->saturated);
  EXPECT_FALSE(outcome->stopped_on_alarm);
  // The first check with 5 s of samples, on the 1 s checks of the turns.
  EXPECT_GE(outcome->saturated_at_ns, 5'000'000'000);
  EXPECT_LE(outcome->saturated_at_ns, 7'000'000'000);
  EXPECT_THAT(outcome->stop_message, ::testing::HasSubstr("the server saturated at "));
  // The in-flight count grows at 60 − 30 = 30 per second.
  EXPECT_THAT(outcome->stop_message,
              ::testing::ContainsRegex("grew by (29|30|31)\\.[0-9] per second"));
  ASSERT_EQ(rig.records.size(), 1200u);
  std::map<int, size_t> by_status;
  std::set<uint64_t> seen;
  for (const auto& r : rig.records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << r.index();
    ++by_status[r.status()];
    if (r.status() == surge::v1::NOT_SENT) {
      EXPECT_EQ(r.error(), "not_sent: saturated") << r.index();
      EXPECT_GE(r.planned_ns(), outcome->saturated_at_ns - 100'000'000) << r.index();
    }
    if (r.status() == surge::v1::INTERRUPTED) {
      EXPECT_TRUE(r.sent()) << r.index();
    }
  }
  // About 30 answered per second until the stop, about 30 × 6 more in
  // flight then, the rest (about 14 s of plan) never sent.
  EXPECT_GT(by_status[surge::v1::OK], 100u);
  EXPECT_LT(by_status[surge::v1::OK], 250u);
  EXPECT_GT(by_status[surge::v1::INTERRUPTED], 100u);
  EXPECT_GT(by_status[surge::v1::NOT_SENT], 700u);
  // Ended at the stop plus the record wait, not after the 20 s plan.
  EXPECT_LT(rig.ended - rig.started, std::chrono::seconds(10));
}

// The same server at 20 RPS offered: its queue never grows (each request
// is answered 20 ms after its send), and the run completes.
TEST(DispatcherStopTest, SaturationRuleLeavesARunBelowCapacityAlone) {
  DispatcherOptions options = TestOptions(1);
  options.saturation = SaturationOptions{.window_s = 5, .plan_rate_rps = 20};
  DispatchRig rig(ConstantPlan(20, 400), options);  // 20 s
  rig.AddWorker("a", 0, {.latency = std::chrono::milliseconds(20), .capacity_rps = 30});
  const auto& outcome = rig.Run();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_FALSE(outcome->saturated);
  ASSERT_EQ(rig.records.size(), 400u);
  for (const auto& r : rig.records) EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
}

}  // namespace
}  // namespace surge::coordinator
