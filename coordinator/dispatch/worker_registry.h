// The worker registry (R-DIST-1, R-DIST-6): who joined
// (Hello), who is ready (first heartbeat), the heartbeat bookkeeping and its
// acknowledgement (the lease renewal), and death detection: a worker whose
// process exited or that has been silent for dead_after, with the stall
// guard, and the idle-owner rule. Takes every time as an argument (the
// dispatcher reads its Clock once per event): no I/O, no clock reads, so it
// is tested with exact timestamps. One thread.
#ifndef SURGE_COORDINATOR_DISPATCH_WORKER_REGISTRY_H_
#define SURGE_COORDINATOR_DISPATCH_WORKER_REGISTRY_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "surge/v1/wire.pb.h"

namespace surge::coordinator {

struct WorkerRegistryOptions {
  // Workers the run expects; indices are 0..num_workers-1.
  int num_workers = 1;
  // Silence after which a worker is dead (1.5 s by default). Any
  // message from the worker counts as alive.
  std::chrono::milliseconds dead_after{1500};
  // Liveness is checked at most this often (100 ms by default).
  std::chrono::milliseconds sweep_period{100};
  // A sweep that starts this much later than the previous one means the
  // coordinator itself stalled: every silence deadline is pushed back by the
  // lag instead of declaring deaths (the stall guard).
  std::chrono::milliseconds stall_guard{500};
  // How long a live worker must report itself idle (nothing in flight or
  // queued, no assignment sent to it since) before the requests it still
  // owns are given up as lost in transit. Far above the worker's record
  // flush period (50 ms) and heartbeat period (250 ms).
  std::chrono::milliseconds idle_grace{3000};
  // Before the start, a worker that has not sent its first heartbeat yet
  // (it is building its HTTP sender, which resolves the target's name) is
  // dropped for silence only after this long (10 s by default); a ready
  // one after dead_after. Either is dropped at once when unreachable.
  std::chrono::milliseconds setup_silence{10000};
};

class WorkerRegistry {
 public:
  struct Worker {
    // Transport routing id.
    std::string peer;
    int32_t index = -1;
    uint64_t incarnation = 0;
    bool alive = true;
    bool said_goodbye = false;
    // Its Goodbye's reason ("fenced" when it heard it was declared dead,
    // "coordinator_lost" when it gave up on its own, ...).
    std::string goodbye_reason;
    // Declared dead, then heard again and told to stop ("fenced").
    bool fenced_told = false;
    // Leaving on its own (its HandBack, e.g. after SIGTERM): it is assigned
    // nothing more and finishes what it has in flight; `leaving_reason` is
    // the HandBack's reason ("SIGTERM").
    bool leaving = false;
    std::string leaving_reason;
    // First heartbeat received (the worker's HTTP sender exists).
    bool ready = false;
    // Its own pre-flight check of the target (Heartbeat.target_check): why
    // it cannot connect from its host; empty when it can or did not check.
    std::string target_error;
    Clock::TimePoint last_heard{};
    // In flight, from the last heartbeat.
    uint32_t inflight = 0;
    // First bytes written so far (the largest Heartbeat.sent_total seen),
    // and the last SendHealth window: its sends and length, ns.
    uint64_t sent_total = 0;
    uint64_t window_sends = 0;
    int64_t window_ns = 0;
    // Since when every heartbeat says nothing in flight and nothing queued,
    // with no assignment sent since (idle = false otherwise).
    bool idle = false;
    Clock::TimePoint idle_since{};
    // Where it joined from, for logs: the transport's peer address (empty
    // when unknown) and the Hello's host name and pid (empty, 0: not given).
    std::string address;
    std::string host;
    uint32_t pid = 0;
  };
  // A worker that joined and left again before the start (Leave): its
  // routing id, so that it is told to stop if it speaks again.
  struct Left {
    std::string peer;
    int32_t index = -1;
    std::string who;
    // Told to stop once (its next messages are answered, not logged).
    bool told = false;
  };
  struct Death {
    int32_t index;
    // "process exited" or "silent for <dead_after> ms".
    std::string why;
  };
  // True when local worker `index` is known to have exited (process ground
  // truth, faster than silence). May be empty.
  using ExitProbe = std::function<bool(int32_t index)>;

