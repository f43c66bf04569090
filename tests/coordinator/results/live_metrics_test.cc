// Live metrics: the sink fed a known record sequence and a
// progress snapshot renders exactly this Prometheus text (format 0.0.4).
#include "coordinator/results/live_metrics.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "common/failure_kind.h"

namespace surge::coordinator {
namespace {

surge::v1::RequestRecord Sent(uint64_t index, int32_t worker, int64_t planned_ns, int64_t sent_ns) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_worker(worker);
  r.set_planned_ns(planned_ns);
  r.set_sent(true);
  r.set_sent_ns(sent_ns);
  return r;
}

ArrivalSchedule FourRequests() {
  ArrivalSchedule plan;
  plan.offset_s = {0, 0.5, 1.0, 1.5};
  plan.rate_rps = {2, 2, 4, 4};
  plan.interval_s = {0.5, 0.5, 0.5, 0.5};
  plan.anomaly.assign(4, Anomaly::kNormal);
  return plan;
}

constexpr char kExpected[] = R"(# HELP surge_requests_planned Requests in the run's plan.
# TYPE surge_requests_planned gauge
surge_requests_planned 4
# HELP surge_requests_sent_total Requests whose first byte went out (workers' heartbeat counts, or their records when further along).
# TYPE surge_requests_sent_total counter
surge_requests_sent_total 5
# HELP surge_requests_completed_total Requests answered completely (final status ok).
# TYPE surge_requests_completed_total counter
surge_requests_completed_total 1
# HELP surge_requests_failed_total Requests that failed (final status failed), by failure kind.
# TYPE surge_requests_failed_total counter
surge_requests_failed_total{kind="http_5xx"} 1
surge_requests_failed_total{kind="timeout"} 1
# HELP surge_requests_ended_total Final records by status; every planned request ends in exactly one.
# TYPE surge_requests_ended_total counter
surge_requests_ended_total{status="ok"} 1
surge_requests_ended_total{status="failed"} 2
surge_requests_ended_total{status="lost"} 0
surge_requests_ended_total{status="not_sent"} 1
surge_requests_ended_total{status="interrupted"} 0
surge_requests_ended_total{status="skipped"} 0
# HELP surge_requests_in_flight Requests the workers' HTTP senders hold now (connecting, sending or awaiting the answer), from their last heartbeats.
# TYPE surge_requests_in_flight gauge
surge_requests_in_flight 2
# HELP surge_achieved_rate_rps Requests the workers' pacers released per second over their last window (about 1 s).
# TYPE surge_achieved_rate_rps gauge
surge_achieved_rate_rps 3.5
# HELP surge_target_rate_rps The plan's rate at the next planned send, requests per second; 0 after the last.
# TYPE surge_target_rate_rps gauge
surge_target_rate_rps 4
# HELP surge_run_elapsed_seconds Seconds since the run's t0.
# TYPE surge_run_elapsed_seconds gauge
surge_run_elapsed_seconds 0.75
# HELP surge_run_active 1 while the run goes, 0 once it has ended.
# TYPE surge_run_active gauge
surge_run_active 1
# HELP surge_worker_send_lateness_p99_seconds Each worker's send lateness p99 over its last window (or its overdue time when larger).
# TYPE surge_worker_send_lateness_p99_seconds gauge
surge_worker_send_lateness_p99_seconds{worker="0"} 0.002
surge_worker_send_lateness_p99_seconds{worker="1"} 0.04
# HELP surge_send_lateness_seconds Actual minus planned send time of each sent request, counted when its record arrives.
# TYPE surge_send_lateness_seconds histogram
surge_send_lateness_seconds_bucket{le="0.0001"} 0
surge_send_lateness_seconds_bucket{le="0.0005"} 1
surge_send_lateness_seconds_bucket{le="0.001"} 2
surge_send_lateness_seconds_bucket{le="0.0025"} 2
surge_send_lateness_seconds_bucket{le="0.005"} 2
surge_send_lateness_seconds_bucket{le="0.01"} 2
surge_send_lateness_seconds_bucket{le="0.025"} 2
surge_send_lateness_seconds_bucket{le="0.05"} 3
surge_send_lateness_seconds_bucket{le="0.1"} 3
surge_send_lateness_seconds_bucket{le="0.25"} 3
surge_send_lateness_seconds_bucket{le="0.5"} 3
surge_send_lateness_seconds_bucket{le="1"} 3
surge_send_lateness_seconds_bucket{le="2.5"} 3
surge_send_lateness_seconds_bucket{le="5"} 3
surge_send_lateness_seconds_bucket{le="10"} 3
surge_send_lateness_seconds_bucket{le="+Inf"} 3
surge_send_lateness_seconds_sum 0.0312
surge_send_lateness_seconds_count 3
# HELP surge_ttft_seconds Time to first token of each ok request.
# TYPE surge_ttft_seconds histogram
surge_ttft_seconds_bucket{le="0.005"} 0
surge_ttft_seconds_bucket{le="0.01"} 0
surge_ttft_seconds_bucket{le="0.025"} 0
surge_ttft_seconds_bucket{le="0.05"} 0
surge_ttft_seconds_bucket{le="0.1"} 0
surge_ttft_seconds_bucket{le="0.25"} 1
surge_ttft_seconds_bucket{le="0.5"} 1
surge_ttft_seconds_bucket{le="1"} 1
surge_ttft_seconds_bucket{le="2.5"} 1
surge_ttft_seconds_bucket{le="5"} 1
surge_ttft_seconds_bucket{le="10"} 1
surge_ttft_seconds_bucket{le="30"} 1
surge_ttft_seconds_bucket{le="60"} 1
surge_ttft_seconds_bucket{le="120"} 1
surge_ttft_seconds_bucket{le="300"} 1
surge_ttft_seconds_bucket{le="+Inf"} 1
surge_ttft_seconds_sum 0.2
surge_ttft_seconds_count 1
# HELP surge_e2el_seconds End-to-end latency of each ok request.
# TYPE surge_e2el_seconds histogram
surge_e2el_seconds_bucket{le="0.005"} 0
surge_e2el_seconds_bucket{le="0.01"} 0
surge_e2el_seconds_bucket{le="0.025"} 0
surge_e2el_seconds_bucket{le="0.05"} 0
surge_e2el_seconds_bucket{le="0.1"} 0
surge_e2el_seconds_bucket{le="0.25"} 0
surge_e2el_seconds_bucket{le="0.5"} 0
surge_e2el_seconds_bucket{le="1"} 0
surge_e2el_seconds_bucket{le="2.5"} 1
surge_e2el_seconds_bucket{le="5"} 1
surge_e2el_seconds_bucket{le="10"} 1
surge_e2el_seconds_bucket{le="30"} 1
surge_e2el_seconds_bucket{le="60"} 1
surge_e2el_seconds_bucket{le="120"} 1
surge_e2el_seconds_bucket{le="300"} 1
surge_e2el_seconds_bucket{le="+Inf"} 1
surge_e2el_seconds_sum 1.5
surge_e2el_seconds_count 1
)";

