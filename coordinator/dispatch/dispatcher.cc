#include "coordinator/dispatch/dispatcher.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "coordinator/dispatch/clock_stamps.h"
#include "common/time_units.h"

namespace surge::coordinator {
namespace {

using surge::v1::Envelope;

constexpr auto kSweepPeriod = std::chrono::milliseconds(100);
// A sweep that starts this late means the coordinator itself stalled:
// deadlines are pushed back instead of declaring deaths (DISTRIBUTED.md §3).
constexpr auto kStallGuard = std::chrono::milliseconds(500);
// How long Goodbyes are awaited after the last record.
constexpr auto kGoodbyeWait = std::chrono::milliseconds(3000);
// Margin beyond the lease for "provably unsent" (DISTRIBUTED.md §6, ε).
constexpr int64_t kReassignMarginNs = 50 * 1000 * 1000;
// How long a live worker must report itself idle (no request in flight or
// queued, no assignment sent to it since) while still owning past-due
// requests before those are given up as lost in transit. Far above the
// worker's record flush period (50 ms) and heartbeat period (250 ms).
constexpr auto kIdleGrace = std::chrono::seconds(3);

}  // namespace

Dispatcher::Dispatcher(Clock& clock, Transport& transport, const ArrivalSchedule& plan,
                       const PayloadSource& payloads, DispatcherOptions options, RecordSink sink,
                       ExitProbe exited)
    : clock_(clock),
      transport_(transport),
      plan_(plan),
      payloads_(payloads),
      options_(std::move(options)),
      sink_(std::move(sink)),
      exited_(std::move(exited)) {
  const size_t n = plan_.size();
  state_.assign(n, State::kUnassigned);
  owner_.assign(n, -1);
  attempt_.assign(n, 0);
  offset_ns_.resize(n);
  outcome_.clocks.resize(static_cast<size_t>(std::max(options_.num_workers, 0)));
  for (size_t i = 0; i < n; ++i) offset_ns_[i] = SecondsToNanos(plan_.offset_s[i]);
}

Dispatcher::Worker* Dispatcher::FindWorker(const std::string& peer) {
  for (auto& w : workers_) {
    if (w.peer == peer) return &w;
  }
  return nullptr;
}

void Dispatcher::Send(Worker& worker, Envelope envelope) {
  envelope.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  envelope.set_run_id(options_.run_id);
  envelope.set_seq(++seq_);
  if (absl::Status s = transport_.Send(worker.peer, envelope); !s.ok()) {
    // After a stop, workers that already left are expected to be unreachable.
    if (stopping_ || stop_requests_.load() > 0 || !worker.alive) {
      LogDebug(absl::StrCat("to worker ", worker.index, ": ", s.ToString()));
    } else {
      LogWarning(absl::StrCat("to worker ", worker.index, ": ", s.ToString()));
    }
  }
}

absl::Status Dispatcher::AwaitWorkers() {
  const Clock::TimePoint give_up = clock_.Now() + options_.hello_timeout;
  Clock::TimePoint next_exit_check = clock_.Now();
  auto ready = [this] {
    return static_cast<int>(
        std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.ready; }));
  };
  // Every worker must be ready (Hello answered, first heartbeat received)
  // before t0 is fixed: start-up work (process start, DNS, TLS setup) never
  // eats into the schedule or the liveness deadlines.
  while (ready() < options_.num_workers) {
    if ((stop_requests_.load() > 0)) return absl::CancelledError("interrupted before the start");
    if (clock_.Now() >= give_up) {
      return absl::UnavailableError(absl::StrCat(
          "only ", ready(), " of ", options_.num_workers, " workers were ready (", workers_.size(),
          " connected) within ", options_.hello_timeout.count(), " ms"));
    }
    // Process checks (one waitpid per worker) every 100 ms, not per message:
    // with hundreds of workers heartbeating they would starve the loop that
    // acknowledges those heartbeats.
    if (clock_.Now() >= next_exit_check) {
      next_exit_check = clock_.Now() + kSweepPeriod;
      for (auto& w : workers_) {
        if (exited_ && exited_(w.index)) {
          return absl::UnavailableError(
              absl::StrCat("worker ", w.index, " exited before the start"));
        }
      }
    }
    auto in = transport_.Receive(std::chrono::milliseconds(10));
    if (!in.ok()) {
      OnReceiveError(in.status());
      continue;
    }
    if (!in->has_value()) continue;
    Handle((*in)->peer, (*in)->message);
  }
  return absl::OkStatus();
}

