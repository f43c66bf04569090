// The lateness monitor: the generator knows its own limit. Every worker's Heartbeat carries its
// SendHealth: the lateness of its own sends over the last window (about 1 s) and the counters that
// tell why it is late (worker/send_health.h). The monitor judges each report as it arrives — no
// request record is awaited, so a long streamed answer cannot delay the alarm — and keeps the run's
// schedule verdict. Pure: time comes in as arguments (ns after t0 on the coordinator's clock), so
// tests drive it with exact simulated reports.
#ifndef SURGE_COORDINATOR_DISPATCH_LATENESS_MONITOR_H_
#define SURGE_COORDINATOR_DISPATCH_LATENESS_MONITOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "surge/v1/wire.pb.h"

namespace surge::coordinator {

// What most likely made a worker late, in the order they are checked
// (DiagnoseLateness).
enum class LatenessCause {
  kNone = 0,
  kFileDescriptors,  // EMFILE/ENFILE, or slots full at the descriptor capacity
  kRefused,          // the target refused connections (ECONNREFUSED)
  kInflightCap,      // requests waited for an in-flight slot, or all slots are taken
  kCpu,              // the worker process or the host had no CPU to spare
  kWorkersOverCpus,  // that, with more local workers' busy threads than CPUs
  kConnectionSetup,  // most sends needed a new connection
  kPacerLostCpu,     // the pacer waited in time and got its CPU back late
  kUnknown,          // none of the counters explains it
};

// Short name for JSON and logs: "file_descriptors", "target_refusing",
// "inflight_cap", "cpu_saturated", "workers_over_cpus", "connection_setup",
// "pacer_lost_cpu", "unknown", "none".
std::string_view LatenessCauseKey(LatenessCause cause);

struct LatenessMonitorOptions {
  // A report is over when its lateness p99 (with at least min_sends sends)
  // or its overdue time exceeds this, ns. 0 = no alarm (reports are still
  // kept for the progress line).
  int64_t threshold_ns = 10000000;
  // Sends a window needs for its p99 to count (a stuck pacer is caught by
  // overdue_ns instead).
  uint64_t min_sends = 2;
  // Cause thresholds (docs/DESIGN.md "Lateness alarm"):
  // CPU saturated when the worker process used at least this many cores
  // over the window (its pacer spins before each deadline, so a busy worker
  // at a high rate uses one core by design; 1.5 means its I/O thread is
  // busy too) or the host was at least host_busy busy.
  double cpu_cores = 1.5;
  double host_busy = 0.9;
  // Local workers (`surge run`) and the CPUs they may use; 0 = unknown
  // (remote workers). When CPU is saturated and the workers' busy threads
  // (2 each: the pacer and the I/O thread) outnumber the CPUs, the cause is
  // "more workers than CPUs".
  int local_workers = 0;
  int usable_cpus = 0;
  // Connection set-up when at least connect_min new connections were
  // opened and they were at least connect_share of the sends.
  uint64_t connect_min = 10;
  double connect_share = 0.5;
  // The pacer lost its CPU when its longest late wake in the window
  // (SendHealth.pacer_late_wake_max_ns, or the one still going on,
  // pacer_waiting_late_ns) is at least this share of the lateness compared
  // (max of p99 and overdue): one stall explains it.
  double late_wake_share = 0.5;
};

// The cause and a sentence with the measured numbers, e.g. "CPU saturated
// (worker process 1.93 cores, host 100% busy)". Pure.
struct LatenessDiagnosis {
  LatenessCause cause = LatenessCause::kNone;
  std::string text;
};
LatenessDiagnosis DiagnoseLateness(const surge::v1::SendHealth& report,
                                   const LatenessMonitorOptions& options);

// One over-threshold report.
struct LatenessAlarm {
  int32_t worker = -1;
  // When the report arrived, ns after t0.
  int64_t at_ns = 0;
  // max(p99 when counted, overdue), ns: what was compared.
  int64_t lateness_ns = 0;
  LatenessDiagnosis diagnosis;
  // True for the run's first alarm.
  bool first = false;
  // The warning line: worker, lateness numbers, threshold, cause.
  std::string text;
};

// The last report of one worker, for the progress line.
struct WorkerLateness {
  int32_t worker = -1;
  bool reported = false;
  uint64_t sends = 0;
  int64_t p50_ns = 0;
  int64_t p99_ns = 0;
  int64_t overdue_ns = 0;
};

// Whether the run kept its schedule, as far as the reports tell.
struct ScheduleVerdict {
  // The alarm was on (threshold > 0).
  bool judged = false;
  // No report was over the threshold.
  bool kept = true;
  // The first over report: when (ns after t0, −1 when none), which worker,
  // its lateness and diagnosis.
  int64_t fell_behind_at_ns = -1;
  int32_t worker = -1;
  int64_t lateness_ns = 0;
  LatenessDiagnosis diagnosis;
  // Reports over the threshold (all workers), and the largest window p99
  // seen in any report with at least min_sends sends, ns.
  uint64_t over_reports = 0;
  int64_t worst_p99_ns = 0;
};

class LatenessMonitor {
 public:
  LatenessMonitor(int num_workers, LatenessMonitorOptions options);

  // One report of `worker` (0..num_workers−1) at `at_ns` (ns after t0).
  // Returns the alarm when the report is over the threshold.
  std::optional<LatenessAlarm> Observe(int32_t worker, const surge::v1::SendHealth& report,
                                       int64_t at_ns);

  // The last report per worker, by index.
  const std::vector<WorkerLateness>& latest() const { return latest_; }
  const ScheduleVerdict& verdict() const { return verdict_; }
  const LatenessMonitorOptions& options() const { return options_; }

 private:
  LatenessMonitorOptions options_;
  std::vector<WorkerLateness> latest_;
  ScheduleVerdict verdict_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_LATENESS_MONITOR_H_
