#include "coordinator/results/live_metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/failure_kind.h"
#include "common/time_units.h"

namespace surge::coordinator {
namespace {

// Status labels, in the order the exposition lists them.
constexpr std::pair<surge::v1::RequestStatus, const char*> kStatuses[] = {
    {surge::v1::OK, "ok"},
    {surge::v1::FAILED, "failed"},
    {surge::v1::LOST, "lost"},
    {surge::v1::NOT_SENT, "not_sent"},
    {surge::v1::INTERRUPTED, "interrupted"},
    {surge::v1::SKIPPED, "skipped"},
};

// A sample value: integers as integers, others in the shortest form that
// reads back to the same double (fixed notation where that is short enough).
std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  char buf[64];
  const double a = std::fabs(v);
  const auto fmt = a >= 1e-6 && a < 1e15 ? std::chars_format::fixed : std::chars_format::general;
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, fmt);
  if (ec != std::errc()) return absl::StrCat(v);
  return std::string(buf, end);
}

void Header(std::string& out, const char* name, const char* type, const char* help) {
  absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void Sample(std::string& out, const std::string& name, double value) {
  absl::StrAppend(&out, name, " ", Number(value), "\n");
}

void Histogram(std::string& out, const char* name, const char* help, const HistogramSnapshot& h) {
  Header(out, name, "histogram", help);
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    absl::StrAppend(&out, name, "_bucket{le=\"", Number(h.upper_bounds[i]), "\"} ", h.cumulative[i],
                    "\n");
  }
  absl::StrAppend(&out, name, "_bucket{le=\"+Inf\"} ", h.count, "\n");
  Sample(out, absl::StrCat(name, "_sum"), h.sum);
  absl::StrAppend(&out, name, "_count ", h.count, "\n");
}

HistogramSnapshot SnapshotOf(const BucketCounts& b) {
  return HistogramSnapshot{b.upper_bounds(), b.Cumulative(), b.count(), b.sum()};
}

}  // namespace

const std::vector<double>& LatenessBucketsS() {
  static const auto* b = new std::vector<double>{
      0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return *b;
}

const std::vector<double>& LatencyBucketsS() {
  static const auto* b = new std::vector<double>{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                 2.5,   5,    10,    30,   60,  120,  300};
  return *b;
}

std::string RenderPrometheusText(const LiveMetricsSnapshot& s) {
  std::string out;
  Header(out, "surge_requests_planned", "gauge", "Requests in the run's plan.");
  Sample(out, "surge_requests_planned", static_cast<double>(s.planned));
  Header(out, "surge_requests_sent_total", "counter",
         "Requests whose first byte went out (workers' heartbeat counts, or their records when "
         "further along).");
  Sample(out, "surge_requests_sent_total", static_cast<double>(s.sent));
  Header(out, "surge_requests_completed_total", "counter",
         "Requests answered completely (final status ok).");
  Sample(out, "surge_requests_completed_total", static_cast<double>(s.completed));
  Header(out, "surge_requests_failed_total", "counter",
         "Requests that failed (final status failed), by failure kind.");
  for (const auto& [kind, n] : s.failed_by_kind) {
    absl::StrAppend(&out, "surge_requests_failed_total{kind=\"", kind, "\"} ", n, "\n");
  }
  Header(out, "surge_requests_ended_total", "counter",
         "Final records by status; every planned request ends in exactly one.");
  for (const auto& [status, label] : kStatuses) {
    const auto it = s.ended_by_status.find(label);
    absl::StrAppend(&out, "surge_requests_ended_total{status=\"", label, "\"} ",
                    it == s.ended_by_status.end() ? 0 : it->second, "\n");
  }
  Header(out, "surge_requests_in_flight", "gauge",
         "Requests the workers' HTTP senders hold now (connecting, sending or awaiting the "
         "answer), from their last heartbeats.");
  Sample(out, "surge_requests_in_flight", static_cast<double>(s.in_flight));
  Header(out, "surge_achieved_rate_rps", "gauge",
         "Requests the workers' pacers released per second over their last window (about 1 s).");
  Sample(out, "surge_achieved_rate_rps", s.achieved_rate_rps);
  Header(out, "surge_target_rate_rps", "gauge",
         "The plan's rate at the next planned send, requests per second; 0 after the last.");
  Sample(out, "surge_target_rate_rps", s.target_rate_rps);
  Header(out, "surge_run_elapsed_seconds", "gauge", "Seconds since the run's t0.");
  Sample(out, "surge_run_elapsed_seconds", s.elapsed_s);
  Header(out, "surge_run_active", "gauge", "1 while the run goes, 0 once it has ended.");
  Sample(out, "surge_run_active", s.active ? 1 : 0);
  Header(out, "surge_worker_send_lateness_p99_seconds", "gauge",
         "Each worker's send lateness p99 over its last window (or its overdue time when larger).");
  for (const auto& [worker, p99] : s.worker_lateness_p99_s) {
    absl::StrAppend(&out, "surge_worker_send_lateness_p99_seconds{worker=\"", worker, "\"} ",
                    Number(p99), "\n");
  }
  Histogram(out, "surge_send_lateness_seconds",
            "Actual minus planned send time of each sent request, counted when its record "
            "arrives.",
            s.lateness_s);
  Histogram(out, "surge_ttft_seconds", "Time to first token of each ok request.", s.ttft_s);
  Histogram(out, "surge_e2el_seconds", "End-to-end latency of each ok request.", s.e2el_s);
  return out;
}

LiveMetrics::LiveMetrics()
    : lateness_(LatenessBucketsS()), ttft_(LatencyBucketsS()), e2el_(LatencyBucketsS()) {}

void LiveMetrics::SetPlan(const ArrivalSchedule* plan) {
  std::lock_guard<std::mutex> lock(mu_);
  plan_ = plan;
  s_.planned = plan == nullptr ? 0 : plan->size();
}

void LiveMetrics::Add(const surge::v1::RequestRecord& r) {
  if (r.warmup()) return;  // warm-ups are in no metric
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [status, label] : kStatuses) {
    if (r.status() == status) ++s_.ended_by_status[label];
  }
  if (r.status() == surge::v1::FAILED) ++s_.failed_by_kind[FailureKindLabel(FailureKindOf(r))];
  if (r.sent()) {
    ++records_sent_[r.worker()];
    lateness_.Add(NanosToSeconds(r.sent_ns() - r.planned_ns()));
  }
  if (r.status() != surge::v1::OK) return;
  ++s_.completed;
  ttft_.Add(NanosToSeconds(r.ttft_ns()));
  e2el_.Add(NanosToSeconds(r.e2el_ns()));
}