  explicit WorkerRegistry(WorkerRegistryOptions options) : options_(options) {}

  // A Hello from `peer` at `now`. A known peer (a repeated Hello) is heard
  // again. A new one gets `requested_index` when it is free and in range,
  // else the lowest free index; `*fresh` is set then. Returns nullptr when
  // it is refused: the run has started or has all its workers. A Worker
  // pointer (from Join, Find or ByIndex) is valid until the next Join.
  Worker* Join(const std::string& peer, uint64_t incarnation, int32_t requested_index,
               Clock::TimePoint now, bool* fresh);
  Worker* Find(const std::string& peer);
  // Any message from a live worker at `now` counts as a sign of life.
  void Heard(Worker& worker, Clock::TimePoint now) { worker.last_heard = now; }
  // The one place heartbeats are handled: `received` is
  // the coordinator's time of receipt. Marks the worker ready, keeps its
  // in-flight count and idle state, and returns the acknowledgement (hb_seq
  // and t1 echoed, t2 = received), which renews the worker's lease.
  surge::v1::HeartbeatAck OnHeartbeat(Worker& worker, const surge::v1::Heartbeat& heartbeat,
                                      Clock::TimePoint received);
  void OnGoodbye(Worker& worker, const std::string& reason) {
    worker.said_goodbye = true;
    worker.goodbye_reason = reason;
  }
  // Workers declared dead that were told to stop (fenced) when they spoke
  // again, except those whose Goodbye says they left on their own (any
  // reason but "fenced": it gave up before it heard the Stop).
  uint64_t fenced_count() const;
  // Assignments were sent to `worker`: its heartbeats must say idle again.
  void OnAssignmentsSent(Worker& worker) { worker.idle = false; }

  // The wait for workers begins at `now`: sweeps (and the stall guard) are
  // counted from here.
  void BeginWait(Clock::TimePoint now) { last_sweep_ = now; }
  // Before the start: joined workers that are gone at `now`, in index
  // order: ready and silent for longer than dead_after, or not yet ready
  // and silent for longer than setup_silence. Marks nothing.
  std::vector<Death> FindGoneBeforeStart(Clock::TimePoint now) const;
  // Joined live workers not heard for at least `quiet` at `now`, in index
  // order (quiet 0: every one).
  std::vector<int32_t> QuietFor(Clock::TimePoint now, std::chrono::milliseconds quiet) const;
  // Before the start: worker `index` left (silent or unreachable). It is
  // forgotten, so its index is free for the next Hello, and its peer is
  // remembered as left (FindLeft). Invalidates Worker pointers.
  void Leave(int32_t index);
  Left* FindLeft(const std::string& peer);
  // "10.0.0.7, host w1, pid 77": what is known of where it runs (the
  // routing id when nothing is).
  static std::string Describe(const Worker& worker);

  // The run starts at `now`: no more joins; silence is counted from now
  // (a worker that dies before its next heartbeat is still caught).
  void Start(Clock::TimePoint now);
  bool started() const { return started_; }

  // True when a liveness sweep is due at `now` (sweep_period since the
  // last). Applies the stall guard first: a sweep later than stall_guard
  // pushes every last_heard forward by the lag.
  bool BeginSweep(Clock::TimePoint now);
  // Live workers to declare dead at `now`, in index order: process exited
  // (`exited`), else silent for longer than dead_after. Marks nothing.
  std::vector<Death> FindDead(Clock::TimePoint now, const ExitProbe& exited) const;
  void MarkDead(Worker& worker) { worker.alive = false; }
  // Live workers idle for at least idle_grace at `now`, in index order.
  std::vector<int32_t> IdleFor(Clock::TimePoint now) const;

  // Joined workers, sorted by index.
  std::vector<Worker>& workers() { return workers_; }
  const std::vector<Worker>& workers() const { return workers_; }
  Worker* ByIndex(int32_t index);
  int ready_count() const;
  bool any_alive() const;
  // In flight on live workers, from their last heartbeats.
  uint64_t inflight() const;
  const WorkerRegistryOptions& options() const { return options_; }

 private:
  WorkerRegistryOptions options_;
  std::vector<Worker> workers_;
  std::vector<Left> left_;
  bool started_ = false;
  Clock::TimePoint last_sweep_{};
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_WORKER_REGISTRY_H_
