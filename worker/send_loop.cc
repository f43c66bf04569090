#include "worker/send_loop.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "common/failure_kind.h"

namespace surge::worker {

void ApplyLatePolicy(const surge::v1::Welcome& welcome, SendLoopOptions* options) {
  options->late_policy = welcome.late_policy();
  if (welcome.late_threshold_ns() > 0) options->late_threshold_ns = welcome.late_threshold_ns();
  if (welcome.late_policy() == surge::v1::LATE_POLICY_CAP && welcome.catch_up_rps() > 0) {
    options->catch_up_spacing_ns = static_cast<int64_t>(std::llround(1e9 / welcome.catch_up_rps()));
  }
}

SendLoop::SendLoop(Clock& clock, RequestSender& sender, SendLoopOptions options,
                   RecordCallback on_record)
    : clock_(clock),
      sender_(sender),
      options_(options),
      on_record_(std::move(on_record)),
      release_policy_(PickReleasePolicy(options.late_policy)),
      slot_freed_(clock),
      stall_threshold_ns_(std::chrono::nanoseconds(options.late_wake_threshold).count()) {}

void SendLoop::Stalls::Add(int64_t ns) {
  count.fetch_add(1);
  if (ns > max_ns.load()) max_ns.store(ns);
}

void SendLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(gate_mu_);
    stop_.store(true);
  }
  slot_freed_.Notify();
}

void SendLoop::OnCompletion() {
  {
    std::lock_guard<std::mutex> lock(gate_mu_);
    ++completions_;
  }
  slot_freed_.Notify();
}

bool SendLoop::WaitForSlot() {
  while (true) {
    std::unique_lock<std::mutex> lock(gate_mu_);
    // Read before looking at inflight(): the sender retires a request before
    // its callback counts the completion, so a slot freed after the look
    // below changes `seen` and ends the wait at once.
    const uint64_t seen = completions_;
    lock.unlock();
    if (stop_.load()) return false;
    if (sender_.inflight() < options_.max_inflight) return true;
    lock.lock();
    slot_freed_.WaitUntil(
        lock, [this, seen] { return completions_ != seen || stop_.load(); },
        clock_.Now() + options_.slice);
  }
}

void SendLoop::PushHeap(Heap& heap, surge::v1::Assignment a) {
  heap.push_back(std::move(a));
  std::push_heap(heap.begin(), heap.end(), Later());
}

surge::v1::Assignment SendLoop::PopHeap(Heap& heap) {
  std::pop_heap(heap.begin(), heap.end(), Later());
  surge::v1::Assignment a = std::move(heap.back());
  heap.pop_back();
  return a;
}

void SendLoop::SetStart(int64_t t0_coord_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  t0_coord_ns_ = t0_coord_ns;
  started_ = true;
}

void SendLoop::SetClockMapping(const ClockMapping& mapping) {
  std::lock_guard<std::mutex> lock(mu_);
  mapping_ = mapping;
}

void SendLoop::Enqueue(std::vector<surge::v1::Assignment> assignments) {
  std::lock_guard<std::mutex> lock(mu_);
  Heap& target = options_.prepare_lead.count() > 0 ? unprepared_ : ready_;
  for (auto& a : assignments) {
    horizon_ns_.store(std::max(horizon_ns_.load(), a.offset_ns()));
    PushHeap(target, std::move(a));
  }
}

size_t SendLoop::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unprepared_.size() + ready_.size();
}

int64_t SendLoop::OverdueNs(int64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || (unprepared_.empty() && ready_.empty())) return 0;
  int64_t earliest = INT64_MAX;
  if (!unprepared_.empty()) earliest = unprepared_.front().offset_ns();
  if (!ready_.empty()) earliest = std::min(earliest, ready_.front().offset_ns());
  return std::max<int64_t>(0, now_ns - mapping_.ToWorker(t0_coord_ns_ + earliest));
}

std::vector<surge::v1::Assignment> SendLoop::TakeUnreleased() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<surge::v1::Assignment> out;
  while (!unprepared_.empty() || !ready_.empty()) {
    const bool from_ready =
        unprepared_.empty() || (!ready_.empty() && !Later()(ready_.front(), unprepared_.front()));
    out.push_back(PopHeap(from_ready ? ready_ : unprepared_));
  }
  return out;
}

