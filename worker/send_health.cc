#include "worker/send_health.h"

#include <time.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/stats.h"

namespace surge::worker {

int64_t ProcessCpuNs() {
  timespec ts{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void ReadHostCpu(HealthTotals& totals) {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return;
  std::istringstream fields(line.substr(4));
  // user nice system idle iowait irq softirq steal (guest time is already
  // in user and nice).
  uint64_t v[8] = {};
  for (uint64_t& x : v) {
    if (!(fields >> x)) break;
  }
  uint64_t total = 0;
  for (uint64_t x : v) total += x;
  totals.host_total = total;
  totals.host_busy = total - v[3] - v[4];
}

bool IsDescriptorError(std::string_view error) {
  return error.find("Too many open files") != std::string_view::npos;
}

bool IsRefusedError(std::string_view error) {
  return error.find("Connection refused") != std::string_view::npos;
}

SendHealth::SendHealth(int64_t start_ns, const HealthTotals& start, std::chrono::nanoseconds window,
                       size_t max_samples)
    : window_ns_(window.count()), max_samples_(std::max<size_t>(max_samples, 1)) {
  Counts first;
  first.initial = true;
  first.at_ns = start_ns;
  first.totals = start;
  past_.push_back(first);
}

void SendHealth::OnSend(int64_t now_ns, int64_t lateness_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  ++now_.sends;
  if (samples_.size() >= max_samples_) samples_.pop_front();
  samples_.emplace_back(now_ns, lateness_ns);
}

void SendHealth::OnLateWake(int64_t now_ns, int64_t overshoot_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  ++now_.late_wakes;
  now_.late_wake_ns += overshoot_ns;
  if (late_wakes_.size() >= max_samples_) late_wakes_.pop_front();
  late_wakes_.emplace_back(now_ns, overshoot_ns);
}

void SendHealth::OnGateWait() {
  std::lock_guard<std::mutex> lock(mu_);
  ++now_.gate_waits;
}

void SendHealth::OnRecordError(std::string_view error) {
  if (error.empty()) return;
  const bool fd = IsDescriptorError(error);
  const bool refused = IsRefusedError(error);
  if (!fd && !refused) return;
  std::lock_guard<std::mutex> lock(mu_);
  now_.fd_errors += fd;
  now_.refused += refused;
}

surge::v1::SendHealth SendHealth::Report(int64_t now_ns, const HealthTotals& totals,
                                         int64_t overdue_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t from_ns = now_ns - window_ns_;
  // The base: the latest kept point at least a window old (the start while
  // none is); older points go. So a report covers one window to one window
  // plus a heartbeat period.
  while (past_.size() > 1 && past_[1].at_ns <= from_ns) past_.pop_front();
  const Counts& base = past_.front();
  // A send or wake at the base's own instant was counted by it (the start
  // counted nothing yet).
  const auto before_base = [&base](const std::pair<int64_t, int64_t>& sample) {
    return sample.first < base.at_ns || (!base.initial && sample.first == base.at_ns);
  };
  while (!samples_.empty() && before_base(samples_.front())) samples_.pop_front();
  while (!late_wakes_.empty() && before_base(late_wakes_.front())) late_wakes_.pop_front();

  surge::v1::SendHealth out;
  out.set_window_ns(std::max<int64_t>(0, now_ns - base.at_ns));
  std::vector<double> lateness;
  lateness.reserve(samples_.size());
  for (const auto& [at, late] : samples_) lateness.push_back(static_cast<double>(late));
  out.set_sends(now_.sends - base.sends);
  if (!lateness.empty()) {
    std::sort(lateness.begin(), lateness.end());
    out.set_lateness_p50_ns(static_cast<int64_t>(PercentileOfSorted(lateness, 50)));
    out.set_lateness_p99_ns(static_cast<int64_t>(PercentileOfSorted(lateness, 99)));
    out.set_lateness_max_ns(static_cast<int64_t>(lateness.back()));
  }
  out.set_overdue_ns(std::max<int64_t>(0, overdue_ns));
  out.set_gate_waits(now_.gate_waits - base.gate_waits);
  out.set_fd_errors(now_.fd_errors - base.fd_errors);
  out.set_refused(now_.refused - base.refused);
  out.set_pacer_late_wakes(now_.late_wakes - base.late_wakes);
  out.set_pacer_late_wake_ns(now_.late_wake_ns - base.late_wake_ns);
  int64_t longest = 0;
  for (const auto& [at, overshoot] : late_wakes_) longest = std::max(longest, overshoot);
  out.set_pacer_late_wake_max_ns(longest);
  out.set_connects(totals.connects - base.totals.connects);
  out.set_connect_ns(totals.connect_ns - base.totals.connect_ns);
  out.set_cpu_ns(totals.cpu_ns - base.totals.cpu_ns);
  if (totals.host_total > base.totals.host_total && base.totals.host_total > 0) {
    out.set_host_busy(static_cast<double>(totals.host_busy - base.totals.host_busy) /
                      static_cast<double>(totals.host_total - base.totals.host_total));
  } else {
    out.set_host_busy(-1);
  }
  Counts point = now_;
  point.initial = false;
  point.at_ns = now_ns;
  point.totals = totals;
  past_.push_back(point);
  return out;
}

}  // namespace surge::worker
