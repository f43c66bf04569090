// The pacer: releases each assigned request at
// its absolute deadline, never by sleeping for an interval, and records
// planned, released, sent and blocked times per request. The plan is on the
// coordinator's clock; every deadline is mapped to the local clock through
// the current mapping at the moment it is computed (the clock-sync estimate;
// the identity for a same-clock worker, see WorkerSessionOptions)
// (deadline_local = map(t0_coord + offset_i), R-DIST-4), so a corrected
// offset or drift applies to the very next release.
#ifndef SURGE_WORKER_SEND_LOOP_H_
#define SURGE_WORKER_SEND_LOOP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "common/clock_sync.h"
#include "surge/v1/record.pb.h"
#include "surge/v1/wire.pb.h"
#include "worker/request_sender.h"
#include "worker/send_health.h"

namespace surge::worker {

struct SendLoopOptions {
  // Worker index written into every record.
  int32_t worker_index = 0;
  // Requests this worker may have in flight; 0 = no cap (R-REQ-2). A request
  // held back by the cap (waiting for a slot itself, or due while the pacer
  // waited for a slot for an earlier one) is sent late; its blocked_ns is the
  // time from its planned send to the slot, and its lateness shows it.
  uint32_t max_inflight = 0;
  // Longest coarse sleep between checks for new work or a stop, so an early
  // assignment or Stop() is seen within this time.
  std::chrono::microseconds slice{2000};
  // How long before its deadline each assignment is handed to
  // RequestSender::Prepare (built and given a connection off the critical
  // path). 0 = never call Prepare. An assignment enqueued later than this is
  // prepared at once. A preparation is put off while another request is due
  // within `prepare_guard`, unless its own deadline comes first or only half
  // the lead is left (then it goes at once: regular traffic, a release every
  // guard or less, would otherwise starve it).
  std::chrono::microseconds prepare_lead{50000};
  std::chrono::microseconds prepare_guard{1000};
  // At most this many requests prepared and not yet released (each holds a
  // connection and its built bytes); the next preparation waits for a
  // release, unless its own deadline comes first. Binds only above about
  // max_prepared / prepare_lead (2,560-5,120 RPS per worker with the
  // defaults: regular traffic is prepared between half the lead and the lead
  // ahead): at 10,000 RPS per worker the lead becomes 12.8 ms, ample for a connect,
  // instead of 500 connections reserved 50 ms ahead, which at the start of
  // a 20,000 RPS run meant 20,000 connects per second (docs/PERFORMANCE.md).
  size_t max_prepared = 128;
  // While it waits for a release, within `assist_window` of it and more
  // than `assist_margin` before it, the pacer runs the sender's ready I/O
  // completions (RequestSender::RunReadyWork) instead of only spinning, and
  // looks for more every `assist_poll`; from `assist_margin` on it only
  // waits. A completion started just before the margin may run past it: the
  // margin is the longest one expected (docs/PERFORMANCE.md "The pacer
  // helps the I/O thread"). assist_margin 0 = never.
  std::chrono::microseconds assist_window{200};
  std::chrono::microseconds assist_margin{20};
  std::chrono::microseconds assist_poll{5};
  // Once t0 is known and assignments are held, the pacer tells the sender
  // the rate its schedule begins at (RequestSender::WarmConnections): the held
  // assignments planned within `start_rate_window` of the first, over that
  // window (when the queue covers less of it, but at least a tenth: the
  // gaps it holds over their span), and the preparations it will hold at
  // once from then on, min(max_prepared, rate × prepare_lead). Once per
  // run; 0 = never.
  // docs/PERFORMANCE.md "Warm connections".
  std::chrono::milliseconds start_rate_window{100};
  // Late-send policy (docs/DESIGN.md "Late-send policy"), decided at each
  // release: a request is late when the pacer reaches it more than
  // `late_threshold_ns` after its deadline (local clock). SEND sends it at
  // once (the default: the pacer as it always was); SKIP does not send it
  // (record status SKIPPED, error "skipped_late: ..."); CAP releases it no
  // sooner than `catch_up_spacing_ns` after the previous release (records
  // it as catch_up_delay_ns when that held it back). Every released late
  // request has record.late set.
  surge::v1::LatePolicy late_policy = surge::v1::LATE_POLICY_SEND;
  int64_t late_threshold_ns = 10000000;
  // CAP only: the least time between a late release and the release before
  // it, ns (1e9 / the worker's catch-up rate); > 0 with CAP.
  int64_t catch_up_spacing_ns = 0;
  // A wait on the way to a release (a coarse sleep or the precise one)
  // that began before its deadline and ended at least this long after it is
  // a late wake: the pacer did not get its CPU back in time (preempted in
  // its spin, or its sleep woke late). Counted in
  // late_wakes() and told to `health`; a wait that began already late (the
  // pacer behind, or help for the I/O thread that ran past the deadline)
  // is not one.
  std::chrono::microseconds late_wake_threshold{50};
  // Told of every hand-off to the sender (its lateness: hand-off − deadline,
  // local ns), every late wake and every wait for an in-flight slot. May be
  // null; must outlive Run().
  SendHealth* health = nullptr;
};

// Sets `options`' late-send policy from the coordinator's Welcome
// (late_policy; late_threshold_ns, 0 = keep the default 10 ms; for CAP,
// catch_up_spacing_ns = round(1e9 / catch_up_rps), the worker's share).
// Leaves the other fields alone.
void ApplyLatePolicy(const surge::v1::Welcome& welcome, SendLoopOptions* options);

// Receives each finished request's record, times relative to t0 on the
// coordinator's clock (ns); called on the sender's I/O thread.
using RecordCallback = std::function<void(surge::v1::RequestRecord)>;

// Thread-safe except Run(), which one pacer thread calls once.
class SendLoop {
 public:
  SendLoop(Clock& clock, RequestSender& sender, SendLoopOptions options, RecordCallback on_record);

