// The lateness monitor and its cause heuristics ("the
// generator knows its own limit"), on exact simulated reports: the
// worker-side window (worker::SendHealth) fed with modelled sends, the
// coordinator-side monitor judging each heartbeat's report.
#include "coordinator/dispatch/lateness_monitor.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "worker/send_health.h"

namespace surge::coordinator {
namespace {

constexpr int64_t kMs = 1000 * 1000;
constexpr int64_t kS = 1000 * kMs;

surge::v1::SendHealth Report(uint64_t sends, int64_t p50_ms, int64_t p99_ms) {
  surge::v1::SendHealth r;
  r.set_window_ns(kS);
  r.set_sends(sends);
  r.set_lateness_p50_ns(p50_ms * kMs);
  r.set_lateness_p99_ns(p99_ms * kMs);
  r.set_lateness_max_ns(p99_ms * kMs);
  r.set_host_busy(-1);
  return r;
}

TEST(LatenessMonitorTest, ThresholdIsExclusiveAndOnlyTheFirstAlarmSetsTheVerdict) {
  LatenessMonitor m(2, {});  // 10 ms default
  surge::v1::SendHealth at = Report(1000, 1, 10);
  EXPECT_FALSE(m.Observe(0, at, 1 * kS).has_value()) << "p99 == threshold is not over";
  surge::v1::SendHealth over = at;
  over.set_lateness_p99_ns(10 * kMs + 1);
  std::optional<LatenessAlarm> a = m.Observe(1, over, 2 * kS);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->first);
  EXPECT_EQ(a->worker, 1);
  EXPECT_EQ(a->at_ns, 2 * kS);
  EXPECT_EQ(a->lateness_ns, 10 * kMs + 1);
  EXPECT_EQ(a->text.rfind("lateness alarm: worker 1 is behind its schedule at t=2.00 s", 0), 0u)
      << a->text;
  std::optional<LatenessAlarm> b = m.Observe(0, Report(1000, 5, 40), 3 * kS);
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->first);
  EXPECT_EQ(b->text.rfind("worker 0 is behind", 0), 0u) << b->text;
  const ScheduleVerdict& v = m.verdict();
  EXPECT_TRUE(v.judged);
  EXPECT_FALSE(v.kept);
  EXPECT_EQ(v.fell_behind_at_ns, 2 * kS);
  EXPECT_EQ(v.worker, 1);
  EXPECT_EQ(v.lateness_ns, 10 * kMs + 1);
  EXPECT_EQ(v.over_reports, 2u);
  EXPECT_EQ(v.worst_p99_ns, 40 * kMs);
  // The progress line's view: each worker's last report.
  EXPECT_EQ(m.latest()[0].p99_ns, 40 * kMs);
  EXPECT_EQ(m.latest()[1].p99_ns, 10 * kMs + 1);
}

TEST(LatenessMonitorTest, FewSendsAreJudgedByOverdueAndAZeroThresholdNeverAlarms) {
  LatenessMonitor m(1, {});
  // One send is not a percentile.
  EXPECT_FALSE(m.Observe(0, Report(1, 50, 50), kS).has_value());
  // A stuck pacer sends nothing: its earliest queued request is overdue.
  surge::v1::SendHealth stuck = Report(0, 0, 0);
  stuck.set_overdue_ns(11 * kMs);
  std::optional<LatenessAlarm> a = m.Observe(0, stuck, 2 * kS);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->lateness_ns, 11 * kMs);
  EXPECT_NE(a->text.find("earliest queued request is 11.0 ms overdue"), std::string::npos)
      << a->text;

  LatenessMonitorOptions off;
  off.threshold_ns = 0;
  LatenessMonitor quiet(1, off);
  EXPECT_FALSE(quiet.Observe(0, stuck, kS).has_value());
  EXPECT_FALSE(quiet.Observe(0, Report(1000, 100, 900), 2 * kS).has_value());
  EXPECT_FALSE(quiet.verdict().judged);
  EXPECT_TRUE(quiet.verdict().kept);
  EXPECT_EQ(quiet.verdict().worst_p99_ns, 900 * kMs);
}