SendLoop::Events SendLoop::NextEvents() const {
  // Deadlines are absolute local steady ns, mapped from the coordinator's
  // t0 + offset through the mapping of this very moment: the clock-sync
  // estimate, or the identity for a same-clock worker.
  const int64_t lead =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.prepare_lead).count();
  Events ev;
  std::lock_guard<std::mutex> lock(mu_);
  ev.prepared = ready_.size();
  if (started_ && !unprepared_.empty()) {
    ev.prepare_deadline = mapping_.ToWorker(t0_coord_ns_ + unprepared_.front().offset_ns());
    ev.prepare_due = ev.prepare_deadline - lead;
  }
  if (started_ && !ready_.empty()) {
    ev.release_due = mapping_.ToWorker(t0_coord_ns_ + ready_.front().offset_ns());
  }
  return ev;
}

double SendLoop::StartRateLocked() const {
  using std::chrono::nanoseconds;
  const int64_t window =
      std::chrono::duration_cast<nanoseconds>(options_.start_rate_window).count();
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  for (const Heap* heap : {&unprepared_, &ready_}) {
    for (const surge::v1::Assignment& a : *heap) {
      first = std::min(first, a.offset_ns());
      last = std::max(last, a.offset_ns());
    }
  }
  if (first == INT64_MAX) return 0;
  size_t count = 0;
  for (const Heap* heap : {&unprepared_, &ready_}) {
    for (const surge::v1::Assignment& a : *heap) count += a.offset_ns() - first < window ? 1 : 0;
  }
  // The queue covers the window: its count over it. Less of it: the gaps
  // it holds over their span; too little to tell (or every request at one
  // instant): the count over the window.
  const int64_t span = last - first;
  if (span >= window || span < window / 10) {
    return static_cast<double>(count) * 1e9 / static_cast<double>(window);
  }
  return static_cast<double>(count - 1) * 1e9 / static_cast<double>(span);
}

void SendLoop::WarmConnectionsOnce() {
  if (warmed_connections_ || options_.start_rate_window.count() <= 0) return;
  double rate = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || (unprepared_.empty() && ready_.empty())) return;
    rate = StartRateLocked();
  }
  warmed_connections_ = true;
  const double lead_s = std::chrono::duration<double>(options_.prepare_lead).count();
  const size_t prepared = static_cast<size_t>(
      std::min(static_cast<double>(options_.max_prepared), std::ceil(rate * lead_s)));
  sender_.WarmConnections(rate, prepared);
}

bool SendLoop::PrepareMayGo(const Events& ev, int64_t now) const {
  // A preparation is cheap but not free (a few µs on this thread): it waits
  // while a release is close, unless its own deadline comes first (an
  // assignment that arrived late, with less than `lead` to go) or it has
  // waited until half the lead is left. Without that last rule regular
  // traffic starves it: at ≥ 1,000 RPS constant the next release is never
  // more than the guard away, so every request would be prepared just
  // before its own release, its connection not ready. It also waits while
  // max_prepared requests are prepared and unreleased (each holds a
  // connection), unless its own deadline comes first.
  using std::chrono::nanoseconds;
  const int64_t lead = std::chrono::duration_cast<nanoseconds>(options_.prepare_lead).count();
  const int64_t guard = std::chrono::duration_cast<nanoseconds>(options_.prepare_guard).count();
  return ev.prepare_due != kNever && (ev.prepare_deadline <= ev.release_due ||
                                      (ev.prepared < options_.max_prepared &&
                                       (ev.release_due == kNever || ev.release_due - now > guard ||
                                        ev.prepare_deadline - now <= lead / 2)));
}

void SendLoop::PrepareNext() {
  surge::v1::Assignment a;
  {
    std::lock_guard<std::mutex> lock(mu_);
    a = PopHeap(unprepared_);
  }
  sender_.Prepare(a);
  std::lock_guard<std::mutex> lock(mu_);
  PushHeap(ready_, std::move(a));
}