void Dispatcher::Handle(const std::string& peer, Envelope& e) {
  if (e.protocol_version() != surge::v1::PROTOCOL_VERSION_CURRENT) {
    Worker stranger;
    stranger.peer = peer;
    Envelope reject;
    reject.mutable_reject()->set_reason(absl::StrCat("protocol version ", e.protocol_version(),
                                                     " is not ",
                                                     surge::v1::PROTOCOL_VERSION_CURRENT));
    Send(stranger, std::move(reject));
    return;
  }
  Worker* w = FindWorker(peer);
  if (e.has_hello()) {
    if (w == nullptr) {
      if (t0_ns_ != 0 || static_cast<int>(workers_.size()) >= options_.num_workers) {
        Worker stranger;
        stranger.peer = peer;
        Envelope reject;
        reject.mutable_reject()->set_reason("the run has all its workers");
        Send(stranger, std::move(reject));
        return;
      }
      std::vector<bool> taken(options_.num_workers, false);
      for (const auto& other : workers_) taken[other.index] = true;
      int32_t index = e.hello().requested_index();
      if (index < 0 || index >= options_.num_workers || taken[index]) {
        index = static_cast<int32_t>(std::find(taken.begin(), taken.end(), false) - taken.begin());
      }
      Worker fresh;
      fresh.peer = peer;
      fresh.index = index;
      fresh.incarnation = e.incarnation();
      workers_.push_back(fresh);
      std::sort(workers_.begin(), workers_.end(),
                [](const Worker& a, const Worker& b) { return a.index < b.index; });
      w = FindWorker(peer);
      LogInfo(absl::StrCat("worker ", index, " connected (pid ", e.hello().pid(), ")"));
    }
    w->last_heard = clock_.Now();
    // A repeated Hello (our Welcome crossed it) gets the same Welcome again.
    Envelope welcome;
    auto* m = welcome.mutable_welcome();
    m->set_worker_index(w->index);
    m->set_heartbeat_ms(options_.heartbeat_ms);
    m->set_lease_ms(options_.lease_ms);
    *m->mutable_target() = options_.target;
    if (static_cast<size_t>(w->index) < options_.max_inflight.size()) {
      m->set_max_inflight(options_.max_inflight[w->index]);
    }
    m->set_seed(options_.seed);
    Send(*w, std::move(welcome));
    return;
  }
  if (w == nullptr) return;  // not a worker of this run: ignored
  if (!w->alive) {
    // Fenced: a worker declared dead may not take part any more.
    Envelope stop;
    stop.mutable_stop()->set_reason("fenced");
    Send(*w, std::move(stop));
    if (e.has_record_batch()) outcome_.rejected_records += e.record_batch().records_size();
    return;
  }
  w->last_heard = clock_.Now();
  if (e.has_clock_probe()) {
    Send(*w, ClockProbeReplyFor(e.clock_probe(), ToNanos(w->last_heard), clock_));
  } else if (e.has_heartbeat()) {
    const int64_t t2_ns = ToNanos(w->last_heard);
    if (e.heartbeat().has_clock()) outcome_.clocks[w->index] = e.heartbeat().clock();
    w->ready = true;
    w->inflight = e.heartbeat().inflight();
    const bool idle = e.heartbeat().inflight() == 0 && e.heartbeat().queued() == 0;
    if (idle && !w->idle) w->idle_since = clock_.Now();
    w->idle = idle;
    Envelope ack;
    StampHeartbeatAck(e.heartbeat(), t2_ns, clock_, ack.mutable_heartbeat_ack());
    Send(*w, std::move(ack));
  } else if (e.has_record_batch()) {
    for (const auto& r : e.record_batch().records()) AcceptRecord(*w, r);
  } else if (e.has_goodbye()) {
    w->said_goodbye = true;
  }
}

