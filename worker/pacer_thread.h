// Scheduling of the pacer's own thread: timer slack,
// optional CPU pinning and optional real-time priority. Called on the pacer
// thread before SendLoop::Run (docs/PERFORMANCE.md "Pacer thread" has the
// measurements behind each choice).
#ifndef SURGE_WORKER_PACER_THREAD_H_
#define SURGE_WORKER_PACER_THREAD_H_

#include <cstdint>
#include <string>

namespace surge::worker {

struct PacerThreadOptions {
  // Timer slack of the calling thread, ns (PR_SET_TIMERSLACK): how much
  // later than asked the kernel may end its sleeps to batch wake-ups
  // (Linux default 50,000 ns). 0 = leave it (the default: the 200 µs spin
  // window after each sleep already covers the slack, and 1 ns showed no
  // difference in bench/pacing_bench; docs/PERFORMANCE.md).
  uint64_t timer_slack_ns = 0;
  // CPU to pin the thread to (sched_setaffinity); -1 = none.
  int cpu = -1;
  // SCHED_FIFO at priority 1: the pacer preempts every normal thread on its
  // CPU the moment its sleep ends. Needs CAP_SYS_NICE or RLIMIT_RTPRIO ≥ 1.
  bool realtime = false;
};

// Applies `options` to the calling thread. Returns "" when everything was
// applied, else one sentence per setting that was refused, naming it, the
// reason (errno text) and what would allow it; the thread keeps running
// with the rest applied.
std::string ConfigurePacerThread(const PacerThreadOptions& options);

}  // namespace surge::worker

#endif  // SURGE_WORKER_PACER_THREAD_H_