bool SendLoop::SleepTowardNextEvent(const Events& ev, bool prepare_may_go, int64_t now) {
  using std::chrono::nanoseconds;
  const int64_t slice = std::chrono::duration_cast<nanoseconds>(options_.slice).count();
  const int64_t guard = std::chrono::duration_cast<nanoseconds>(options_.prepare_guard).count();
  if (ev.prepare_due == kNever && ev.release_due == kNever) {
    clock_.SleepUntilCoarse(FromNanos(now + slice));
    return true;
  }
  if (prepare_may_go && ev.prepare_due < ev.release_due) {
    // The next event is a preparation: no precision needed. But a coarse
    // sleep wakes up to ~300 µs late (docs/PERFORMANCE.md), so it ends
    // `guard` before a release at the latest; from there the release's own
    // precise sleep runs (the preparation waits for it unless its deadline
    // comes first).
    int64_t wake = std::min(ev.prepare_due, now + slice);
    if (ev.release_due != kNever && ev.prepare_deadline > ev.release_due) {
      wake = std::min(wake, ev.release_due - guard);
    }
    if (wake > now) {
      SleepToward(wake, ev.release_due, now, /*precise=*/false);
      return true;
    }
  }
  if (ev.release_due - now > slice) {
    // Far from the deadline: sleep one slice, then look again, so that an
    // earlier assignment or a stop is noticed. The last stretch is a
    // precise absolute sleep.
    SleepToward(std::min(ev.release_due - slice / 2, now + slice), ev.release_due, now,
                /*precise=*/false);
    return true;
  }
  return false;
}

int64_t SendLoop::SleepToward(int64_t wake, int64_t release_due, int64_t now, bool precise) {
  const bool toward_release = release_due != kNever && now < release_due;
  if (toward_release) waiting_for_ns_.store(release_due, std::memory_order_relaxed);
  if (precise) {
    clock_.SleepUntil(FromNanos(wake));
  } else {
    clock_.SleepUntilCoarse(FromNanos(wake));
  }
  const int64_t woke_ns = ToNanos(clock_.Now());
  if (toward_release) {
    waiting_for_ns_.store(INT64_MAX, std::memory_order_relaxed);
    CountLateWake(woke_ns, woke_ns - release_due);
  }
  return woke_ns;
}

int64_t SendLoop::WaitingLateNs(int64_t now_ns) const {
  const int64_t due = waiting_for_ns_.load(std::memory_order_relaxed);
  if (due == INT64_MAX) return 0;
  const int64_t late = now_ns - due;
  return late >= stall_threshold_ns_ ? late : 0;
}

int64_t SendLoop::WaitForRelease(int64_t due) {
  using std::chrono::nanoseconds;
  const int64_t margin = std::chrono::duration_cast<nanoseconds>(options_.assist_margin).count();
  if (margin > 0 && sender_.TakesHelp()) {
    const int64_t window = std::chrono::duration_cast<nanoseconds>(options_.assist_window).count();
    const int64_t poll = std::chrono::duration_cast<nanoseconds>(options_.assist_poll).count();
    for (int64_t now = ToNanos(clock_.Now()); now < due - margin; now = ToNanos(clock_.Now())) {
      if (due - now > window) {
        SleepToward(due - window, due, now, /*precise=*/false);
      } else if (!sender_.RunReadyWork()) {
        clock_.SleepUntil(FromNanos(std::min(due - margin, now + std::max<int64_t>(poll, 1))));
      }
    }
  }
  return SleepToward(due, due, ToNanos(clock_.Now()), /*precise=*/true);
}

void SendLoop::CountLateWake(int64_t woke_ns, int64_t overshoot_ns) {
  if (overshoot_ns < stall_threshold_ns_) return;
  late_wakes_.Add(overshoot_ns);
  if (options_.health != nullptr) options_.health->OnLateWake(woke_ns, overshoot_ns);
}

void SendLoop::ReleaseDue(int64_t release_due) {
  const int64_t reached_ns = WaitForRelease(release_due);
  // The lease check sits here, at the release itself, not in a watchdog: a
  // pacer that wakes after a long stall must not send what the coordinator
  // may already have given to another worker.
  if (reached_ns > lease_expiry_ns_.load()) {
    clock_.SleepUntilCoarse(clock_.Now() + options_.slice);
    return;
  }
  surge::v1::Assignment next;
  int64_t deadline_local_ns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    next = PopHeap(ready_);
    // The front may have changed since release_due (an earlier arrival).
    deadline_local_ns = mapping_.ToWorker(t0_coord_ns_ + next.offset_ns());
  }
  // Late = reached more than the threshold after the deadline; the policy,
  // picked once, decides what a late request becomes. A warm-up is never
  // late: it is released as due, whatever the policy.
  if (next.warmup()) {
    ReleaseAsDue(std::move(next), reached_ns, /*late=*/false, reached_ns - deadline_local_ns);
    return;
  }
  const bool late = reached_ns - deadline_local_ns > options_.late_threshold_ns;
  (this->*release_policy_)(std::move(next), reached_ns, late, reached_ns - deadline_local_ns);
}