void Dispatcher::AcceptRecord(Worker& worker, const surge::v1::RequestRecord& record) {
  const uint64_t i = record.index();
  if (i >= state_.size() || state_[i] != State::kAssigned || owner_[i] != worker.index ||
      attempt_[i] != record.attempt()) {
    ++outcome_.rejected_records;
    return;
  }
  Finalize(record);
}

void Dispatcher::CountConnectFailure(const surge::v1::RequestRecord& r) {
  if (options_.abort_after_connect_failures == 0 || connect_rule_settled_ || stopping_) return;
  if (r.status() == surge::v1::NOT_SENT) return;  // says nothing about the target
  const std::string& e = r.error();
  auto starts = [&e](const char* p) { return e.rfind(p, 0) == 0; };
  const bool no_response = r.status() == surge::v1::FAILED && r.http_status() == 0 &&
                           (starts("connect:") || starts("tls:") || starts("connection_closed:"));
  if (!no_response) {
    connect_rule_settled_ = true;  // the target answered (or the run is past its start)
    return;
  }
  if (++connect_failures_ < options_.abort_after_connect_failures) return;
  connect_rule_settled_ = true;
  outcome_.target_unreachable = true;
  outcome_.stop_message = absl::StrCat("the first ", connect_failures_,
                                       " requests all failed without any response from the "
                                       "target (last error: ",
                                       e, "); stopped the run (--abort-after-connect-failures ",
                                       options_.abort_after_connect_failures, ", 0 = never stop)");
}

void Dispatcher::Finalize(surge::v1::RequestRecord record) {
  const uint64_t i = record.index();
  if (state_[i] == State::kAssigned && owner_[i] >= 0) {
    for (auto& w : workers_) {
      if (w.index == owner_[i] && w.outstanding > 0) --w.outstanding;
    }
  }
  state_[i] = State::kFinal;
  record.set_planned_ns(offset_ns_[i]);
  ++outcome_.records;
  sent_records_ += record.sent();
  ok_records_ += record.status() == surge::v1::OK;
  not_sent_records_ += record.status() == surge::v1::NOT_SENT;
  outcome_.send_unknown += record.status() == surge::v1::LOST;
  CountConnectFailure(record);
  sink_(record);
}

void Dispatcher::FlushPending(Worker& w, bool last) {
  if (w.pending.empty() && !last) return;
  Envelope e;
  auto* batch = e.mutable_assignment_batch();
  batch->set_assign_seq(++w.assign_seq);
  for (auto& a : w.pending) *batch->add_assignments() = std::move(a);
  batch->set_last(last);
  if (!w.pending.empty()) w.idle = false;  // its heartbeats must say idle again
  w.pending.clear();
  Send(w, std::move(e));
}

void Dispatcher::Refill(Clock::TimePoint now) {
  const int64_t horizon_ns =
      NowRelNs(now) + std::chrono::duration_cast<std::chrono::nanoseconds>(options_.lookahead).count();
  const size_t n = state_.size();
  while (true) {
    // The earliest of: the oldest taken-back request, the next new one.
    bool from_reassign = false;
    uint64_t i;
    if (!reassign_.empty() && (cursor_ >= n || offset_ns_[reassign_.front()] <= offset_ns_[cursor_])) {
      i = reassign_.front();
      from_reassign = true;
    } else if (cursor_ < n) {
      i = cursor_;
    } else {
      break;
    }
    if (offset_ns_[i] >= horizon_ns) break;
    // Round-robin over live workers with room (k6-style striping): with all
    // workers alive and no cap reached, request i goes to worker i mod W.
    Worker* target = nullptr;
    for (size_t k = 0; k < workers_.size(); ++k) {
      Worker& w = workers_[(next_worker_ + k) % workers_.size()];
      if (w.alive && w.outstanding < options_.max_outstanding_per_worker) {
        target = &w;
        next_worker_ = (next_worker_ + k + 1) % workers_.size();
        break;
      }
    }
    if (target == nullptr) break;
    surge::v1::Assignment a;
    a.set_index(i);
    a.set_offset_ns(offset_ns_[i]);
    a.set_attempt(attempt_[i]);
    FillAssignmentPayload(payloads_.At(i), &a);
    state_[i] = State::kAssigned;
    owner_[i] = static_cast<int16_t>(target->index);
    ++target->outstanding;
    target->pending.push_back(std::move(a));
    if (target->pending.size() >= options_.max_batch) FlushPending(*target, false);
    if (from_reassign) {
      reassign_.erase(reassign_.begin());
    } else {
      ++cursor_;
    }
  }
  for (auto& w : workers_) {
    if (w.alive) FlushPending(w, false);
  }
}

