// A worker's own view of how well it keeps its schedule: the generator
// knows its own limit. The pacer reports the lateness of
// every request it hands to the sender and every wait for an in-flight
// slot; the session feeds it the error of every record (descriptor
// exhaustion, refused connections) and, at each heartbeat, the cumulative
// totals it reads from the sender and the system (connections opened, CPU
// time). Report() turns them into the Heartbeat's SendHealth over the last
// window (1 s): lateness p50/p99/max of the sends in it and the counters'
// increase over it. The coordinator's LatenessMonitor decides the alarm and
// the cause from these reports alone, so it never waits for a request's
// record (a streamed answer takes seconds to come back).
#ifndef SURGE_WORKER_SEND_HEALTH_H_
#define SURGE_WORKER_SEND_HEALTH_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string_view>

#include "surge/v1/wire.pb.h"

namespace surge::worker {

// Cumulative totals read at a report (not counted by SendHealth itself).
struct HealthTotals {
  // Connections opened so far and their set-up time, ns (RequestSender).
  uint64_t connects = 0;
  int64_t connect_ns = 0;
  // CPU time of this process so far, ns (ProcessCpuNs).
  int64_t cpu_ns = 0;
  // Host CPU jiffies, busy and total (ReadHostCpu); total 0 = unknown.
  uint64_t host_busy = 0;
  uint64_t host_total = 0;
};

// CPU time of this process, all threads (CLOCK_PROCESS_CPUTIME_ID), ns.
int64_t ProcessCpuNs();
// Adds the host's busy and total CPU jiffies from /proc/stat's "cpu" line to
// `totals` (busy = total − idle − iowait); leaves them 0 when unreadable.
void ReadHostCpu(HealthTotals& totals);
// Whether a record's error is descriptor exhaustion (EMFILE/ENFILE: the
// system text "Too many open files") or a refused connection
// ("Connection refused"). Pure.
bool IsDescriptorError(std::string_view error);
bool IsRefusedError(std::string_view error);

// Thread-safe: the pacer, the I/O thread (records) and the session thread
// (reports) call it.
class SendHealth {
 public:
  // `start_ns`: local steady ns the counting starts (the window of the
  // first report begins there); `start`: the totals then. `window`: how far
  // back a report looks. At most `max_samples` lateness values are kept
  // (the oldest go first; at 1 s that is 262,144 sends per second).
  SendHealth(int64_t start_ns, const HealthTotals& start,
             std::chrono::nanoseconds window = std::chrono::seconds(1),
             size_t max_samples = size_t{1} << 18);

  // A request handed to the sender at local `now_ns`, `lateness_ns` after
  // its deadline (negative = early; counted as is).
  void OnSend(int64_t now_ns, int64_t lateness_ns);
  // The pacer's wait for a release began before its deadline and ended
  // `overshoot_ns` after it, at local `now_ns`: a late wake (the pacer
  // counts only those at least its late-wake threshold).
  void OnLateWake(int64_t now_ns, int64_t overshoot_ns);
  // A request that waited for an in-flight slot.
  void OnGateWait();
  // A finished request's error text ("" for ok); counts descriptor and
  // refused-connection failures.
  void OnRecordError(std::string_view error);

  // The report at local `now_ns` with the totals read then, over the window
  // from the latest earlier report at least `window` old (the start while
  // there is none) to now: window_ns (so one window to one window plus a
  // heartbeat period), sends in it and their lateness p50/p99/max (exact,
  // linear interpolation between closest ranks), and the increase of every
  // counter over it (the late wakes' count and sum; their longest over the
  // same sends' span); host_busy −1 when /proc/stat was not readable. `overdue_ns` is passed
  // through. max_inflight, inflight, fd_limit and fd_capacity are left for
  // the caller. Reports must come in time order.
  surge::v1::SendHealth Report(int64_t now_ns, const HealthTotals& totals, int64_t overdue_ns);

 private:
  struct Counts {
    bool initial = false;  // the start, not a report
    int64_t at_ns = 0;
    uint64_t sends = 0;
    uint64_t gate_waits = 0;
    uint64_t fd_errors = 0;
    uint64_t refused = 0;
    uint64_t late_wakes = 0;
    int64_t late_wake_ns = 0;
    HealthTotals totals;
  };

  const int64_t window_ns_;
  const size_t max_samples_;
  std::mutex mu_;
  // (local ns, lateness ns) of recent sends, oldest first.
  std::deque<std::pair<int64_t, int64_t>> samples_;
  // (local ns, overshoot ns) of recent late wakes, oldest first (at most
  // max_samples).
  std::deque<std::pair<int64_t, int64_t>> late_wakes_;
  Counts now_;               // running counters (totals unused)
  std::deque<Counts> past_;  // at the start and at each report, oldest first
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_SEND_HEALTH_H_