SendLoop::ReleasePolicy SendLoop::PickReleasePolicy(surge::v1::LatePolicy policy) {
  switch (policy) {
    case surge::v1::LATE_POLICY_SKIP:
      return &SendLoop::ReleaseOrSkip;
    case surge::v1::LATE_POLICY_CAP:
      return &SendLoop::ReleaseWithCatchUp;
    default:
      return &SendLoop::ReleaseAsDue;
  }
}

void SendLoop::ReleaseAsDue(surge::v1::Assignment next, int64_t reached_ns, bool late,
                            int64_t /*lateness_ns*/) {
  last_release_local_ns_ = reached_ns;
  Release(std::move(next), reached_ns, late, 0);
}

void SendLoop::ReleaseOrSkip(surge::v1::Assignment next, int64_t reached_ns, bool late,
                             int64_t lateness_ns) {
  if (!late) {
    ReleaseAsDue(std::move(next), reached_ns, late, lateness_ns);
    return;
  }
  if (options_.prepare_lead.count() > 0) sender_.CancelPrepared(next);
  Skip(next, lateness_ns);
}

void SendLoop::ReleaseWithCatchUp(surge::v1::Assignment next, int64_t reached_ns, bool late,
                                  int64_t lateness_ns) {
  if (!late || last_release_local_ns_ == INT64_MIN ||
      last_release_local_ns_ + options_.catch_up_spacing_ns <= reached_ns) {
    ReleaseAsDue(std::move(next), reached_ns, late, lateness_ns);
    return;
  }
  if (!WaitForCatchUpGate(last_release_local_ns_ + options_.catch_up_spacing_ns)) {
    std::lock_guard<std::mutex> lock(mu_);
    PushHeap(ready_, std::move(next));  // stopped: never released
    return;
  }
  const int64_t released_ns = ToNanos(clock_.Now());
  if (released_ns > lease_expiry_ns_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    PushHeap(ready_, std::move(next));  // the lease ran out while it waited
    return;
  }
  last_release_local_ns_ = released_ns;
  Release(std::move(next), released_ns, /*late=*/true, released_ns - reached_ns);
}

void SendLoop::Run() {
  while (!stop_.load()) {
    WarmConnectionsOnce();
    // Two kinds of events: preparing the earliest unprepared assignment at
    // its deadline − lead, and releasing the earliest ready one at its
    // deadline.
    const Events ev = NextEvents();
    const int64_t now = ToNanos(clock_.Now());
    const bool prepare_may_go = PrepareMayGo(ev, now);
    if (ev.prepare_due != kNever && prepare_may_go && ev.prepare_due <= now) {
      PrepareNext();
      continue;
    }
    if (SleepTowardNextEvent(ev, prepare_may_go, now)) continue;
    ReleaseDue(ev.release_due);
  }
  // What was prepared but will not be sent gives back its reservation.
  if (options_.prepare_lead.count() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const surge::v1::Assignment& a : ready_) sender_.CancelPrepared(a);
  }
}

bool SendLoop::WaitForCatchUpGate(int64_t gate) {
  const int64_t slice =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.slice).count();
  while (!stop_.load()) {
    const int64_t now = ToNanos(clock_.Now());
    if (now >= gate) return true;
    if (gate - now > slice) {
      clock_.SleepUntilCoarse(FromNanos(std::min(gate - slice / 2, now + slice)));
    } else {
      clock_.SleepUntil(FromNanos(gate));
    }
  }
  return false;
}

void SendLoop::MarkSessionTurn(const surge::v1::Assignment& assignment,
                               surge::v1::RequestRecord& record) {
  if (!assignment.in_session()) return;
  record.set_in_session(true);
  record.set_session(assignment.session());
  record.set_turn(assignment.turn());
}

void SendLoop::Skip(const surge::v1::Assignment& assignment, int64_t lateness_ns) {
  skipped_.fetch_add(1);
  surge::v1::RequestRecord record;
  record.set_index(assignment.index());
  record.set_attempt(assignment.attempt());
  record.set_worker(options_.worker_index);
  record.set_planned_ns(assignment.offset_ns());
  record.set_max_tokens(assignment.max_tokens());
  MarkSessionTurn(assignment, record);
  SetFailure(
      record, surge::v1::SKIPPED, surge::v1::FAILURE_KIND_SKIPPED_LATE,
      absl::StrFormat(
          "skipped_late: reached %.3f ms after its planned send, more than late_threshold_ms %g "
          "(late_policy skip)",
          static_cast<double>(lateness_ns) / 1e6,
          static_cast<double>(options_.late_threshold_ns) / 1e6));
  on_record_(std::move(record));
}