void Dispatcher::DeclareDead(Worker& w, Clock::TimePoint now, const std::string& why) {
  w.alive = false;
  w.pending.clear();
  ++outcome_.workers_lost;
  LogWarning(absl::StrCat("worker ", w.index, " lost: ", why));
  // DISTRIBUTED.md §6: requests planned beyond the lease are provably unsent
  // and go to the survivors with attempt + 1; the rest may have been sent and
  // are recorded as lost (at-most-once).
  const int64_t unsent_after_ns = NowRelNs(now) + static_cast<int64_t>(options_.lease_ms) * 1000000 +
                                  kReassignMarginNs;
  for (uint64_t i = 0; i < cursor_; ++i) {
    if (state_[i] != State::kAssigned || owner_[i] != w.index) continue;
    if (offset_ns_[i] > unsent_after_ns && !stopping_ && stop_requests_.load() == 0) {
      state_[i] = State::kUnassigned;
      owner_[i] = -1;
      ++attempt_[i];
      reassign_.push_back(i);
      ++outcome_.reassigned;
    } else {
      surge::v1::RequestRecord r;
      r.set_index(i);
      r.set_attempt(attempt_[i]);
      r.set_worker(w.index);
      r.set_status(surge::v1::LOST);
      r.set_error(absl::StrCat("send_unknown: worker ", w.index, " lost (", why, ")"));
      Finalize(std::move(r));
    }
  }
  w.outstanding = 0;
  std::sort(reassign_.begin(), reassign_.end(), [this](uint64_t a, uint64_t b) {
    return offset_ns_[a] != offset_ns_[b] ? offset_ns_[a] < offset_ns_[b] : a < b;
  });
}

void Dispatcher::SweepLiveness(Clock::TimePoint now) {
  for (auto& w : workers_) {
    if (!w.alive) continue;
    if (exited_ && exited_(w.index)) {
      DeclareDead(w, now, "process exited");
    } else if (now - w.last_heard > options_.dead_after) {
      DeclareDead(w, now, absl::StrCat("silent for ", options_.dead_after.count(), " ms"));
    }
  }
}

void Dispatcher::OnReceiveError(const absl::Status& status) {
  if (!absl::IsDataLoss(status)) {
    LogWarning(status.ToString());
    return;
  }
  // One line for the first; the summary gives the count (never a line per
  // frame: a broken peer could send thousands).
  if (outcome_.undecodable_frames++ == 0) {
    LogWarning(absl::StrCat("skipped an undecodable message from a worker (", status.ToString(),
                            "); further ones are counted, not logged"));
  }
}

void Dispatcher::SweepIdleOwners(Clock::TimePoint now) {
  const int64_t due_before_ns =
      NowRelNs(now) - std::chrono::duration_cast<std::chrono::nanoseconds>(kIdleGrace).count();
  for (auto& w : workers_) {
    if (!w.alive || w.outstanding == 0 || !w.idle || now - w.idle_since < kIdleGrace) continue;
    uint64_t given_up = 0;
    for (uint64_t i = 0; i < cursor_; ++i) {
      if (state_[i] != State::kAssigned || owner_[i] != w.index || offset_ns_[i] > due_before_ns) {
        continue;
      }
      surge::v1::RequestRecord r;
      r.set_index(i);
      r.set_attempt(attempt_[i]);
      r.set_worker(w.index);
      r.set_status(surge::v1::LOST);
      r.set_error(absl::StrCat("record_lost: worker ", w.index,
                               " has been idle without reporting this request"));
      Finalize(std::move(r));
      ++given_up;
    }
    if (given_up > 0) {
      outcome_.records_lost_in_transit += given_up;
      LogWarning(
          absl::StrCat("worker ", w.index, " has been idle for ",
                       std::chrono::duration_cast<std::chrono::milliseconds>(kIdleGrace).count(),
                       " ms while owning ", given_up, " requests: recorded as lost (record_lost)"));
    }
  }
}

