// The pacer (ARCHITECTURE.md example 4): releases each assigned request at
// its absolute deadline, never by sleeping for an interval, and records
// planned, released, sent and blocked times per request. The plan is on the
// coordinator's clock; every deadline is mapped to the local clock through
// the current clock-sync estimate at the moment it is computed
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
  // within `prepare_guard`, unless its own deadline comes first.
  std::chrono::microseconds prepare_lead{50000};
  std::chrono::microseconds prepare_guard{1000};
  // Told of every hand-off to the sender (its lateness: hand-off − deadline,
  // local ns) and every wait for an in-flight slot (issue 9 item 1). May be
  // null; must outlive Run().
  SendHealth* health = nullptr;
};

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
  // Local steady ns after which nothing may be released (the worker lease,
  // DISTRIBUTED.md §3, checked at every release). Default: no expiry.
  void SetLeaseExpiry(int64_t local_ns) { lease_expiry_ns_.store(local_ns); }
  // The pacer body; returns soon after Stop(). Before returning it calls
  // RequestSender::CancelPrepared for every prepared, unreleased assignment.
  void Run();
  // Stops releasing. Requests already handed to the sender are not touched.
  void Stop() { stop_.store(true); }
  // Assignments never released (after Run returned), in release order.
  std::vector<surge::v1::Assignment> TakeUnreleased();

  // Assignments waiting for their deadline.
  size_t queued() const;
  // Largest offset_ns ever enqueued (the worker's horizon), ns after t0.
  int64_t horizon_ns() const { return horizon_ns_.load(); }
  // Requests released so far.
  uint64_t released() const { return released_.load(); }
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

  void Release(surge::v1::Assignment assignment, int64_t released_local_ns);

  Clock& clock_;
  RequestSender& sender_;
  const SendLoopOptions options_;
  const RecordCallback on_record_;

  mutable std::mutex mu_;
  // Assignments waiting for Prepare (empty when prepare_lead is 0), and
  // those prepared (or needing no preparation) waiting for their deadline.
  Heap unprepared_;
  Heap ready_;
  bool started_ = false;
  int64_t t0_coord_ns_ = 0;
  ClockMapping mapping_;

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> lease_expiry_ns_{INT64_MAX};
  std::atomic<int64_t> horizon_ns_{0};
  std::atomic<uint64_t> released_{0};
  // Local steady ns at which the pacer last got a slot after waiting at the
  // concurrency gate; a request due before then was held back. Pacer thread
  // only.
  int64_t last_gate_wait_end_ns_ = INT64_MIN;
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_SEND_LOOP_H_