// Each cause from the counters that identify it, in priority order.
TEST(LatenessMonitorTest, CausesFromTheCountersThatIdentifyThem) {
  const LatenessMonitorOptions o;
  surge::v1::SendHealth base = Report(1000, 20, 50);
  base.set_cpu_ns(kS / 2);  // 0.5 cores
  base.set_host_busy(0.4);

  surge::v1::SendHealth fd = base;
  fd.set_fd_errors(7);
  fd.set_fd_limit(1024);
  fd.set_fd_capacity(960);
  fd.set_inflight(12);
  LatenessDiagnosis d = DiagnoseLateness(fd, o);
  EXPECT_EQ(d.cause, LatenessCause::kFileDescriptors);
  EXPECT_EQ(d.text,
            "file descriptors (7 requests failed with \"Too many open files\", 0 waited for a "
            "descriptor; 12 in flight, open-file limit 1024, capacity 960 connections: raise "
            "ulimit -n or add workers)");
  // Waiting for a slot while the cap is the descriptor capacity: also fds.
  surge::v1::SendHealth at_capacity = base;
  at_capacity.set_fd_limit(1024);
  at_capacity.set_fd_capacity(960);
  at_capacity.set_max_inflight(960);
  at_capacity.set_inflight(960);
  at_capacity.set_gate_waits(300);
  EXPECT_EQ(DiagnoseLateness(at_capacity, o).cause, LatenessCause::kFileDescriptors);

  surge::v1::SendHealth refused = base;
  refused.set_refused(40);
  d = DiagnoseLateness(refused, o);
  EXPECT_EQ(d.cause, LatenessCause::kRefused);
  EXPECT_EQ(d.text, "target refusing connections (40 connections refused in 1.0 s)");

  surge::v1::SendHealth cap = base;
  cap.set_gate_waits(250);
  cap.set_max_inflight(8);
  cap.set_inflight(8);
  d = DiagnoseLateness(cap, o);
  EXPECT_EQ(d.cause, LatenessCause::kInflightCap);
  EXPECT_EQ(d.text,
            "in-flight cap (250 requests waited for one of the worker's 8 slots; 8 in flight: the "
            "server answers slower than the plan sends)");

  surge::v1::SendHealth cpu = base;
  cpu.set_cpu_ns(kS * 3 / 2);  // 1.5 cores: the threshold itself
  d = DiagnoseLateness(cpu, o);
  EXPECT_EQ(d.cause, LatenessCause::kCpu);
  EXPECT_EQ(d.text, "CPU saturated (worker process 1.50 cores, host 40% busy)");
  surge::v1::SendHealth host = base;
  host.set_host_busy(0.9);
  EXPECT_EQ(DiagnoseLateness(host, o).cause, LatenessCause::kCpu);
  host.set_host_busy(0.89);
  EXPECT_NE(DiagnoseLateness(host, o).cause, LatenessCause::kCpu);

  // The same saturation with 2 local workers on 2 CPUs (4 busy threads):
  // more workers than CPUs. 1 worker on 2 CPUs, or 2 on 4, stays CPU
  // saturated; remote workers (CPUs unknown) too.
  LatenessMonitorOptions local = o;
  local.local_workers = 2;
  local.usable_cpus = 2;
  host.set_host_busy(1.0);
  d = DiagnoseLateness(host, local);
  EXPECT_EQ(d.cause, LatenessCause::kWorkersOverCpus);
  EXPECT_EQ(d.text,
            "more workers than CPUs (2 local workers run 4 busy threads, a spinning pacer and an "
            "I/O thread each, on 2 usable CPUs; worker process 0.50 cores, host 100% busy): leave "
            "--workers out to let surge choose, or give it more CPUs");
  EXPECT_EQ(DiagnoseLateness(base, local).cause, LatenessCause::kUnknown);  // not saturated
  local.usable_cpus = 4;
  EXPECT_EQ(DiagnoseLateness(host, local).cause, LatenessCause::kCpu);
  local.local_workers = 1;
  local.usable_cpus = 1;
  EXPECT_EQ(DiagnoseLateness(host, local).cause, LatenessCause::kCpu);
  EXPECT_EQ(LatenessCauseKey(LatenessCause::kWorkersOverCpus), "workers_over_cpus");

  surge::v1::SendHealth connect = base;
  connect.set_connects(500);  // half of the 1,000 sends
  connect.set_connect_ns(500 * 3 * kMs);
  d = DiagnoseLateness(connect, o);
  EXPECT_EQ(d.cause, LatenessCause::kConnectionSetup);
  EXPECT_EQ(d.text, "connection set-up (500 new connections for 1000 sends, mean set-up 3.00 ms)");
  connect.set_connects(499);
  EXPECT_EQ(DiagnoseLateness(connect, o).cause, LatenessCause::kUnknown);

  // The pacer lost its CPU: its longest late wake is at least half the
  // p99 compared (50 ms), or of the overdue time when that is larger.
  surge::v1::SendHealth stalled = base;
  stalled.set_pacer_late_wakes(3);
  stalled.set_pacer_late_wake_max_ns(25 * kMs);
  stalled.set_pacer_late_wake_ns(31 * kMs);
  d = DiagnoseLateness(stalled, o);
  EXPECT_EQ(d.cause, LatenessCause::kPacerLostCpu);
  EXPECT_EQ(d.text,
            "the pacer lost its CPU while it waited (3 waits for a release ran late, the longest "
            "by 25.00 ms, 31.00 ms in all; worker process 0.50 cores, host 40% busy): the host or "
            "another thread ran on its core; try --pacer-realtime, --pacer-cpu N, or fewer other "
            "processes on the machine");
  EXPECT_EQ(LatenessCauseKey(LatenessCause::kPacerLostCpu), "pacer_lost_cpu");
  stalled.set_pacer_late_wakes(1);
  stalled.set_pacer_late_wake_ns(25 * kMs);
  EXPECT_EQ(DiagnoseLateness(stalled, o).text,
            "the pacer lost its CPU while it waited (1 wait for a release ran late, the longest "
            "by 25.00 ms, 25.00 ms in all; worker process 0.50 cores, host 40% busy): the host or "
            "another thread ran on its core; try --pacer-realtime, --pacer-cpu N, or fewer other "
            "processes on the machine");
  stalled.set_pacer_late_wake_max_ns(25 * kMs - 1);
  EXPECT_EQ(DiagnoseLateness(stalled, o).cause, LatenessCause::kUnknown);
  stalled.set_pacer_late_wake_max_ns(25 * kMs);
  stalled.set_overdue_ns(60 * kMs);  // compared: 60 ms
  EXPECT_EQ(DiagnoseLateness(stalled, o).cause, LatenessCause::kUnknown);
  // A late wake still going on (the pacer stopped inside its wait, the
  // report sent before it woke): one more, and the longest so far.
  surge::v1::SendHealth waiting = base;
  waiting.set_overdue_ns(295 * kMs);
  waiting.set_pacer_waiting_late_ns(295 * kMs);
  d = DiagnoseLateness(waiting, o);
  EXPECT_EQ(d.cause, LatenessCause::kPacerLostCpu);
  EXPECT_EQ(d.text,
            "the pacer lost its CPU while it waited (1 wait for a release ran late, the longest "
            "by 295.00 ms, 295.00 ms in all; worker process 0.50 cores, host 40% busy): the host "
            "or another thread ran on its core; try --pacer-realtime, --pacer-cpu N, or fewer "
            "other processes on the machine");
  waiting.set_pacer_waiting_late_ns(0);
  EXPECT_EQ(DiagnoseLateness(waiting, o).cause, LatenessCause::kUnknown);
  // A saturated CPU explains a lost CPU first.
  stalled.set_overdue_ns(0);
  stalled.set_cpu_ns(kS * 2);
  EXPECT_EQ(DiagnoseLateness(stalled, o).cause, LatenessCause::kCpu);

  d = DiagnoseLateness(base, o);
  EXPECT_EQ(d.cause, LatenessCause::kUnknown);
  EXPECT_EQ(d.text,
            "cause not identified (worker process 0.50 cores, host 40% busy, 0 new connections, no "
            "slot waits)");
  EXPECT_EQ(LatenessCauseKey(LatenessCause::kInflightCap), "inflight_cap");
  EXPECT_EQ(LatenessCauseKey(LatenessCause::kCpu), "cpu_saturated");
}