void Dispatcher::FinishUnassigned(const std::string& reason) {
  auto not_sent = [&](uint64_t i) {
    surge::v1::RequestRecord r;
    r.set_index(i);
    r.set_attempt(attempt_[i]);
    r.set_worker(-1);
    r.set_status(surge::v1::NOT_SENT);
    r.set_error(reason);
    Finalize(std::move(r));
  };
  for (uint64_t i : reassign_) not_sent(i);
  reassign_.clear();
  for (; cursor_ < state_.size(); ++cursor_) not_sent(cursor_);
}

void Dispatcher::BeginStop(Clock::TimePoint now, const std::string& reason,
                           std::chrono::milliseconds drain) {
  stopping_ = true;
  FinishUnassigned(absl::StrCat("not_sent: ", reason));
  for (auto& w : workers_) {
    if (!w.alive) continue;
    Envelope stop;
    stop.mutable_stop()->set_reason(reason);
    stop.mutable_stop()->set_drain_ms(static_cast<uint32_t>(drain.count()));
    Send(w, std::move(stop));
  }
  // The workers cut off what is still running at the end of the drain and
  // send those records; they get cut_wait (plus the drain) to arrive.
  stop_deadline_ = now + drain + options_.cut_wait;
}

absl::StatusOr<DispatchOutcome> Dispatcher::Run() {
  if (absl::Status s = AwaitWorkers(); !s.ok()) {
    // Nothing was assigned: release the workers that did come.
    for (auto& w : workers_) {
      Envelope stop;
      stop.mutable_stop()->set_reason("start_failed");
      Send(w, std::move(stop));
    }
    return s;
  }
  const size_t n = state_.size();
  Clock::TimePoint now = clock_.Now();
  // t0 lies start_lead ahead so that the first window reaches every worker
  // before anything is due (DISTRIBUTED.md §4).
  t0_ns_ = ToNanos(now + options_.start_lead);
  outcome_.t0_ns = t0_ns_;
  Refill(now);
  for (auto& w : workers_) {
    Envelope start;
    start.mutable_start()->set_t0_coord_ns(t0_ns_);
    Send(w, std::move(start));
    w.last_heard = now;
  }
  LogInfo(absl::StrCat("started ", n, " requests on ", workers_.size(), " workers"));

  bool user_stop_seen = false;
  bool second_stop_seen = false;
  bool aborted = false;
  Clock::TimePoint last_sweep = now;
  Clock::TimePoint next_progress = now;
  while (outcome_.records < n) {
    now = clock_.Now();
    if (options_.on_progress && now >= next_progress) {
      next_progress = now + options_.progress_period;
      DispatchProgress p;
      p.elapsed_s = NanosToSeconds(NowRelNs(now));
      p.planned = n;
      p.records = outcome_.records;
      p.sent = sent_records_;
      p.ok = ok_records_;
      p.not_sent = not_sent_records_;
      p.stopping = stopping_;
      for (const auto& w : workers_) p.inflight += w.alive ? w.inflight : 0;
      p.last_planned_s = n > 0 ? NanosToSeconds(offset_ns_[n - 1]) : 0;
      options_.on_progress(p);
    }
    if (stop_requests_.load() > 0 && !user_stop_seen) {
      user_stop_seen = true;
      outcome_.interrupted = true;
      outcome_.interrupted_at_ns = NowRelNs(now);
      if (!stopping_) {
        uint64_t inflight = 0;
        for (const auto& w : workers_) inflight += w.alive ? w.inflight : 0;
        LogWarning(absl::StrFormat(
            "interrupted by the user at %.2f s: nothing more is sent; waiting up to %d s for "
            "the %d requests in flight; Ctrl-C again to cut them off now",
            NanosToSeconds(outcome_.interrupted_at_ns),
            static_cast<int>(options_.drain.count() / 1000), inflight));
        BeginStop(now, "interrupted", options_.drain);
      }
    }
    if (stopping_ && stop_requests_.load() > 1 && !second_stop_seen) {
      second_stop_seen = true;
      LogWarning(
          "second interrupt: cutting off the requests in flight (they are recorded as "
          "interrupted, with what is known of them)");
      stop_deadline_ = std::min(stop_deadline_, now + options_.cut_wait);
      for (auto& w : workers_) {
        if (!w.alive) continue;
        Envelope stop;
        stop.mutable_stop()->set_reason("interrupted");
        stop.mutable_stop()->set_drain_ms(0);
        Send(w, std::move(stop));
      }
    }
    if (outcome_.target_unreachable && !stopping_) {
      LogError(absl::StrCat("target unreachable: ", outcome_.stop_message));
      BeginStop(now, "target_unreachable", std::chrono::milliseconds(0));
    }
    // Up to 4096 messages per turn, each one handled once it is taken (the
    // turn ends before a receive, never with a message taken and dropped).
    auto in = transport_.Receive(std::chrono::milliseconds(5));
    for (int k = 1;; ++k) {
      if (in.ok()) {
        if (!in->has_value()) break;
        Handle((*in)->peer, (*in)->message);
      } else {
        // An undecodable frame is skipped: the frames behind it still count.
        OnReceiveError(in.status());
        if (!absl::IsDataLoss(in.status())) break;
      }
      if (k >= 4096) break;
      in = transport_.Receive(std::chrono::milliseconds(0));
    }
    now = clock_.Now();
    if (now - last_sweep >= kSweepPeriod) {
      if (now - last_sweep > kStallGuard) {
        const auto lag = now - last_sweep;
        for (auto& w : workers_) w.last_heard += lag;
      }
      last_sweep = now;
      if (!stopping_) {
        SweepLiveness(now);
        SweepIdleOwners(now);
      }
    }
    const bool any_alive =
        std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.alive; });
    if (!any_alive) {
      aborted = true;
      FinishUnassigned("not_sent: no_worker_left");
      break;
    }
    if (!stopping_) Refill(now);
    if (stopping_ && now >= stop_deadline_) break;
  }
  // Anything still open (the wait after a stop ended) has no record: its
  // worker is alive but said nothing in time. After a stop that is an
  // interrupted request of which nothing is known; otherwise lost.
  for (uint64_t i = 0; i < n; ++i) {
    if (state_[i] == State::kFinal) continue;
    surge::v1::RequestRecord r;
    r.set_index(i);
    r.set_attempt(attempt_[i]);
    r.set_worker(owner_[i]);
    if (state_[i] != State::kAssigned) {
      r.set_status(surge::v1::NOT_SENT);
      r.set_error("not_sent: run_ended");
    } else if (stopping_) {
      r.set_status(surge::v1::INTERRUPTED);
      r.set_error("interrupted: no_record");
    } else {
      r.set_status(surge::v1::LOST);
      r.set_error("lost: no_record_before_drain_deadline");
    }
    Finalize(std::move(r));
  }
  // Release the workers and wait briefly for their Goodbyes.
  for (auto& w : workers_) {
    if (!w.alive) continue;
    Envelope stop;
    stop.mutable_stop()->set_reason(stopping_ ? "interrupted" : "done");
    Send(w, std::move(stop));
  }
  const Clock::TimePoint goodbye_deadline = clock_.Now() + kGoodbyeWait;
  while (clock_.Now() < goodbye_deadline &&
         std::any_of(workers_.begin(), workers_.end(),
                     [this](const Worker& w) { return w.alive && !w.said_goodbye && !(exited_ && exited_(w.index)); })) {
    auto in = transport_.Receive(std::chrono::milliseconds(10));
    if (in.ok() && in->has_value()) Handle((*in)->peer, (*in)->message);
    if (!in.ok()) OnReceiveError(in.status());
  }
  if (aborted) {
    return absl::AbortedError(absl::StrCat("every worker was lost; ", outcome_.records,
                                           " records written"));
  }
  return outcome_;
}

}  // namespace surge::coordinator
