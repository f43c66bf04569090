#include "coordinator/dispatch/lateness_monitor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// A worker's busy threads: its pacer (which spins before each deadline) and
// its I/O thread (common/cpu_budget.h counts the same).
constexpr int kBusyThreadsPerWorker = 2;

}  // namespace

std::string_view LatenessCauseKey(LatenessCause cause) {
  switch (cause) {
    case LatenessCause::kNone:
      return "none";
    case LatenessCause::kFileDescriptors:
      return "file_descriptors";
    case LatenessCause::kRefused:
      return "target_refusing";
    case LatenessCause::kInflightCap:
      return "inflight_cap";
    case LatenessCause::kCpu:
      return "cpu_saturated";
    case LatenessCause::kWorkersOverCpus:
      return "workers_over_cpus";
    case LatenessCause::kConnectionSetup:
      return "connection_setup";
    case LatenessCause::kPacerLostCpu:
      return "pacer_lost_cpu";
    case LatenessCause::kUnknown:
      return "unknown";
  }
  return "unknown";
}

LatenessDiagnosis DiagnoseLateness(const surge::v1::SendHealth& r,
                                   const LatenessMonitorOptions& o) {
  const double window_s = static_cast<double>(std::max<int64_t>(r.window_ns(), 1)) / 1e9;
  // Requests wait for a slot: some waited in the window, or every slot is
  // taken now (the pacer is waiting at the gate).
  const bool cap_full = r.max_inflight() > 0 && r.inflight() >= r.max_inflight();
  const bool slot_waits = r.gate_waits() > 0 || cap_full;
  const bool at_fd_capacity =
      r.fd_capacity() > 0 && r.max_inflight() >= r.fd_capacity() && r.inflight() >= r.fd_capacity();
  if (r.fd_errors() > 0 || (at_fd_capacity && slot_waits)) {
    return {LatenessCause::kFileDescriptors,
            absl::StrFormat("file descriptors (%d requests failed with \"Too many open files\", "
                            "%d waited for a descriptor; %d in flight, open-file limit %d, "
                            "capacity %d connections: raise ulimit -n or add workers)",
                            r.fd_errors(), at_fd_capacity ? r.gate_waits() : 0, r.inflight(),
                            r.fd_limit(), r.fd_capacity())};
  }
  if (r.refused() > 0) {
    return {LatenessCause::kRefused,
            absl::StrFormat("target refusing connections (%d connections refused in %.1f s)",
                            r.refused(), window_s)};
  }
  if (slot_waits) {
    return {LatenessCause::kInflightCap,
            absl::StrFormat("in-flight cap (%d requests waited for one of the worker's %d slots; "
                            "%d in flight: the server answers slower than the plan sends)",
                            r.gate_waits(), r.max_inflight(), r.inflight())};
  }
  const double cores =
      static_cast<double>(r.cpu_ns()) / static_cast<double>(std::max<int64_t>(r.window_ns(), 1));
  const bool host_known = r.host_busy() >= 0;
  if (cores >= o.cpu_cores || (host_known && r.host_busy() >= o.host_busy)) {
    if (o.usable_cpus > 0 && o.local_workers > 1 &&
        o.local_workers * kBusyThreadsPerWorker > o.usable_cpus) {
      return {LatenessCause::kWorkersOverCpus,
              absl::StrFormat(
                  "more workers than CPUs (%d local workers run %d busy threads, a "
                  "spinning pacer and an I/O thread each, on %d usable CPUs; worker "
                  "process %.2f cores%s): leave --workers out to let surge choose, or "
                  "give it more CPUs",
                  o.local_workers, o.local_workers * kBusyThreadsPerWorker, o.usable_cpus, cores,
                  host_known ? absl::StrFormat(", host %.0f%% busy", r.host_busy() * 100)
                             : std::string())};
    }
    return {LatenessCause::kCpu,
            host_known
                ? absl::StrFormat("CPU saturated (worker process %.2f cores, host %.0f%% busy)",
                                  cores, r.host_busy() * 100)
                : absl::StrFormat("CPU saturated (worker process %.2f cores)", cores)};
  }
  if (r.connects() >= o.connect_min &&
      static_cast<double>(r.connects()) >= o.connect_share * static_cast<double>(r.sends())) {
    return {LatenessCause::kConnectionSetup,
            absl::StrFormat("connection set-up (%d new connections for %d sends, mean set-up "
                            "%.2f ms)",
                            r.connects(), r.sends(),
                            Ms(r.connect_ns()) / static_cast<double>(r.connects()))};
  }
  // A late wake still going on counts as one more, as long as it is so far.
  const int64_t compared = std::max(r.lateness_p99_ns(), r.overdue_ns());
  const bool waiting = r.pacer_waiting_late_ns() > 0;
  const uint64_t late_wakes = r.pacer_late_wakes() + (waiting ? 1 : 0);
  const int64_t longest = std::max(r.pacer_late_wake_max_ns(), r.pacer_waiting_late_ns());
  if (late_wakes > 0 &&
      static_cast<double>(longest) >= o.late_wake_share * static_cast<double>(compared)) {
    return {LatenessCause::kPacerLostCpu,
            absl::StrFormat(
                "the pacer lost its CPU while it waited (%d %s for a release ran late, the "
                "longest by %.2f ms, %.2f ms in all; worker process %.2f cores%s): the host or "
                "another thread ran on its core; try --pacer-realtime, --pacer-cpu N, or fewer "
                "other processes on the machine",
                late_wakes, late_wakes == 1 ? "wait" : "waits", Ms(longest),
                Ms(r.pacer_late_wake_ns() + r.pacer_waiting_late_ns()), cores,
                host_known ? absl::StrFormat(", host %.0f%% busy", r.host_busy() * 100)
                           : std::string())};
  }
  return {LatenessCause::kUnknown,
          host_known ? absl::StrFormat("cause not identified (worker process %.2f cores, host "
                                       "%.0f%% busy, %d new connections, no slot waits)",
                                       cores, r.host_busy() * 100, r.connects())
                     : absl::StrFormat("cause not identified (worker process %.2f cores, %d new "
                                       "connections, no slot waits)",
                                       cores, r.connects())};
}