  // Sets t0, ns on the coordinator's steady clock (with the default identity
  // mapping: the local clock); nothing is released before this is called.
  void SetStart(int64_t t0_coord_ns);
  // The coordinator → local clock mapping read at every deadline, and used
  // to put record times on the coordinator's clock. Default: identity.
  void SetClockMapping(const ClockMapping& mapping);
  // Adds assignments; each is released at map(t0 + offset_ns) (ordered by
  // offset, then index, whatever the order of arrival).
  void Enqueue(std::vector<surge::v1::Assignment> assignments);
  // Local steady ns after which nothing may be released (the worker's
  // lease, checked at every release). Default: no expiry.
  void SetLeaseExpiry(int64_t local_ns) { lease_expiry_ns_.store(local_ns); }
  // The pacer body; returns soon after Stop(). Before returning it calls
  // RequestSender::CancelPrepared for every prepared, unreleased assignment.
  void Run();
  // Stops releasing (a pacer waiting for an in-flight slot wakes at once).
  // Requests already handed to the sender are not touched.
  void Stop();
  // Assignments never released (after Run returned), in release order.
  std::vector<surge::v1::Assignment> TakeUnreleased();

  // Assignments waiting for their deadline.
  size_t queued() const;
  // Largest offset_ns ever enqueued (the worker's horizon), ns after t0.
  int64_t horizon_ns() const { return horizon_ns_.load(); }
  // Requests released so far.
  uint64_t released() const { return released_.load(); }
  // Of the releases, those that were late (record.late); requests skipped
  // (SKIP) and releases the catch-up spacing held back (CAP), so far.
  uint64_t late() const { return late_.load(); }
  uint64_t skipped() const { return skipped_.load(); }
  uint64_t delayed() const { return delayed_.load(); }
  // Late wakes so far (SendLoopOptions::late_wake_threshold) and the
  // longest one's overshoot past its deadline, ns.
  uint64_t late_wakes() const { return late_wakes_.count.load(); }
  // A late wake still going on at local `now_ns`: how far past the deadline
  // of the release the pacer is still waiting for, when its wait began
  // before that deadline and it is at least late_wake_threshold past it; 0
  // otherwise.
  int64_t WaitingLateNs(int64_t now_ns) const;
  int64_t late_wake_max_ns() const { return late_wakes_.max_ns.load(); }
  // Slow hand-offs so far: releases whose hand-off to the sender (from the
  // release, or the end of its wait for an in-flight slot, to the sender's
  // return) took at least late_wake_threshold, and the longest, ns. The
  // pacer was busy or off its CPU then, and the releases due meanwhile
  // queued behind it.
  uint64_t slow_handoffs() const { return slow_handoffs_.count.load(); }
  int64_t slow_handoff_max_ns() const { return slow_handoffs_.max_ns.load(); }
  // How long the earliest queued request is past its deadline at local
  // `now_ns`, ns; 0 when none is due (or before the start).
  int64_t OverdueNs(int64_t now_ns) const;