// A worker that keeps its schedule at 1,000 RPS until t = 5 s and then
// stalls: every request from then on leaves 20 ms late. Reports every
// 250 ms from the worker's own window: the first report after the step
// (5.25 s) alarms, 0.25 s after the lateness crossed the threshold, with
// p99 exactly 20 ms; the report at 5.0 s (nothing late yet) does not.
TEST(LatenessMonitorTest, StallIsCaughtAtTheFirstReportAfterIt) {
  worker::SendHealth health(0, {});
  LatenessMonitor monitor(1, {});
  std::optional<LatenessAlarm> first;
  int64_t next_send_deadline = kMs;  // request i due at (i + 1) ms
  for (int64_t report_at = 250 * kMs; report_at <= 8 * kS && !first; report_at += 250 * kMs) {
    // Every request whose hand-off is at or before this report.
    while (true) {
      const int64_t lateness = next_send_deadline >= 5 * kS ? 20 * kMs : 0;
      if (next_send_deadline + lateness > report_at) break;
      health.OnSend(next_send_deadline + lateness, lateness);
      next_send_deadline += kMs;
    }
    const surge::v1::SendHealth r = health.Report(report_at, {}, 0);
    first = monitor.Observe(0, r, report_at);
    if (report_at == 5 * kS) {
      EXPECT_FALSE(first.has_value());
      EXPECT_EQ(r.lateness_p99_ns(), 0);
    }
  }
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->at_ns, 5 * kS + 250 * kMs);
  EXPECT_EQ(first->lateness_ns, 20 * kMs);
  EXPECT_LE(first->at_ns - 5 * kS, 2 * kS);  // the bound
  EXPECT_EQ(monitor.verdict().fell_behind_at_ns, 5 * kS + 250 * kMs);
}

// A healthy worker: 60 s at 1,000 RPS with lateness jitter up to 2 ms
// (a loaded machine) never alarms.
TEST(LatenessMonitorTest, HealthyRunNeverAlarms) {
  worker::SendHealth health(0, {});
  LatenessMonitor monitor(1, {});
  int64_t deadline = kMs;
  uint64_t alarms = 0;
  for (int64_t report_at = 250 * kMs; report_at <= 60 * kS; report_at += 250 * kMs) {
    while (true) {
      const int64_t lateness = (deadline / kMs * 7919) % (2 * kMs);  // 0..2 ms
      if (deadline + lateness > report_at) break;
      health.OnSend(deadline + lateness, lateness);
      deadline += kMs;
    }
    alarms += monitor.Observe(0, health.Report(report_at, {}, 0), report_at).has_value();
  }
  EXPECT_EQ(alarms, 0u);
  EXPECT_TRUE(monitor.verdict().kept);
  EXPECT_GT(monitor.verdict().worst_p99_ns, kMs);
  EXPECT_LT(monitor.verdict().worst_p99_ns, 2 * kMs);
}

}  // namespace
}  // namespace surge::coordinator