LatenessMonitor::LatenessMonitor(int num_workers, LatenessMonitorOptions options)
    : options_(options), latest_(static_cast<size_t>(std::max(num_workers, 0))) {
  for (size_t k = 0; k < latest_.size(); ++k) latest_[k].worker = static_cast<int32_t>(k);
  verdict_.judged = options_.threshold_ns > 0;
}

std::optional<LatenessAlarm> LatenessMonitor::Observe(int32_t worker,
                                                      const surge::v1::SendHealth& r,
                                                      int64_t at_ns) {
  if (worker < 0 || static_cast<size_t>(worker) >= latest_.size()) return std::nullopt;
  WorkerLateness& w = latest_[static_cast<size_t>(worker)];
  w.reported = true;
  w.sends = r.sends();
  w.p50_ns = r.lateness_p50_ns();
  w.p99_ns = r.lateness_p99_ns();
  w.overdue_ns = r.overdue_ns();
  const bool counted = r.sends() >= options_.min_sends;
  if (counted) verdict_.worst_p99_ns = std::max(verdict_.worst_p99_ns, r.lateness_p99_ns());
  if (options_.threshold_ns <= 0) return std::nullopt;
  const int64_t lateness = std::max(counted ? r.lateness_p99_ns() : 0, r.overdue_ns());
  if (lateness <= options_.threshold_ns) return std::nullopt;

  LatenessAlarm alarm;
  alarm.worker = worker;
  alarm.at_ns = at_ns;
  alarm.lateness_ns = lateness;
  alarm.diagnosis = DiagnoseLateness(r, options_);
  alarm.first = verdict_.kept;
  ++verdict_.over_reports;
  if (verdict_.kept) {
    verdict_.kept = false;
    verdict_.fell_behind_at_ns = at_ns;
    verdict_.worker = worker;
    verdict_.lateness_ns = lateness;
    verdict_.diagnosis = alarm.diagnosis;
  }
  const std::string what =
      counted && r.lateness_p99_ns() >= r.overdue_ns()
          ? absl::StrFormat(
                "send lateness p99 %.1f ms over the last %.1f s (p50 %.2f ms, max "
                "%.1f ms, %d sends)",
                Ms(r.lateness_p99_ns()), static_cast<double>(r.window_ns()) / 1e9,
                Ms(r.lateness_p50_ns()), Ms(r.lateness_max_ns()), r.sends())
          : absl::StrFormat(
                "its earliest queued request is %.1f ms overdue (%d sent in the last "
                "%.1f s)",
                Ms(r.overdue_ns()), r.sends(), static_cast<double>(r.window_ns()) / 1e9);
  alarm.text = absl::StrFormat(
      "%sworker %d is behind its schedule at t=%.2f s: %s, over the %g ms alarm threshold; "
      "likely cause: %s",
      alarm.first ? "lateness alarm: " : "", worker, static_cast<double>(at_ns) / 1e9, what,
      Ms(options_.threshold_ns), alarm.diagnosis.text);
  return alarm;
}

}  // namespace surge::coordinator