void SendLoop::Release(surge::v1::Assignment assignment, int64_t released_local_ns, bool late,
                       int64_t catch_up_delay_ns) {
  int64_t t0;
  ClockMapping mapping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t0 = t0_coord_ns_;
    mapping = mapping_;
  }
  // R-REQ-2: wait for a free slot; the schedule itself is not reshaped.
  // blocked_ns is the whole time from the planned send to the slot for every
  // request the cap held back: one that waited here itself, and one that
  // fell due while the pacer was waiting here for an earlier request (it was
  // queued behind the held-back one). So lateness = blocked + the pacer's and
  // sender's own delay after the slot.
  const int64_t deadline_ns = t0 + assignment.offset_ns();
  bool held_back = deadline_ns < last_gate_wait_end_ns_;
  // The send health (the lateness alarm's input) leaves warm-ups out.
  SendHealth* health = assignment.warmup() ? nullptr : options_.health;
  int64_t hand_off_from_ns = released_local_ns;  // after a slot wait: its end
  if (options_.max_inflight > 0 && sender_.inflight() >= options_.max_inflight) {
    // Counted as the wait begins, so the next heartbeat already says why.
    if (health != nullptr) health->OnGateWait();
    if (!WaitForSlot()) {  // stopped while held back: it was never sent
      std::lock_guard<std::mutex> lock(mu_);
      PushHeap(ready_, std::move(assignment));
      return;
    }
    held_back = true;
    last_gate_wait_end_ns_ = ToNanos(clock_.Now());
    hand_off_from_ns = last_gate_wait_end_ns_;
  }
  const int64_t blocked_ns =
      held_back ? std::max<int64_t>(0, ToNanos(clock_.Now()) - deadline_ns) : 0;
  released_.fetch_add(1);
  late_.fetch_add(late ? 1 : 0);
  delayed_.fetch_add(catch_up_delay_ns > 0 ? 1 : 0);
  const int32_t worker = options_.worker_index;
  const int64_t planned_ns = assignment.offset_ns();
  const bool warmup = assignment.warmup();
  // A session turn's session and turn (plain values: no record is built on
  // the pacer's path).
  const bool in_session = assignment.in_session();
  const uint64_t session = assignment.session();
  const uint32_t turn = assignment.turn();
  // Local instants → ns after t0 on the coordinator's clock, through the
  // mapping the release used (durations stay local: a drift of 200 ppm
  // changes a 1 s duration by 0.2 ms).
  sender_.Send(assignment, [this, t0, mapping, worker, planned_ns, released_local_ns, blocked_ns,
                            late, catch_up_delay_ns, warmup, in_session, session,
                            turn](surge::v1::RequestRecord record) {
    OnCompletion();
    record.set_worker(worker);
    if (warmup) record.set_warmup(true);
    if (in_session) {
      record.set_in_session(true);
      record.set_session(session);
      record.set_turn(turn);
    }
    record.set_late(late);
    record.set_catch_up_delay_ns(catch_up_delay_ns);
    record.set_planned_ns(planned_ns);
    record.set_released(true);
    record.set_released_ns(mapping.ToCoord(released_local_ns) - t0);
    record.set_blocked_ns(blocked_ns);
    if (record.sent() || record.sent_ns() != 0) {
      record.set_sent(true);
      record.set_sent_ns(mapping.ToCoord(record.sent_ns()) - t0);
    }
    if (record.interrupted_ns() != 0) {
      record.set_interrupted_ns(mapping.ToCoord(record.interrupted_ns()) - t0);
    }
    if (record.retry_sent_ns() != 0) {
      record.set_retry_sent_ns(mapping.ToCoord(record.retry_sent_ns()) - t0);
    }
    on_record_(std::move(record));
  });
  // Lateness at the hand-off, on the local clock.
  const int64_t handed_ns = ToNanos(clock_.Now());
  if (health != nullptr) health->OnSend(handed_ns, handed_ns - mapping.ToWorker(deadline_ns));
  if (handed_ns - hand_off_from_ns >= stall_threshold_ns_) {
    slow_handoffs_.Add(handed_ns - hand_off_from_ns);
  }
}

}  // namespace surge::worker
