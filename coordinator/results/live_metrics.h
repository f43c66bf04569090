// Live metrics of a running job (docs/METRICS.md): a record
// sink plus the dispatcher's progress snapshots, rendered in the Prometheus
// text exposition format 0.0.4 for `--metrics-port`. Where each number comes
// from:
//   - records (the final record of each request, when it ends): completed,
//     failed by kind, ended by status, and the lateness / TTFT / E2EL
//     histograms — so their final values equal the summary's;
//   - the workers' heartbeats (every 250 ms, via DispatchProgress): requests
//     in flight now, the send rate over each worker's last window (≈ 1 s),
//     each worker's window lateness p99, and each worker's count of first
//     bytes written (Heartbeat.sent_total), which makes `sent` live: per
//     worker max(heartbeat count, its records with sent = true);
//   - the plan: the target rate λ_i of the next planned request.
// Thread-safe: the dispatcher thread feeds it, the HTTP thread renders.
// Reads no clock (elapsed time comes with each snapshot).
#ifndef SURGE_COORDINATOR_RESULTS_LIVE_METRICS_H_
#define SURGE_COORDINATOR_RESULTS_LIVE_METRICS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/stats.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/results/record_sink.h"
#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// Bucket upper bounds, seconds: send lateness (actual − planned send) and
// the latencies TTFT and E2EL (R-MET-1).
const std::vector<double>& LatenessBucketsS();
const std::vector<double>& LatencyBucketsS();

// One histogram as exposed: bounds, cumulative counts per bound, count, sum.
struct HistogramSnapshot {
  std::vector<double> upper_bounds;
  std::vector<uint64_t> cumulative;
  uint64_t count = 0;
  double sum = 0;
};

// Everything one exposition shows.
struct LiveMetricsSnapshot {
  uint64_t planned = 0;
  // Requests whose first byte went out (see the file comment).
  uint64_t sent = 0;
  // Final records with status OK.
  uint64_t completed = 0;
  // Final records with status FAILED, by failure kind label ("http_5xx").
  std::map<std::string, uint64_t> failed_by_kind;
  // Final records by status label ("ok", "failed", "lost", "not_sent",
  // "interrupted", "skipped"); every status is present.
  std::map<std::string, uint64_t> ended_by_status;
  // In flight on the live workers, from their last heartbeats.
  uint64_t in_flight = 0;
  // Σ over workers of (sends in its last window / window length), req/s.
  double achieved_rate_rps = 0;
  // The plan's λ_i of the next request planned at or after now, req/s; 0
  // once every planned send time has passed (+Inf in instant mode).
  double target_rate_rps = 0;
  // Seconds since t0 (negative before the start).
  double elapsed_s = 0;
  // 1 while the run goes, 0 once it has ended.
  bool active = true;
  // Each reporting worker's send lateness p99 over its last window,
  // seconds (the larger of p99 and its overdue time), by worker index.
  std::map<int32_t, double> worker_lateness_p99_s;
  HistogramSnapshot lateness_s, ttft_s, e2el_s;
};

// The Prometheus text format 0.0.4 of `s`: for each metric "# HELP",
// "# TYPE" and its samples; counters end in _total, histograms have
// _bucket{le="..."} (cumulative, with "+Inf"), _sum and _count; seconds and
// requests/s are the units. Numbers: integers as integers, others in their
// shortest round-trip form, +Inf / -Inf / NaN as Prometheus spells them.
// Pure.
std::string RenderPrometheusText(const LiveMetricsSnapshot& s);

class LiveMetrics : public RecordSink {
 public:
  LiveMetrics();
  // The plan the run follows: planned count and the target rate. Must
  // outlive this object's use; may be set after the metrics are served.
  void SetPlan(const ArrivalSchedule* plan);
  // A final record (dispatcher thread).
  void Add(const surge::v1::RequestRecord& record) override;
  // The dispatcher's latest progress snapshot (dispatcher thread).
  void OnProgress(const DispatchProgress& progress);
  // The run has ended: nothing is in flight or being sent any more.
  void OnRunEnded();
  LiveMetricsSnapshot Snapshot() const;
  // RenderPrometheusText(Snapshot()).
  std::string Render() const;

 private:
  mutable std::mutex mu_;
  const ArrivalSchedule* plan_ = nullptr;
  LiveMetricsSnapshot s_;  // counters; sent and target rate are derived
  // By worker index: records with sent = true, and the heartbeat's count.
  std::map<int32_t, uint64_t> records_sent_, heartbeat_sent_;
  BucketCounts lateness_, ttft_, e2el_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_LIVE_METRICS_H_