 private:
  struct Later {
    bool operator()(const surge::v1::Assignment& a, const surge::v1::Assignment& b) const {
      return a.offset_ns() != b.offset_ns() ? a.offset_ns() > b.offset_ns() : a.index() > b.index();
    }
  };

  // Heaps (std::push_heap/pop_heap with Later): earliest at front().
  using Heap = std::vector<surge::v1::Assignment>;
  static void PushHeap(Heap& heap, surge::v1::Assignment a);
  static surge::v1::Assignment PopHeap(Heap& heap);

  static constexpr int64_t kNever = INT64_MAX;
  // The pacer's next two events, local steady ns (kNever: none): preparing
  // the earliest unprepared assignment (due at its deadline − lead), and
  // releasing the earliest ready one; and how many are prepared.
  struct Events {
    int64_t prepare_due = kNever;
    int64_t prepare_deadline = kNever;
    int64_t release_due = kNever;
    size_t prepared = 0;
  };
  // Run's phases: the next events; whether the preparation may go now; the
  // preparation; a sleep toward the next event (false when the release is
  // within a slice: release now); the release at `release_due`.
  Events NextEvents() const;
  // The start's WarmConnections call, once t0 is known and assignments are held.
  void WarmConnectionsOnce();
  // The rate the held assignments begin at (see start_rate_window), per s.
  double StartRateLocked() const;
  bool PrepareMayGo(const Events& ev, int64_t now) const;
  void PrepareNext();
  bool SleepTowardNextEvent(const Events& ev, bool prepare_may_go, int64_t now);
  void ReleaseDue(int64_t release_due);
  // The wait for a release at local ns `due`: with a sender that takes
  // help, its ready completions run until `assist_margin` before `due`;
  // then a precise sleep to `due`. Returns the local ns it ended at, and
  // counts a late wake when the sleep began before `due`.
  int64_t WaitForRelease(int64_t due);
  // A sleep (precise or coarse) until local `wake`, begun at `now`, on the
  // way to the release due at `release_due` (kNever: none); returns the
  // local ns it ended at. While it lasts, WaitingLateNs sees it; one that
  // began before the release and ended late for it is a late wake.
  int64_t SleepToward(int64_t wake, int64_t release_due, int64_t now, bool precise);
  // A late wake at local `woke_ns`, `overshoot_ns` past its deadline, when
  // at least late_wake_threshold.
  void CountLateWake(int64_t woke_ns, int64_t overshoot_ns);