// The known sequence: an ok request (lateness 1 ms, TTFT 0.2 s, E2EL 1.5 s)
// and an HTTP 503 on worker 0 and 1, an older-style record with only the
// text "timeout" (kind from the prefix), one never sent; then a progress
// snapshot at 0.75 s in which worker 1's heartbeat counts 3 first bytes
// (more than its 1 record: two are still in flight).
TEST(LiveMetricsTest, RendersTheExactExpositionOfAKnownSequence) {
  const ArrivalSchedule plan = FourRequests();
  LiveMetrics m;
  m.SetPlan(&plan);
  surge::v1::RequestRecord ok = Sent(0, 0, 0, 1'000'000);
  ok.set_status(surge::v1::OK);
  ok.set_ttft_ns(200'000'000);
  ok.set_e2el_ns(1'500'000'000);
  m.Add(ok);
  surge::v1::RequestRecord http = Sent(1, 1, 500'000'000, 500'200'000);
  SetFailure(http, surge::v1::FAILED, surge::v1::FAILURE_KIND_HTTP_5XX, "http_503: overloaded");
  http.set_http_status(503);
  m.Add(http);
  surge::v1::RequestRecord old = Sent(2, 0, 1'000'000'000, 1'030'000'000);
  old.set_status(surge::v1::FAILED);
  old.set_error("timeout");
  m.Add(old);
  surge::v1::RequestRecord not_sent;
  not_sent.set_index(3);
  not_sent.set_worker(-1);
  not_sent.set_planned_ns(1'500'000'000);
  SetFailure(not_sent, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
             "not_sent: interrupted");
  m.Add(not_sent);
  DispatchProgress p;
  p.elapsed_s = 0.75;
  p.inflight = 2;
  p.window_send_rate_rps = 3.5;
  p.worker_sent_total = {2, 3};
  p.lateness = {WorkerLateness{0, true, 5, 1'000'000, 2'000'000, 0},
                WorkerLateness{1, true, 0, 0, 0, 40'000'000}};
  m.OnProgress(p);
  EXPECT_EQ(m.Render(), kExpected);
}

TEST(LiveMetricsTest, SentNeverDecreasesAndTheEndClearsTheLiveGauges) {
  const ArrivalSchedule plan = FourRequests();
  LiveMetrics m;
  m.SetPlan(&plan);
  DispatchProgress p;
  p.elapsed_s = -0.2;  // before t0: the first request's rate
  p.worker_sent_total = {0};
  m.OnProgress(p);
  EXPECT_EQ(m.Snapshot().target_rate_rps, 2);
  p.elapsed_s = 0.1;
  p.worker_sent_total = {1};
  p.inflight = 1;
  m.OnProgress(p);
  EXPECT_EQ(m.Snapshot().sent, 1u);
  // The record arrives; a stale snapshot (older heartbeat) must not lower it.
  surge::v1::RequestRecord ok = Sent(0, 0, 0, 0);
  ok.set_status(surge::v1::OK);
  m.Add(ok);
  p.worker_sent_total = {0};
  m.OnProgress(p);
  EXPECT_EQ(m.Snapshot().sent, 1u);
  p.elapsed_s = 1.6;  // past the last planned send
  m.OnProgress(p);
  EXPECT_EQ(m.Snapshot().target_rate_rps, 0);
  m.OnRunEnded();
  const LiveMetricsSnapshot end = m.Snapshot();
  EXPECT_FALSE(end.active);
  EXPECT_EQ(end.in_flight, 0u);
  EXPECT_EQ(end.achieved_rate_rps, 0);
  EXPECT_EQ(end.sent, 1u);
  EXPECT_EQ(end.completed, 1u);
}

TEST(LiveMetricsTest, NumbersInPrometheusSpelling) {
  LiveMetricsSnapshot s;
  s.target_rate_rps = std::numeric_limits<double>::infinity();  // instant mode
  s.achieved_rate_rps = 1.0 / 3;
  const std::string text = RenderPrometheusText(s);
  EXPECT_NE(text.find("\nsurge_target_rate_rps +Inf\n"), std::string::npos);
  EXPECT_NE(text.find("\nsurge_achieved_rate_rps 0.3333333333333333\n"), std::string::npos);
  // No histogram observations: only the +Inf bucket, sum 0, count 0.
  EXPECT_NE(text.find("\nsurge_ttft_seconds_bucket{le=\"+Inf\"} 0\nsurge_ttft_seconds_sum 0\n"
                      "surge_ttft_seconds_count 0\n"),
            std::string::npos);
}

}  // namespace
}  // namespace surge::coordinator
