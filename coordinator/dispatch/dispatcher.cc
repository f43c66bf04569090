#include "coordinator/dispatch/dispatcher.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/failure_kind.h"
#include "common/log.h"
#include "common/time_units.h"
#include "coordinator/dispatch/clock_stamps.h"

namespace surge::coordinator {
namespace {

using surge::v1::Envelope;

// How long Goodbyes are awaited after the last record.
constexpr auto kGoodbyeWait = std::chrono::milliseconds(3000);
// Process checks while waiting for the workers (the liveness sweep's period).
constexpr auto kExitCheckPeriod = std::chrono::milliseconds(100);
// During the join wait a worker not heard for this long (more than its 250 ms
// heartbeat period) is pinged at each sweep: a closed connection shows at once.
constexpr auto kProbeAfter = std::chrono::milliseconds(300);

// The ledger's slots: the warm-ups (before t0), then the plan.
std::vector<int64_t> PlannedOffsetsNs(const ArrivalSchedule& plan,
                                      const std::vector<int64_t>& warmup_offsets_ns) {
  std::vector<int64_t> offsets(warmup_offsets_ns);
  offsets.reserve(warmup_offsets_ns.size() + plan.size());
  for (size_t i = 0; i < plan.size(); ++i) offsets.push_back(SecondsToNanos(plan.offset_s[i]));
  return offsets;
}

WorkerRegistryOptions RegistryOptions(const DispatcherOptions& options) {
  WorkerRegistryOptions r;
  r.num_workers = options.num_workers;
  r.dead_after = options.dead_after;
  return r;
}

}  // namespace

Dispatcher::Dispatcher(Clock& clock, Transport& transport, const ArrivalSchedule& plan,
                       const PayloadSource& payloads, DispatcherOptions options, RecordSink sink,
                       WorkerPool* pool)
    : clock_(clock),
      transport_(transport),
      payloads_(payloads),
      options_(std::move(options)),
      sink_(std::move(sink)),
      exited_(pool == nullptr ? WorkerRegistry::ExitProbe()
                              : [pool](int32_t index) { return pool->Exited(index); }),
      ledger_(PlannedOffsetsNs(plan, options_.warmup_offsets_ns), options_.num_workers,
              options_.warmup_offsets_ns.size()),
      registry_(RegistryOptions(options_)),
      policy_(MakeAssignmentPolicy(options_.assign)),
      outboxes_(static_cast<size_t>(std::max(options_.num_workers, 0))),
      lateness_(options_.num_workers, options_.lateness),
      alarm_log_(clock, options_.alarm_log_interval, options_.log_writer) {
  outcome_.clocks.resize(static_cast<size_t>(std::max(options_.num_workers, 0)));
  if (options_.saturation) saturation_.emplace(*options_.saturation);
  if (!options_.session_turns.empty()) {
    ledger_.SetSessions(std::move(options_.session_turns), std::move(options_.session_think_ns));
  }
}

void Dispatcher::Send(const Worker& worker, Envelope envelope) {
  SendTo(worker.peer, worker.index, worker.alive, std::move(envelope));
}

void Dispatcher::SendTo(const std::string& peer, int32_t index, bool alive, Envelope envelope) {
  envelope.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  envelope.set_run_id(options_.run_id);
  envelope.set_seq(++seq_);
  if (absl::Status s = transport_.Send(peer, envelope); !s.ok()) {
    // After a stop, workers that already left are expected to be unreachable.
    // A worker that is gone but not yet declared dead fails every send until
    // it is: one line per worker, the rest at debug level.
    const bool first = index >= 0 && send_failures_logged_.insert(index).second;
    if (stopping_ || stop_requests_.load() > 0 || !alive || !first) {
      LogDebug(absl::StrCat("to worker ", index, ": ", s.ToString()));
    } else {
      LogWarning(absl::StrCat("to worker ", index, ": ", s.ToString(),
                              " (further failures to this worker are not logged)"));
    }
  }
}

absl::Status Dispatcher::AwaitWorkers() {
  const Clock::TimePoint give_up = clock_.Now() + options_.hello_timeout;
  Clock::TimePoint next_exit_check = clock_.Now();
  registry_.BeginWait(clock_.Now());
  // Every worker must be ready (Hello answered, first heartbeat received)
  // before t0 is fixed: start-up work (process start, DNS, TLS setup) never
  // eats into the schedule or the liveness deadlines. Membership holds
  // until the start: a worker that goes silent or unreachable meanwhile is
  // dropped and its slot goes to the next one that joins, and the last check
  // (every worker pinged) is made just before t0.
  while (true) {
    if ((stop_requests_.load() > 0)) return absl::CancelledError("interrupted before the start");
    const Clock::TimePoint now = clock_.Now();
    if (now >= give_up) {
      return absl::UnavailableError(absl::StrCat("only ", registry_.ready_count(), " of ",
                                                 options_.num_workers, " workers were ready (",
                                                 registry_.workers().size(), " connected) within ",
                                                 options_.hello_timeout.count(), " ms"));
    }
    // Process checks (one waitpid per worker) every 100 ms, not per message:
    // with hundreds of workers heartbeating they would starve the loop that
    // acknowledges those heartbeats. A local worker has no replacement.
    if (now >= next_exit_check) {
      next_exit_check = now + kExitCheckPeriod;
      for (const auto& w : registry_.workers()) {
        if (exited_ && exited_(w.index)) {
          return absl::UnavailableError(
              absl::StrCat("worker ", w.index, " exited before the start"));
        }
      }
    }
    if (registry_.BeginSweep(now)) DropGone(now, /*probe_all=*/false);
    if (registry_.ready_count() >= options_.num_workers && DropGone(now, /*probe_all=*/true) == 0) {
      return CheckWorkersReachTarget();
    }
    auto in = transport_.Receive(clock_.Now() + std::chrono::milliseconds(10));
    if (!in.ok()) {
      OnReceiveError(in.status());
      continue;
    }
    if (!in->has_value()) continue;
    Handle(**in);
  }
}

bool Dispatcher::Reachable(const Worker& w) {
  Envelope ping;
  ping.mutable_ping();
  ping.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  ping.set_run_id(options_.run_id);
  ping.set_seq(++seq_);
  // Before the start nothing fills a worker's send queue: a refused send
  // means the transport no longer knows the peer (its connection closed).
  return transport_.Send(w.peer, ping).ok();
}

absl::Status Dispatcher::CheckWorkersReachTarget() {
  std::vector<std::string> cannot;
  for (const Worker& w : registry_.workers()) {
    if (w.target_error.empty()) continue;
    cannot.push_back(
        absl::StrCat("worker ", w.index, " (", WorkerRegistry::Describe(w), "): ", w.target_error));
  }
  if (cannot.empty()) return absl::OkStatus();
  const std::string who = absl::StrJoin(cannot, "; ");
  if (options_.allow_unreachable_workers) {
    LogWarning(absl::StrCat("starting anyway (--allow-unreachable-workers) with ", cannot.size(),
                            " of ", options_.num_workers,
                            " workers that cannot connect to the target; their requests will "
                            "fail: ",
                            who));
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat(
      cannot.size(), " of ", options_.num_workers,
      " workers cannot connect to the target from their host, so the run does not start "
      "(nothing was sent; fix their network or --base-url, or --allow-unreachable-workers to "
      "start anyway): ",
      who));
}

int Dispatcher::DropGone(Clock::TimePoint now, bool probe_all) {
  std::vector<WorkerRegistry::Death> gone = registry_.FindGoneBeforeStart(now);
  for (const int32_t index :
       registry_.QuietFor(now, probe_all ? std::chrono::milliseconds(0) : kProbeAfter)) {
    const bool listed =
        std::any_of(gone.begin(), gone.end(), [index](const auto& d) { return d.index == index; });
    if (!listed && !Reachable(*registry_.ByIndex(index))) {
      gone.push_back({index, "unreachable (its connection is gone)"});
    }
  }
  for (const WorkerRegistry::Death& d : gone) {
    const std::string who = WorkerRegistry::Describe(*registry_.ByIndex(d.index));
    registry_.Leave(d.index);
    // A worker that has joined but not finished its setup is not missing.
    const int32_t missing = options_.num_workers - static_cast<int32_t>(registry_.workers().size());
    outcome_.left_before_start.push_back({d.index, who, d.why, ToNanos(now), missing});
    outcome_.clocks[d.index] = surge::v1::ClockReport();
    send_failures_logged_.erase(d.index);
    LogWarning(absl::StrCat("worker ", d.index, " (", who, ") left before the start (", d.why,
                            "); waiting for ", missing, " more"));
  }
  return static_cast<int>(gone.size());
}

void Dispatcher::AnswerLeft(WorkerRegistry::Left& left) {
  // It may take no part any more; a worker that hears this exits saying so.
  SendTo(left.peer, -1, false, StopEnvelope("fenced", std::chrono::milliseconds(0)));
  if (left.told) return;
  left.told = true;
  LogWarning(absl::StrCat("worker ", left.index, " (", left.who,
                          ") spoke again after it was dropped before the start: told to stop"));
}

void Dispatcher::HandleHello(const Inbound& in, Clock::TimePoint now) {
  const Envelope& e = in.message;
  bool fresh = false;
  Worker* w = registry_.Join(in.peer, e.incarnation(), e.hello().requested_index(), now, &fresh);
  if (w == nullptr) {
    Envelope reject;
    const bool started = registry_.started();
    reject.mutable_reject()->set_reason(
        started
            ? "the run has already started without this worker (it joined too late)"
            : absl::StrCat("the run has all the ", options_.num_workers, " workers it expects"));
    reject.mutable_reject()->set_kind(started ? surge::v1::REJECT_RUN_STARTED
                                              : surge::v1::REJECT_RUN_FULL);
    SendTo(in.peer, -1, true, std::move(reject));
    return;
  }
  if (fresh) {
    w->address = in.address;
    w->host = e.hello().host();
    w->pid = e.hello().pid();
    LogInfo(absl::StrCat("worker ", w->index, " connected (pid ", w->pid, ")",
                         w->address.empty() ? "" : absl::StrCat(" from ", w->address),
                         w->host.empty() ? "" : absl::StrCat(", host ", w->host)));
  }
  // A repeated Hello (our Welcome crossed it) gets the same Welcome again.
  Envelope welcome;
  auto* m = welcome.mutable_welcome();
  m->set_worker_index(w->index);
  m->set_heartbeat_ms(options_.heartbeat_ms);
  m->set_lease_ms(options_.lease_ms);
  *m->mutable_target() = options_.target;
  if (!options_.worker_api_key.empty()) m->set_api_key(options_.worker_api_key);
  if (static_cast<size_t>(w->index) < options_.max_inflight.size()) {
    m->set_max_inflight(options_.max_inflight[w->index]);
  }
  if (static_cast<size_t>(w->index) < options_.max_sessions.size()) {
    m->set_max_sessions(options_.max_sessions[w->index]);
  }
  m->set_seed(options_.seed);
  m->set_num_workers(options_.num_workers);
  m->set_late_policy(options_.late_policy);
  m->set_late_threshold_ns(options_.late_threshold_ns);
  if (options_.late_policy == surge::v1::LATE_POLICY_CAP && options_.num_workers > 0) {
    m->set_catch_up_rps(options_.catch_up_rps / options_.num_workers);
  }
  Send(*w, std::move(welcome));
}

void Dispatcher::Handle(Inbound& in) {
  const std::string& peer = in.peer;
  Envelope& e = in.message;
  if (e.protocol_version() != surge::v1::PROTOCOL_VERSION_CURRENT) {
    Envelope reject;
    const std::string why =
        absl::StrCat("the worker speaks protocol version ", e.protocol_version(),
                     ", this coordinator speaks version ", surge::v1::PROTOCOL_VERSION_CURRENT,
                     ": run the same surge release on both sides");
    reject.mutable_reject()->set_reason(why);
    reject.mutable_reject()->set_kind(surge::v1::REJECT_PROTOCOL_VERSION);
    LogWarning(absl::StrCat("refused a worker: ", why));
    SendTo(peer, -1, true, std::move(reject));
    return;
  }
  if (WorkerRegistry::Left* left = registry_.FindLeft(peer)) {
    AnswerLeft(*left);
    return;
  }
  const Clock::TimePoint now = clock_.Now();
  if (e.has_hello()) {
    HandleHello(in, now);
    return;
  }
  Worker* w = registry_.Find(peer);
  if (w == nullptr) return;  // not a worker of this run: ignored
  if (!w->alive) {
    if (e.has_goodbye()) {
      // Its last word: nothing to tell it. Whether it counts as fenced
      // depends on why it left (fenced_count).
      registry_.OnGoodbye(*w, e.goodbye().reason());
      return;
    }
    // Fenced: a worker declared dead may not take part any more. The ledger
    // refuses its records (it holds nothing now) and counts them.
    Send(*w, StopEnvelope("fenced", std::chrono::milliseconds(0)));
    if (!w->fenced_told) {
      w->fenced_told = true;
      LogWarning(absl::StrCat("worker ", w->index,
                              " spoke again after it was declared dead: told to stop (fenced); "
                              "its records for requests it no longer owns are refused"));
    }
    if (e.has_record_batch()) {
      for (const auto& r : e.record_batch().records()) {
        if (auto accepted = ledger_.Accept(w->index, r)) Deliver(std::move(*accepted));
      }
    }
    return;
  }
  registry_.Heard(*w, now);
  if (e.has_clock_probe()) {
    Send(*w, ClockProbeReplyFor(e.clock_probe(), ToNanos(now), clock_));
  } else if (e.has_heartbeat()) {
    if (e.heartbeat().has_clock()) outcome_.clocks[w->index] = e.heartbeat().clock();
    Envelope ack;
    *ack.mutable_heartbeat_ack() = registry_.OnHeartbeat(*w, e.heartbeat(), now);
    // t3 as late as possible (clock_stamps.h).
    StampHeartbeatAck(e.heartbeat(), ToNanos(now), clock_, ack.mutable_heartbeat_ack());
    Send(*w, std::move(ack));
    // After the ack, which renews the lease: the monitor may log.
    // Not before t0: the warm-ups are not the schedule the monitor judges.
    if (e.heartbeat().has_send_health() && t0_ns_ != 0 && NowRelNs(now) >= 0) {
      ObserveLateness(*w, e.heartbeat(), now);
    }
  } else if (e.has_record_batch()) {
    for (const auto& r : e.record_batch().records()) {
      if (auto accepted = ledger_.Accept(w->index, r)) Deliver(std::move(*accepted));
    }
  } else if (e.has_hand_back()) {
    OnHandBack(*w, e.hand_back(), now);
  } else if (e.has_goodbye()) {
    OnGoodbye(*w, e.goodbye(), now);
  }
}

void Dispatcher::OnHandBack(Worker& w, const surge::v1::HandBack& hand_back, Clock::TimePoint now) {
  std::vector<RequestLedger::HandedBack> requests;
  requests.reserve(hand_back.requests_size() + outboxes_[w.index].pending.size());
  for (const auto& r : hand_back.requests()) requests.push_back({r.index(), r.attempt()});
  // Assigned to it but never sent: the same as handed back.
  for (const auto& a : outboxes_[w.index].pending) requests.push_back({a.index(), a.attempt()});
  outboxes_[w.index].pending.clear();
  const bool first = !w.leaving;
  w.leaving = true;
  w.leaving_reason = hand_back.reason();
  const std::string why = hand_back.reason().empty() ? "stopped" : hand_back.reason();
  const RequestLedger::TakeBackCounts counts =
      ledger_.HandBack(w.index, requests, NowRelNs(now), !stopping_ && stop_requests_.load() == 0,
                       why, [this](surge::v1::RequestRecord r) { Deliver(std::move(r)); });
  outcome_.handed_back += counts.reassigned + counts.not_sent;
  if (first) {
    ++outcome_.workers_left;
    LogInfo(absl::StrFormat(
        "worker %d (%s) is leaving (%s) at %.2f s: %d requests handed back (%d reassigned, %d "
        "not sent: already due); it finishes its %d in flight",
        w.index, WorkerRegistry::Describe(w), why, NanosToSeconds(NowRelNs(now)),
        counts.reassigned + counts.not_sent, counts.reassigned, counts.not_sent,
        ledger_.outstanding(w.index)));
  }
}

void Dispatcher::OnGoodbye(Worker& w, const surge::v1::Goodbye& goodbye, Clock::TimePoint now) {
  registry_.OnGoodbye(w, goodbye.reason());
  if (!w.leaving || !registry_.started()) return;
  if (ledger_.outstanding(w.index) > 0) {
    DeclareDead(w, now,
                absl::StrCat("left (", w.leaving_reason, ") with ", ledger_.outstanding(w.index),
                             " requests unreported"));
    return;
  }
  registry_.MarkDead(w);
  LogInfo(absl::StrFormat("worker %d left (%s) at %.2f s; every request it held is recorded",
                          w.index, w.leaving_reason, NanosToSeconds(NowRelNs(now))));
}

void Dispatcher::ObserveLateness(const Worker& w, const surge::v1::Heartbeat& hb,
                                 Clock::TimePoint now) {
  std::optional<LatenessAlarm> alarm = lateness_.Observe(w.index, hb.send_health(), NowRelNs(now));
  if (!alarm) return;
  // One line per interval, with the count of the reports it stands for.
  alarm_log_.Write(LogLevel::kWarning, "lateness", alarm->text);
  if (alarm->first && options_.stop_on_alarm && !stopping_ && !outcome_.stopped_on_alarm) {
    outcome_.stopped_on_alarm = true;
    outcome_.stop_message =
        absl::StrFormat("worker %d fell behind its schedule at t=%.2f s (%s)", alarm->worker,
                        NanosToSeconds(alarm->at_ns), alarm->diagnosis.text);
  }
}

void Dispatcher::CountConnectFailure(const surge::v1::RequestRecord& r) {
  if (options_.abort_after_connect_failures == 0 || connect_rule_settled_ || stopping_) return;
  if (r.status() == surge::v1::NOT_SENT) return;  // says nothing about the target
  const std::string& e = r.error();
  const surge::v1::FailureKind kind = FailureKindOf(r);
  const bool no_response =
      r.status() == surge::v1::FAILED && r.http_status() == 0 &&
      (kind == surge::v1::FAILURE_KIND_CONNECT || kind == surge::v1::FAILURE_KIND_TLS ||
       kind == surge::v1::FAILURE_KIND_CONNECTION_CLOSED);
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

void Dispatcher::Deliver(surge::v1::RequestRecord record) {
  if (record.warmup()) {
    ++outcome_.warmup_records;  // in no count of the run; the connect rule still sees it
  } else {
    // The plan's length and the counter that sized the prompt: the
    // coordinator's to say (docs/DATASETS.md "Token counters").
    // A session's turns share its plan request (docs/SESSIONS.md); the
    // sizing said is its first turn's.
    const uint64_t p = record.in_session() ? record.session() : record.index();
    if (p < ledger_.plan_size()) {
      if (!record.in_session() || record.turn() == 0) {
        const PromptSizing sizing = payloads_.Sizing(p);
        record.set_asked_input_tokens(sizing.asked_input_tokens);
        record.set_token_counter(sizing.counter);
      }
      // Its traffic class and the model the class named (docs/TRAFFIC.md).
      if (const TrafficClassTag* tag = payloads_.ClassOf(p); tag != nullptr) {
        record.set_traffic_class(tag->name);
        record.set_model(tag->model);
      }
    }
    ++outcome_.records;
    outcome_.send_unknown += record.status() == surge::v1::LOST;
    if (saturation_ && record.sent() && record.ttft_ns() > 0) {
      saturation_->ObserveTtft(NanosToSeconds(record.sent_ns()), NanosToSeconds(record.ttft_ns()));
    }
  }
  CountConnectFailure(record);
  sink_(record);
}

void Dispatcher::FlushPending(Worker& w, bool last) {
  Outbox& out = outboxes_[w.index];
  if (out.pending.empty() && !last) return;
  Envelope e;
  auto* batch = e.mutable_assignment_batch();
  batch->set_assign_seq(++out.assign_seq);
  for (auto& a : out.pending) *batch->add_assignments() = std::move(a);
  batch->set_last(last);
  if (!out.pending.empty()) registry_.OnAssignmentsSent(w);
  out.pending.clear();
  Send(w, std::move(e));
}

void Dispatcher::Refill(Clock::TimePoint now) {
  const int64_t horizon_ns =
      NowRelNs(now) +
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.lookahead).count();
  std::vector<Worker>& workers = registry_.workers();
  loads_.resize(workers.size());
  for (size_t k = 0; k < workers.size(); ++k) {
    loads_[k] =
        WorkerLoad{workers[k].alive && !workers[k].leaving, ledger_.outstanding(workers[k].index),
                   options_.max_outstanding_per_worker, workers[k].inflight};
  }
  // The earliest due request (taken-back ones first on a tie) to the worker
  // the policy picks, until the window or every worker's room is full.
  while (const std::optional<uint64_t> i = ledger_.NextDue(horizon_ns)) {
    const std::optional<size_t> pos = policy_->Pick(loads_);
    if (!pos) break;
    Worker& target = workers[*pos];
    surge::v1::Assignment a;
    a.set_index(ledger_.WireIndex(*i));
    a.set_offset_ns(ledger_.offset_ns(*i));
    a.set_attempt(ledger_.Assign(*i, target.index));
    if (ledger_.is_warmup(*i)) {
      // Without payloads of their own: the plan's, from the top.
      FillAssignmentPayload(options_.warmup_payloads != nullptr
                                ? options_.warmup_payloads->At(*i)
                                : payloads_.At(*i % std::max<size_t>(ledger_.plan_size(), 1)),
                            &a);
      a.set_warmup(true);
    } else {
      const uint64_t p = *i - ledger_.num_warmups();
      FillAssignmentPayload(payloads_.At(p), &a);
      if (ledger_.has_sessions()) {
        a.set_in_session(true);
        a.set_session(p);
        if (options_.add_session_turns) options_.add_session_turns(p, a);
      }
    }
    ++loads_[*pos].outstanding;
    Outbox& out = outboxes_[target.index];
    out.pending.push_back(std::move(a));
    if (out.pending.size() >= options_.max_batch) FlushPending(target, false);
  }
  for (auto& w : workers) {
    if (w.alive) FlushPending(w, false);
  }
}

void Dispatcher::DeclareDead(Worker& w, Clock::TimePoint now, const std::string& why) {
  registry_.MarkDead(w);
  outboxes_[w.index].pending.clear();
  ++outcome_.workers_lost;
  LogWarning(absl::StrCat("worker ", w.index, " lost: ", why));
  // The worker releases nothing past its lease (its last
  // heartbeat + lease_ms, checked by its pacer at every release), and a
  // process that has exited releases nothing after now. Requests planned
  // later are provably unsent: those still ahead go to the survivors with
  // attempt + 1, those already due end not_sent (never a late burst). The
  // rest may have been sent: lost send_unknown (at-most-once). Nothing is
  // reassigned after a stop.
  const int64_t now_ns = NowRelNs(now);
  const int64_t lease_end_ns =
      NowRelNs(w.last_heard) + static_cast<int64_t>(options_.lease_ms) * 1000000;
  const RequestLedger::TakeBackCounts counts =
      ledger_.TakeBack(w.index, std::min(lease_end_ns, now_ns) + RequestLedger::kReassignMarginNs,
                       now_ns, !stopping_ && stop_requests_.load() == 0, why,
                       [this](surge::v1::RequestRecord r) { Deliver(std::move(r)); });
  outcome_.worker_losses.push_back(
      {w.index, now_ns, why, counts.lost, counts.not_sent, counts.reassigned});
}

void Dispatcher::SweepLiveness(Clock::TimePoint now) {
  for (const WorkerRegistry::Death& d : registry_.FindDead(now, exited_)) {
    DeclareDead(*registry_.ByIndex(d.index), now, d.why);
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
  const auto grace = registry_.options().idle_grace;
  const int64_t due_before_ns =
      NowRelNs(now) - std::chrono::duration_cast<std::chrono::nanoseconds>(grace).count();
  for (const int32_t index : registry_.IdleFor(now)) {
    if (ledger_.outstanding(index) == 0) continue;
    const uint64_t given_up = ledger_.GiveUpIdle(
        index, due_before_ns, [this](surge::v1::RequestRecord r) { Deliver(std::move(r)); });
    if (given_up > 0) {
      outcome_.records_lost_in_transit += given_up;
      LogWarning(absl::StrCat("worker ", index, " has been idle for ", grace.count(),
                              " ms while owning ", given_up,
                              " requests: recorded as lost (record_lost)"));
    }
  }
}

void Dispatcher::FinishUnassigned(const std::string& reason) {
  ledger_.CloseUnassigned(reason, [this](surge::v1::RequestRecord r) { Deliver(std::move(r)); });
}

Envelope Dispatcher::StopEnvelope(const std::string& reason, std::chrono::milliseconds drain) {
  Envelope stop;
  stop.mutable_stop()->set_reason(reason);
  stop.mutable_stop()->set_drain_ms(static_cast<uint32_t>(drain.count()));
  return stop;
}

void Dispatcher::StopWorkers(const std::string& reason, std::chrono::milliseconds drain,
                             bool alive_only) {
  for (auto& w : registry_.workers()) {
    if (alive_only && !w.alive) continue;
    Send(w, StopEnvelope(reason, drain));
  }
}

void Dispatcher::BeginStop(Clock::TimePoint now, const std::string& reason,
                           std::chrono::milliseconds drain) {
  stopping_ = true;
  FinishUnassigned(absl::StrCat("not_sent: ", reason));
  StopWorkers(reason, drain, /*alive_only=*/true);
  // The workers cut off what is still running at the end of the drain and
  // send those records; they get cut_wait (plus the drain) to arrive.
  stop_deadline_ = now + drain + options_.cut_wait;
}

std::optional<Dispatcher::StopOrder> Dispatcher::UserStopRule(Clock::TimePoint now) {
  if (stop_requests_.load() == 0 || user_stop_seen_) return std::nullopt;
  user_stop_seen_ = true;
  outcome_.interrupted = true;
  outcome_.interrupted_at_ns = NowRelNs(now);
  outcome_.terminated = terminate_requested_.load();
  if (stopping_) return std::nullopt;  // already stopping for another cause
  const std::chrono::milliseconds drain =
      outcome_.terminated ? options_.terminate_drain : options_.drain;
  LogWarning(absl::StrFormat(
      "%s at %.2f s: nothing more is sent; waiting up to %d s for the %d requests in flight; "
      "%s again to cut them off now",
      outcome_.terminated ? "stopped (SIGTERM)" : "interrupted by the user",
      NanosToSeconds(outcome_.interrupted_at_ns), static_cast<int>(drain.count() / 1000),
      registry_.inflight(), outcome_.terminated ? "SIGTERM" : "Ctrl-C"));
  return StopOrder{"interrupted", drain, std::nullopt, /*cut_off=*/false};
}

std::optional<Dispatcher::StopOrder> Dispatcher::SecondStopRule(Clock::TimePoint) {
  if (!stopping_ || stop_requests_.load() <= 1 || second_stop_seen_) return std::nullopt;
  second_stop_seen_ = true;
  LogWarning(
      "second interrupt: cutting off the requests in flight (they are recorded as "
      "interrupted, with what is known of them)");
  return StopOrder{"interrupted", std::chrono::milliseconds(0), std::nullopt, /*cut_off=*/true};
}

std::optional<Dispatcher::StopOrder> Dispatcher::AlarmStopRule(Clock::TimePoint now) {
  if (!outcome_.stopped_on_alarm || stopping_) return std::nullopt;
  LogError(absl::StrFormat(
      "stopping the run (--stop-on-alarm): %s; nothing more is sent, the %d requests in "
      "flight are cut off after %.1f s and their records awaited up to %.1f s",
      outcome_.stop_message, registry_.inflight(),
      static_cast<double>(options_.alarm_drain.count()) / 1000,
      static_cast<double>(options_.alarm_record_wait.count()) / 1000));
  return StopOrder{"lateness_alarm", options_.alarm_drain,
                   now + std::max(options_.alarm_record_wait, options_.alarm_drain),
                   /*cut_off=*/false};
}

std::optional<Dispatcher::StopOrder> Dispatcher::SaturationStopRule(Clock::TimePoint now) {
  if (!saturation_ || stopping_ || !registry_.started()) return std::nullopt;
  if (NowRelNs(now) >= 0 && now - saturation_fed_ >= options_.progress_period) {
    saturation_fed_ = now;
    saturation_->ObserveInflight(NanosToSeconds(NowRelNs(now)),
                                 static_cast<double>(registry_.inflight()));
  }
  if (now - saturation_checked_ < std::chrono::seconds(1)) return std::nullopt;
  saturation_checked_ = now;
  const std::optional<SaturationFinding> found = saturation_->Check(NanosToSeconds(NowRelNs(now)));
  if (!found) return std::nullopt;
  outcome_.saturated = true;
  outcome_.saturated_at_ns = NowRelNs(now);
  outcome_.stop_message = found->text;
  LogWarning(absl::StrFormat(
      "stopping the run (--stop-on-saturation): %s; nothing more is sent, the %d requests in "
      "flight are cut off and their records awaited up to %.1f s",
      found->text, registry_.inflight(),
      static_cast<double>(options_.alarm_record_wait.count()) / 1000));
  return StopOrder{"saturated", std::chrono::milliseconds(0), now + options_.alarm_record_wait,
                   /*cut_off=*/false};
}

std::optional<Dispatcher::StopOrder> Dispatcher::UnreachableStopRule(Clock::TimePoint) {
  if (!outcome_.target_unreachable || stopping_) return std::nullopt;
  LogError(absl::StrCat("target unreachable: ", outcome_.stop_message));
  return StopOrder{"target_unreachable", std::chrono::milliseconds(0), std::nullopt,
                   /*cut_off=*/false};
}

void Dispatcher::ApplyStopRules(Clock::TimePoint now) {
  // In this order: a rule sees the stop an earlier one began in this turn.
  using StopRule = std::optional<StopOrder> (Dispatcher::*)(Clock::TimePoint);
  static constexpr StopRule kStopRules[] = {
      &Dispatcher::UserStopRule, &Dispatcher::SecondStopRule, &Dispatcher::AlarmStopRule,
      &Dispatcher::UnreachableStopRule, &Dispatcher::SaturationStopRule};
  for (const StopRule rule : kStopRules) {
    const std::optional<StopOrder> order = (this->*rule)(now);
    if (!order) continue;
    if (order->cut_off) {
      stop_deadline_ = std::min(stop_deadline_, now + options_.cut_wait);
      StopWorkers(order->reason, order->drain, /*alive_only=*/true);
      continue;
    }
    BeginStop(now, order->reason, order->drain);
    if (order->records_by) stop_deadline_ = *order->records_by;
  }
}

void Dispatcher::ReportProgress(Clock::TimePoint now) {
  const size_t n = ledger_.size();
  DispatchProgress p;
  p.elapsed_s = NanosToSeconds(NowRelNs(now));
  p.t0_ns = t0_ns_;
  p.planned = ledger_.plan_records();
  p.stopping = stopping_;
  p.inflight = registry_.inflight();
  p.last_planned_s = ledger_.plan_size() > 0 ? NanosToSeconds(ledger_.offset_ns(n - 1)) : 0;
  p.lateness = lateness_.latest();
  p.behind = !lateness_.verdict().kept;
  for (const Worker& w : registry_.workers()) {
    if (static_cast<size_t>(w.index) >= p.worker_sent_total.size()) {
      p.worker_sent_total.resize(static_cast<size_t>(w.index) + 1, 0);
    }
    p.worker_sent_total[w.index] = w.sent_total;
    if (w.alive && w.window_ns > 0) {
      p.window_send_rate_rps += static_cast<double>(w.window_sends) / NanosToSeconds(w.window_ns);
    }
  }
  options_.on_progress(p);
}

void Dispatcher::ReceiveTurn() {
  // Up to 4096 messages per turn, each one handled once it is taken (the
  // turn ends before a receive, never with a message taken and dropped).
  auto in = transport_.Receive(clock_.Now() + std::chrono::milliseconds(5));
  for (int k = 1;; ++k) {
    if (in.ok()) {
      if (!in->has_value()) break;
      Handle(**in);
    } else {
      // An undecodable frame is skipped: the frames behind it still count.
      OnReceiveError(in.status());
      if (!absl::IsDataLoss(in.status())) break;
    }
    if (k >= 4096) break;
    in = transport_.Receive(clock_.Now());
  }
}

void Dispatcher::StartRun() {
  const Clock::TimePoint now = clock_.Now();
  // t0 lies start_lead ahead so that the first window reaches every worker
  // before anything is due, and the warm-ups' lead further.
  const int64_t warmup_lead_ns =
      options_.warmup_offsets_ns.empty() ? 0 : -options_.warmup_offsets_ns.front();
  t0_ns_ = ToNanos(now + options_.start_lead) + std::max<int64_t>(warmup_lead_ns, 0);
  outcome_.t0_ns = t0_ns_;
  for (JoinDrop& d : outcome_.left_before_start) d.at_ns -= t0_ns_;
  Refill(now);
  for (auto& w : registry_.workers()) {
    Envelope start;
    start.mutable_start()->set_t0_coord_ns(t0_ns_);
    Send(w, std::move(start));
  }
  registry_.Start(now);
  outcome_.worker_names.assign(options_.num_workers, "");
  for (const auto& w : registry_.workers()) {
    if (static_cast<size_t>(w.index) < outcome_.worker_names.size()) {
      outcome_.worker_names[w.index] = WorkerRegistry::Describe(w);
    }
  }
  LogInfo(absl::StrCat(
      "started ",
      ledger_.has_sessions()
          ? absl::StrCat(ledger_.plan_size(), " sessions (", ledger_.plan_records(), " turns)")
          : absl::StrCat(ledger_.plan_size(), " requests"),
      " on ", registry_.workers().size(), " workers",
      ledger_.num_warmups() > 0
          ? absl::StrFormat(" after %d warm-ups from %.3f s", ledger_.num_warmups(),
                            NanosToSeconds(options_.warmup_offsets_ns.front()))
          : std::string()));
}

bool Dispatcher::Serve() {
  Clock::TimePoint next_progress = clock_.Now();
  while (outcome_.records + outcome_.warmup_records < ledger_.records_expected()) {
    Clock::TimePoint now = clock_.Now();
    if (options_.on_progress && now >= next_progress) {
      next_progress = now + options_.progress_period;
      ReportProgress(now);
    }
    ApplyStopRules(now);
    ReceiveTurn();
    now = clock_.Now();
    // The stall guard applies at every due sweep, also while stopping.
    if (registry_.BeginSweep(now) && !stopping_) {
      SweepLiveness(now);
      SweepIdleOwners(now);
    }
    if (!registry_.any_alive()) {
      FinishUnassigned("not_sent: no_worker_left");
      return false;
    }
    if (!stopping_) Refill(now);
    if (stopping_ && now >= stop_deadline_) break;
  }
  return true;
}

void Dispatcher::Release() {
  // Anything still open (the wait after a stop ended) has no record: its
  // worker is alive but said nothing in time. After a stop that is an
  // interrupted request of which nothing is known; otherwise lost.
  ledger_.CloseOpen(stopping_, [this](surge::v1::RequestRecord r) { Deliver(std::move(r)); });
  // Release the workers and wait briefly for their Goodbyes.
  StopWorkers(stopping_ ? "interrupted" : "done", std::chrono::milliseconds(0),
              /*alive_only=*/true);
  const Clock::TimePoint goodbye_deadline = clock_.Now() + kGoodbyeWait;
  while (
      clock_.Now() < goodbye_deadline &&
      std::any_of(registry_.workers().begin(), registry_.workers().end(), [this](const Worker& w) {
        return w.alive && !w.said_goodbye && !(exited_ && exited_(w.index));
      })) {
    auto in = transport_.Receive(clock_.Now() + std::chrono::milliseconds(10));
    if (in.ok() && in->has_value()) Handle(**in);
    if (!in.ok()) OnReceiveError(in.status());
  }
  outcome_.rejected_records = ledger_.refused();
  // A worker that left on its own (its Goodbye says why) is no fenced one.
  outcome_.workers_fenced = registry_.fenced_count();
  alarm_log_.Flush();
  outcome_.schedule = lateness_.verdict();
  outcome_.alarm_lines = alarm_log_.lines("lateness");
  outcome_.reassigned = ledger_.reassigned();
}

absl::StatusOr<DispatchOutcome> Dispatcher::Run() {
  if (options_.num_workers < 1) {
    // Nobody could ever send: fail now instead of waiting for records.
    return absl::InvalidArgumentError(
        absl::StrCat("a run needs at least one worker (num_workers = ", options_.num_workers, ")"));
  }
  if (absl::Status s = AwaitWorkers(); !s.ok()) {
    // Nothing was assigned: release the workers that did come.
    StopWorkers(absl::StrCat("start_failed: ", s.message()), std::chrono::milliseconds(0),
                /*alive_only=*/false);
    return s;
  }
  StartRun();
  const bool any_worker_left = Serve();
  Release();
  if (!any_worker_left) {
    return absl::AbortedError(
        absl::StrCat("every worker was lost; ", outcome_.records, " records written"));
  }
  return outcome_;
}

}  // namespace surge::coordinator