  // The late-send policy, picked once at construction: what becomes of a
  // request the pacer reached at local `reached_ns`, `lateness_ns` after
  // its deadline (`late`: more than the threshold). SEND releases it; SKIP
  // records a late one as SKIPPED; CAP holds a late one back to the
  // catch-up spacing.
  using ReleasePolicy = void (SendLoop::*)(surge::v1::Assignment next, int64_t reached_ns,
                                           bool late, int64_t lateness_ns);
  static ReleasePolicy PickReleasePolicy(surge::v1::LatePolicy policy);
  void ReleaseAsDue(surge::v1::Assignment next, int64_t reached_ns, bool late, int64_t lateness_ns);
  void ReleaseOrSkip(surge::v1::Assignment next, int64_t reached_ns, bool late,
                     int64_t lateness_ns);
  void ReleaseWithCatchUp(surge::v1::Assignment next, int64_t reached_ns, bool late,
                          int64_t lateness_ns);

  // `late` and `catch_up_delay_ns` go into the record as they are.
  void Release(surge::v1::Assignment assignment, int64_t released_local_ns, bool late,
               int64_t catch_up_delay_ns);
  // A session turn's record names its session and turn (docs/SESSIONS.md).
  static void MarkSessionTurn(const surge::v1::Assignment& assignment,
                              surge::v1::RequestRecord& record);
  // SKIP: reports `assignment` (reached `lateness_ns` after its deadline) as
  // a SKIPPED record, on the pacer thread.
  void Skip(const surge::v1::Assignment& assignment, int64_t lateness_ns);
  // CAP: sleeps until local ns `gate` (sliced, so a stop is seen); false
  // when stopped first.
  bool WaitForCatchUpGate(int64_t gate);
  // The concurrency cap: waits until the sender has fewer than
  // max_inflight requests in flight; false when stopped first. Woken by
  // every completion (and by Stop), it looks again at least every slice.
  bool WaitForSlot();
  // Called on the sender's thread as each released request finishes.
  void OnCompletion();

  Clock& clock_;
  RequestSender& sender_;
  const SendLoopOptions options_;
  const RecordCallback on_record_;
  const ReleasePolicy release_policy_;

  mutable std::mutex mu_;
  // Assignments waiting for Prepare (empty when prepare_lead is 0), and
  // those prepared (or needing no preparation) waiting for their deadline.
  Heap unprepared_;
  Heap ready_;
  bool started_ = false;
  bool warmed_connections_ = false;  // pacer thread only
  int64_t t0_coord_ns_ = 0;
  ClockMapping mapping_;

  // Completions so far, and what the pacer waiting for a slot waits on
  // (a completion or a stop).
  std::mutex gate_mu_;
  uint64_t completions_ = 0;  // guarded by gate_mu_
  ClockCondition slot_freed_;

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> lease_expiry_ns_{INT64_MAX};
  std::atomic<int64_t> horizon_ns_{0};
  std::atomic<uint64_t> released_{0};
  std::atomic<uint64_t> late_{0};
  std::atomic<uint64_t> skipped_{0};
  std::atomic<uint64_t> delayed_{0};
  // Stalls of the pacer at least late_wake_threshold long (its value in ns,
  // stall_threshold_ns_): how many and the longest, ns. Written by the
  // pacer only; read by any thread.
  struct Stalls {
    std::atomic<uint64_t> count{0};
    std::atomic<int64_t> max_ns{0};
    void Add(int64_t ns);
  };
  const int64_t stall_threshold_ns_;
  Stalls late_wakes_;
  Stalls slow_handoffs_;
  // The deadline (local ns) of the release the pacer is waiting for, while
  // a wait that began before it lasts; INT64_MAX otherwise.
  std::atomic<int64_t> waiting_for_ns_{INT64_MAX};
  // Local steady ns of the last release (CAP spacing). Pacer thread only.
  int64_t last_release_local_ns_ = INT64_MIN;
  // Local steady ns at which the pacer last got a slot after waiting at the
  // concurrency gate; a request due before then was held back. Pacer thread
  // only.
  int64_t last_gate_wait_end_ns_ = INT64_MIN;
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_SEND_LOOP_H_