void LiveMetrics::OnProgress(const DispatchProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.elapsed_s = p.elapsed_s;
  s_.in_flight = p.inflight;
  s_.achieved_rate_rps = p.window_send_rate_rps;
  for (size_t k = 0; k < p.worker_sent_total.size(); ++k) {
    uint64_t& seen = heartbeat_sent_[static_cast<int32_t>(k)];
    seen = std::max(seen, p.worker_sent_total[k]);
  }
  for (const WorkerLateness& w : p.lateness) {
    if (!w.reported) continue;
    s_.worker_lateness_p99_s[w.worker] =
        NanosToSeconds(w.sends > 0 ? std::max(w.p99_ns, w.overdue_ns) : w.overdue_ns);
  }
}

void LiveMetrics::OnRunEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  s_.active = false;
  s_.in_flight = 0;
  s_.achieved_rate_rps = 0;
}

LiveMetricsSnapshot LiveMetrics::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  LiveMetricsSnapshot s = s_;
  // Per worker, the further along of its heartbeat count and its records:
  // each only grows, so the sum never decreases.
  s.sent = 0;
  for (const auto& [worker, n] : records_sent_) {
    const auto hb = heartbeat_sent_.find(worker);
    s.sent += std::max(n, hb == heartbeat_sent_.end() ? 0 : hb->second);
  }
  for (const auto& [worker, n] : heartbeat_sent_) {
    if (!records_sent_.contains(worker)) s.sent += n;
  }
  s.target_rate_rps = 0;
  if (plan_ != nullptr && s.active) {
    const auto& offsets = plan_->offset_s;
    const auto it = std::lower_bound(offsets.begin(), offsets.end(), s.elapsed_s);
    if (it != offsets.end())
      s.target_rate_rps = plan_->rate_rps[static_cast<size_t>(it - offsets.begin())];
  }
  s.lateness_s = SnapshotOf(lateness_);
  s.ttft_s = SnapshotOf(ttft_);
  s.e2el_s = SnapshotOf(e2el_);
  return s;
}

std::string LiveMetrics::Render() const { return RenderPrometheusText(Snapshot()); }

}  // namespace surge::coordinator
