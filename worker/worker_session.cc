#include "worker/worker_session.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cpu_budget.h"
#include "common/failure_kind.h"
#include "common/fd_limit.h"
#include "common/log.h"
#include "common/utf8.h"
#include "worker/send_health.h"
#include "worker/send_loop.h"
#include "worker/session_turns.h"

namespace surge::worker {
namespace {

using surge::v1::Envelope;

// A RecordBatch holds at most 256 records or 64 KiB, so a heartbeat never
// waits long behind bulk data.
constexpr size_t kMaxBatchRecords = 256;
constexpr size_t kMaxBatchBytes = 64 * 1024;

uint64_t SoftOpenFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return r.rlim_cur;
}

std::string HostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// "SIGTERM", "SIGINT", else "signal N".
std::string SignalName(int signal) {
  return signal == SIGTERM  ? "SIGTERM"
         : signal == SIGINT ? "SIGINT"
                            : absl::StrCat("signal ", signal);
}

}  // namespace

WorkerSession::WorkerSession(Clock& clock, Transport& transport, SenderFactory make_sender,
                             WorkerSessionOptions options)
    : clock_(clock),
      transport_(transport),
      make_sender_(std::move(make_sender)),
      options_(options),
      clock_sync_(options.clock_sync) {}

void WorkerSession::AddClockSample(int64_t t1, int64_t t2, int64_t t3) {
  const int64_t t4 = ToNanos(clock_.Now());
  clock_sync_.AddSample(ClockSample{t1, t2, t3, t4});
}

ClockMapping WorkerSession::UsedMapping() const {
  return options_.same_clock ? ClockMapping{} : clock_sync_.mapping();
}

surge::v1::ClockReport WorkerSession::ClockReportNow() const {
  const ClockEstimate& e = clock_sync_.estimate();
  surge::v1::ClockReport r;
  r.set_ref_coord_ns(e.mapping.ref_coord_ns);
  r.set_samples(e.samples);
  r.set_rejected(e.rejected);
  r.set_min_rtt_ns(e.min_rtt_ns);
  r.set_drift_fitted(e.drift_fitted);
  if (options_.same_clock) {
    // Exact: the mapping in use is the identity (offset, drift, error and
    // steps all 0); the estimate is kept beside it as a check.
    r.set_same_clock(true);
    r.set_measured_offset_ns(e.mapping.offset_ns);
  } else {
    r.set_offset_ns(e.mapping.offset_ns);
    r.set_drift_ppm(e.mapping.drift_ppm);
    r.set_uncertainty_ns(e.uncertainty_ns);
    r.set_largest_step_ns(e.largest_step_ns);
  }
  if (options_.describe_simulated_clock) options_.describe_simulated_clock(r);
  return r;
}

int WorkerSession::SyncClock(Clock::TimePoint give_up) {
  uint64_t probe_seq = 0;
  while (!clock_sync_.ready()) {
    // One round: probe_count probes probe_period apart; replies to this
    // round's probes only (a straggler of an earlier round is still a valid
    // sample: its four timestamps are all it needs).
    int sent = 0;
    int replies = 0;
    Clock::TimePoint next_probe = clock_.Now();
    Clock::TimePoint round_end = Clock::TimePoint::max();
    while (true) {
      const Clock::TimePoint now = clock_.Now();
      if (now >= give_up) {
        LogError(absl::StrCat("clock sync: only ", clock_sync_.estimate().samples, " of ",
                              options_.clock_sync.min_probes,
                              " usable probe replies from the coordinator; giving up"));
        return kExitCoordinatorLost;
      }
      if (sent < options_.probe_count && now >= next_probe) {
        Envelope probe;
        probe.mutable_clock_probe()->set_probe_seq(++probe_seq);
        probe.mutable_clock_probe()->set_t1_worker_ns(ToNanos(clock_.Now()));
        (void)SendEnvelope(std::move(probe));
        ++sent;
        next_probe = now + options_.probe_period;
        if (sent == options_.probe_count) round_end = clock_.Now() + options_.probe_round_wait;
      }
      if (sent == options_.probe_count && (replies >= sent || now >= round_end)) break;
      auto in = transport_.Receive(clock_.Now() + std::chrono::milliseconds(1));
      if (!in.ok()) {
        OnReceiveError(in.status());
        continue;
      }
      if (!in->has_value()) continue;
      const Envelope& e = (*in)->message;
      if (e.has_clock_probe_reply()) {
        const auto& r = e.clock_probe_reply();
        AddClockSample(r.t1_worker_ns(), r.t2_coord_ns(), r.t3_coord_ns());
        ++replies;
      } else if (e.has_reject()) {
        LogError(absl::StrCat("rejected by the coordinator: ", e.reject().reason()));
        return kExitRejected;
      } else if (e.has_stop()) {
        return kExitStoppedBeforeStart;
      }
    }
  }
  const ClockEstimate& e = clock_sync_.estimate();
  LogDebug(absl::StrFormat(
      "clock sync: offset %.3f ms (worker − coordinator) ± %.3f ms from %d probes, min RTT %.3f ms",
      e.mapping.offset_ns / 1e6, e.uncertainty_ns / 1e6, static_cast<int>(e.samples),
      e.min_rtt_ns / 1e6));
  return kExitDone;
}

absl::Status WorkerSession::SendEnvelope(Envelope envelope) {
  envelope.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  envelope.set_run_id(run_id_);
  envelope.set_incarnation(options_.incarnation);
  envelope.set_seq(++seq_);
  return transport_.Send("", envelope);
}

void WorkerSession::AddToOutbox(surge::v1::RequestRecord record) {
  // The sender quotes server text in `error`; a proto string with invalid
  // UTF-8 would make the whole batch undecodable for the coordinator.
  const bool repaired = MakeValidUtf8(record.mutable_error());
  std::lock_guard<std::mutex> lock(outbox_mu_);
  if (repaired && repaired_errors_++ == 0) {
    LogWarning(absl::StrCat("request ", record.index(),
                            ": error text had invalid UTF-8; replaced by U+FFFD"));
  }
  ++tally_.records;
  if (record.sent()) ++tally_.sent;
  switch (record.status()) {
    case surge::v1::OK:
      ++tally_.ok;
      break;
    case surge::v1::FAILED:
      ++tally_.failed;
      break;
    case surge::v1::INTERRUPTED:
      ++tally_.cut_off;
      break;
    case surge::v1::NOT_SENT:
      ++tally_.not_sent;
      break;
    default:
      break;
  }
  outbox_.push_back(std::move(record));
}

void WorkerSession::OnReceiveError(const absl::Status& status) {
  if (!absl::IsDataLoss(status)) {
    LogWarning(status.ToString());
    return;
  }
  if (undecodable_frames_++ == 0) {
    LogWarning(absl::StrCat("skipped an undecodable message from the coordinator (",
                            status.ToString(), "); further ones are counted, not logged"));
  }
}

bool WorkerSession::FlushRecords(bool force) {
  std::vector<surge::v1::RequestRecord> pending;
  {
    std::lock_guard<std::mutex> lock(outbox_mu_);
    if (outbox_.empty()) return true;
    if (!force && outbox_.size() < kMaxBatchRecords &&
        clock_.Now() - last_flush_ < options_.record_flush) {
      return true;
    }
    pending.swap(outbox_);
  }
  last_flush_ = clock_.Now();
  size_t i = 0;
  while (i < pending.size()) {
    Envelope envelope;
    auto* batch = envelope.mutable_record_batch();
    const size_t first = i;
    size_t bytes = 0;
    while (i < pending.size() && batch->records_size() < static_cast<int>(kMaxBatchRecords) &&
           (bytes == 0 || bytes + pending[i].ByteSizeLong() <= kMaxBatchBytes)) {
      bytes += pending[i].ByteSizeLong();
      *batch->add_records() = pending[i];
      ++i;
    }
    batch->set_batch_seq(batch_seq_ + 1);
    if (absl::Status s = SendEnvelope(std::move(envelope)); !s.ok()) {
      // Not sent: keep this batch and the rest, ahead of newer records.
      if (failed_batches_++ == 0) {
        LogWarning(absl::StrCat("record batch not sent (kept, will retry): ", s.ToString()));
      }
      std::lock_guard<std::mutex> lock(outbox_mu_);
      outbox_.insert(outbox_.begin(), std::make_move_iterator(pending.begin() + first),
                     std::make_move_iterator(pending.end()));
      return false;
    }
    ++batch_seq_;
  }
  return true;
}

// Everything the phases of one session share: what Join learned, what the
// set-up built, the serving state (heartbeats, lease, start) and how the
// session ends. Members are destroyed in reverse order: the pacer thread
// (joined by Drain), the loop, its health, then the sender.
struct WorkerSession::State {
  surge::v1::Welcome welcome;
  std::unique_ptr<RequestSender> sender;
  std::chrono::milliseconds heartbeat_period{250};
  int64_t lease_ns = 0;
  // The open-file limit and the connection capacity it leaves, and the
  // in-flight cap in use.
  uint64_t fd_limit = 0;
  uint64_t fd_capacity = 0;
  uint32_t max_inflight = 0;
  std::unique_ptr<SendHealth> health;
  // Multi-turn sessions (docs/SESSIONS.md): between the coordinator's
  // assignments, the loop's records and the outbox. Outlives the loop.
  std::unique_ptr<SessionTurns> sessions;
  std::unique_ptr<SendLoop> loop;
  std::thread pacer;
  // CPU the pacer thread used, ns, set as it ends (its spin included).
  std::atomic<int64_t> pacer_cpu_ns{0};
  // Local steady ns after which the pacer releases nothing.
  int64_t lease_expiry_ns = 0;
  uint64_t hb_seq = 0;
  Clock::TimePoint next_heartbeat{};
  // Before Start nothing can be released, so a late heartbeat ack (the
  // coordinator is busy welcoming hundreds of workers on a loaded machine)
  // is no reason to leave: until Start the worker waits up to hello_timeout.
  bool started = false;
  Clock::TimePoint start_give_up{};
  int64_t asked_again_ns = -1;  // local time of the last question; -1: none
  std::string stop_reason;
  uint32_t drain_ms = 0;
  int exit_code = kExitDone;
  // Leaving on its own after a stop signal (LeaveOnSignal): 0 when not,
  // else the signal; the pacer is stopped and joined then.
  int left_on_signal = 0;
  // The pre-flight check's result (CheckTarget); empty when none was made.
  std::optional<surge::v1::TargetCheck> target_check;
};

std::optional<int> WorkerSession::Join(State& st) {
  const Clock::TimePoint give_up = clock_.Now() + options_.hello_timeout;
  Clock::TimePoint next_hello = clock_.Now();
  while (true) {
    if (const int signal = StopSignal(); signal != 0) {
      LogInfo(absl::StrCat(SignalName(signal), ": stopped before joining a run"));
      SendGoodbye(SignalName(signal));
      return 128 + signal;
    }
    if (clock_.Now() >= give_up) {
      LogError("no Welcome from the coordinator; giving up");
      return kExitCoordinatorLost;
    }
    if (clock_.Now() >= next_hello) {
      Envelope hello;
      auto* h = hello.mutable_hello();
      h->set_requested_index(options_.requested_index);
      h->set_host(ToValidUtf8(HostName()));  // the OS's bytes: proto needs UTF-8
      h->set_pid(static_cast<uint32_t>(getpid()));
      (void)SendEnvelope(std::move(hello));
      next_hello = clock_.Now() + options_.hello_period;
    }
    ReportLinkTroubles();
    auto in = transport_.Receive(clock_.Now() + options_.poll);
    if (!in.ok()) OnReceiveError(in.status());
    if (!in.ok() || !in->has_value()) continue;
    const Envelope& e = (*in)->message;
    if (std::optional<int> refused = RefusedJoin(e)) return refused;
    if (e.has_welcome()) {
      st.welcome = e.welcome();
      run_id_ = e.run_id();
      break;
    }
  }
  SetLogTag(absl::StrCat("worker ", st.welcome.worker_index()));
  auto sender = make_sender_(st.welcome);
  if (!sender.ok()) {
    LogError(absl::StrCat("cannot create the HTTP sender: ", sender.status().ToString()));
    // May quote a TLS library's or a file's text.
    SendGoodbye(ToValidUtf8(std::string(sender.status().message())));
    return kExitSenderFailed;
  }
  st.sender = *std::move(sender);
  CheckTarget(st);
  st.heartbeat_period =
      std::chrono::milliseconds(st.welcome.heartbeat_ms() > 0 ? st.welcome.heartbeat_ms() : 250);
  st.lease_ns =
      static_cast<int64_t>(st.welcome.lease_ms() > 0 ? st.welcome.lease_ms() : 1000) * 1000000;
  return std::nullopt;
}

void WorkerSession::ReportLinkTroubles() {
  // Each kind at once, then again at most every 10 s while it lasts.
  constexpr auto kRepeat = std::chrono::seconds(10);
  for (const LinkTrouble trouble : transport_.TakeLinkTroubles()) {
    const size_t k = static_cast<size_t>(trouble);
    const Clock::TimePoint now = clock_.Now();
    ++link_trouble_count_[k];
    if (link_trouble_logged_[k] && now < link_trouble_next_[k]) continue;
    link_trouble_logged_[k] = true;
    link_trouble_next_[k] = now + kRepeat;
    const std::string times =
        link_trouble_count_[k] > 1 ? absl::StrCat(" (", link_trouble_count_[k], " times)") : "";
    switch (trouble) {
      case LinkTrouble::kRefused:
        LogWarning(absl::StrCat(
            "cannot connect to the coordinator", times,
            ": the connection is refused or fails (nothing listens at that host and port, or the "
            "host is unreachable: check --connect); still trying"));
        break;
      case LinkTrouble::kKeyNotAllowed:
        LogWarning(absl::StrCat(
            "the coordinator refused this worker's CurveZMQ key", times,
            ": its public key (the .pub beside --curve-secret-key) is not in the coordinator's "
            "--curve-allow directory; still trying"));
        break;
      case LinkTrouble::kHandshakeFailed:
        LogWarning(absl::StrCat(
            "reached the coordinator but the CurveZMQ handshake failed", times,
            ": --curve-server-key is not that coordinator's public key, or only one side uses "
            "CurveZMQ (--insecure-transport on the other); still trying"));
        break;
    }
  }
}

std::optional<int> WorkerSession::RefusedJoin(const Envelope& e) {
  if (e.protocol_version() != surge::v1::PROTOCOL_VERSION_CURRENT) {
    LogError(absl::StrCat("the coordinator speaks protocol version ", e.protocol_version(),
                          ", this worker speaks version ", surge::v1::PROTOCOL_VERSION_CURRENT,
                          ": run the same surge release on both sides"));
    return kExitRejected;
  }
  if (!e.has_reject()) return std::nullopt;
  const auto kind = e.reject().kind();
  if (kind == surge::v1::REJECT_RUN_STARTED || kind == surge::v1::REJECT_RUN_FULL) {
    // Too late or one too many: nothing went wrong, there is just nothing
    // for this worker to do.
    LogInfo(absl::StrCat("not needed: ", e.reject().reason(), "; exiting"));
    return kExitDone;
  }
  LogError(absl::StrCat("rejected by the coordinator: ", e.reject().reason()));
  return kExitRejected;
}

std::optional<int> WorkerSession::SyncClockPhase() {
  // Measure the coordinator's clock before the first heartbeat (the
  // coordinator starts the run only when every worker heartbeats), so the
  // first deadline already goes through a real estimate (R-DIST-4).
  const int code = SyncClock(clock_.Now() + options_.hello_timeout);
  if (code == kExitDone) return std::nullopt;
  SendGoodbye(code == kExitStoppedBeforeStart ? "stopped" : "clock_sync_failed");
  if (code != kExitStoppedBeforeStart) return code;
  LogError("the coordinator stopped this worker before the run started: the run did not happen");
  return kExitRunNotStarted;
}

HealthTotals WorkerSession::ReadTotals(const RequestSender& sender) const {
  HealthTotals t;
  const ConnectTotals c = sender.connect_totals();
  t.connects = c.connects;
  t.connect_ns = c.connect_ns;
  if (options_.read_cpu) {
    t.cpu_ns = ProcessCpuNs();
    ReadHostCpu(t);
  }
  return t;
}

void WorkerSession::StartPacer(State& st) {
  // Every connection is a descriptor. The worker holds at most what its
  // open-file limit allows; beyond that a request waits for a slot (its
  // lateness shows it) instead of failing with EMFILE.
  st.fd_limit = options_.fd_limit > 0 ? options_.fd_limit : SoftOpenFileLimit();
  st.fd_capacity = std::min<uint64_t>(DescriptorCapacity(st.fd_limit), UINT32_MAX);
  st.max_inflight = st.welcome.max_inflight();
  if (st.max_inflight == 0 || st.max_inflight > st.fd_capacity) {
    if (st.max_inflight > st.fd_capacity) {
      LogWarning(absl::StrCat("in-flight cap lowered from ", st.max_inflight, " to ",
                              st.fd_capacity, ": the open-file limit is ", st.fd_limit,
                              " (ulimit -n)"));
    }
    st.max_inflight = static_cast<uint32_t>(st.fd_capacity);
  }
  st.health = std::make_unique<SendHealth>(ToNanos(clock_.Now()), ReadTotals(*st.sender));
  SendLoopOptions loop_options;
  loop_options.worker_index = st.welcome.worker_index();
  loop_options.max_inflight = st.max_inflight;
  loop_options.health = st.health.get();
  // Late-send policy (RunConfig.late_policy; the coordinator validated it).
  ApplyLatePolicy(st.welcome, &loop_options);
  st.sessions = std::make_unique<SessionTurns>(
      st.welcome.max_sessions(), st.welcome.worker_index(),
      [loop = &st.loop](std::vector<surge::v1::Assignment> turns) {
        (*loop)->Enqueue(std::move(turns));
      },
      [this, health = st.health.get()](surge::v1::RequestRecord record) {
        health->OnRecordError(record.error());
        AddToOutbox(std::move(record));
      });
  st.loop =
      std::make_unique<SendLoop>(clock_, *st.sender, loop_options,
                                 [sessions = st.sessions.get()](surge::v1::RequestRecord record) {
                                   sessions->OnRecord(std::move(record));
                                 });
  st.loop->SetClockMapping(UsedMapping());
  // The lease starts at Welcome, so a coordinator that dies before the first
  // heartbeat ack still stops this worker.
  st.lease_expiry_ns = ToNanos(clock_.Now()) + st.lease_ns;
  st.loop->SetLeaseExpiry(st.lease_expiry_ns);
  st.pacer = clock_.StartThread(
      [loop = st.loop.get(), pacer_options = options_.pacer, cpu = &st.pacer_cpu_ns] {
        NameThisThread("surge-pacer");
        const std::string refused = ConfigurePacerThread(pacer_options);
        if (!refused.empty()) LogWarning(refused);
        loop->Run();
        cpu->store(ThisThreadCpuNs());
      });
  st.next_heartbeat = clock_.Now();
  st.start_give_up = clock_.Now() + options_.hello_timeout;
  last_flush_ = clock_.Now();
}

void WorkerSession::SendHeartbeat(State& st, Clock::TimePoint now) {
  // Also during the drain (queued 0 then: the unreleased are reported).
  Envelope hb;
  auto* h = hb.mutable_heartbeat();
  h->set_hb_seq(++st.hb_seq);
  h->set_t1_worker_ns(ToNanos(now));
  h->set_inflight(static_cast<uint32_t>(st.sender->inflight()));
  h->set_sent_total(st.sender->sent_total());
  h->set_queued(static_cast<uint32_t>(st.loop->queued() + st.sessions->waiting()));
  h->set_horizon_ns(st.loop->horizon_ns());
  *h->mutable_clock() = ClockReportNow();
  if (!st.started && st.target_check) *h->mutable_target_check() = *st.target_check;
  if (st.started) {
    surge::v1::SendHealth* sh = h->mutable_send_health();
    *sh = st.health->Report(ToNanos(now), ReadTotals(*st.sender), st.loop->OverdueNs(ToNanos(now)));
    sh->set_pacer_waiting_late_ns(st.loop->WaitingLateNs(ToNanos(now)));
    sh->set_max_inflight(st.max_inflight);
    sh->set_inflight(h->inflight());
    sh->set_fd_limit(st.fd_limit);
    sh->set_fd_capacity(st.fd_capacity);
  }
  (void)SendEnvelope(std::move(hb));
  st.next_heartbeat = now + st.heartbeat_period;
}

void WorkerSession::OnHeartbeatAck(State& st, const surge::v1::HeartbeatAck& ack) {
  // Every heartbeat ack is a clock sample; the pacer reads the new mapping
  // at its next deadline.
  if (ack.t3_coord_ns() == 0) return;  // an ack without coordinator stamps
  AddClockSample(ack.t1_worker_ns(), ack.t2_coord_ns(), ack.t3_coord_ns());
  st.loop->SetClockMapping(UsedMapping());
}

// A coordinator silent past the lease stops the pacer at once (the pacer
// checks the lease itself). Half a second later the worker asks once more (a
// heartbeat), and gives up one second after the lease ended, but never less
// than kLastCallNs after that question: a process that was frozen (SIGSTOP,
// a VM pause) and wakes long past both moments still hears the answer — a
// Stop ("fenced": it was declared dead) or an ack that renews the lease (the
// window is kept) — instead of leaving without a word (R-DIST-7).
bool WorkerSession::CoordinatorLost(State& st, Clock::TimePoint now) {
  constexpr int64_t kAskAgainNs = 500000000;
  constexpr int64_t kGiveUpNs = 1000000000;
  constexpr int64_t kLastCallNs = 300000000;
  const int64_t now_ns = ToNanos(now);
  if (st.started && now_ns > st.lease_expiry_ns + kAskAgainNs &&
      st.asked_again_ns < st.lease_expiry_ns) {
    SendHeartbeat(st, now);
    st.asked_again_ns = now_ns;
  }
  return st.started
             ? now_ns > st.lease_expiry_ns + kGiveUpNs && now_ns > st.asked_again_ns + kLastCallNs
             : now > st.start_give_up;
}

bool WorkerSession::ServeMessage(State& st, Envelope& e) {
  if (e.has_start()) {
    st.started = true;
    st.loop->SetStart(e.start().t0_coord_ns());
  } else if (e.has_assignment_batch()) {
    auto* list = e.mutable_assignment_batch()->mutable_assignments();
    st.loop->Enqueue(st.sessions->Admit(std::vector<surge::v1::Assignment>(
        std::make_move_iterator(list->begin()), std::make_move_iterator(list->end()))));
  } else if (e.has_heartbeat_ack()) {
    OnHeartbeatAck(st, e.heartbeat_ack());
    // The lease runs from the worker's own send time of the acknowledged
    // heartbeat, so a late ack can never extend it.
    const int64_t expiry = e.heartbeat_ack().t1_worker_ns() + st.lease_ns;
    if (expiry > st.lease_expiry_ns) {
      st.lease_expiry_ns = expiry;
      st.loop->SetLeaseExpiry(expiry);
    }
  } else if (e.has_stop()) {
    st.stop_reason = e.stop().reason();
    st.drain_ms = e.stop().drain_ms();
    if (st.stop_reason == kStopFenced) {
      // Its pacer released nothing past the lease; what it still holds was
      // taken back by the coordinator.
      LogError(
          "the coordinator declared this worker dead and told it to stop (fenced); nothing "
          "more is sent");
      st.exit_code = kExitFenced;
    }
    return true;
  } else if (e.has_reject()) {
    st.stop_reason = "rejected";
    st.exit_code = kExitRejected;
    return true;
  }
  return false;
}

void WorkerSession::HandBack(State& st, const std::vector<surge::v1::Assignment>& requests) {
  Envelope e;
  auto* back = e.mutable_hand_back();
  back->set_reason(SignalName(st.left_on_signal));
  for (const surge::v1::Assignment& a : requests) {
    auto* r = back->add_requests();
    r->set_index(a.index());
    r->set_attempt(a.attempt());
  }
  (void)SendEnvelope(std::move(e));
}

int WorkerSession::StopSignal() const {
  if (options_.stop_signals == nullptr || options_.stop_signals->count.load() == 0) return 0;
  return options_.stop_signals->first.load();
}

bool WorkerSession::LeaveOnSignal(State& st) {
  if (StopSignal() == 0) return false;
  st.left_on_signal = StopSignal();
  st.stop_reason = SignalName(st.left_on_signal);
  st.drain_ms = static_cast<uint32_t>(options_.leave_drain.count());
  // Nothing more is released; what was never released goes back (a
  // session's turn with the rest of its session: the coordinator ends it).
  st.loop->Stop();
  clock_.Join(st.pacer);
  std::vector<surge::v1::Assignment> unreleased = st.sessions->Close(st.stop_reason);
  for (surge::v1::Assignment& a : st.loop->TakeUnreleased()) unreleased.push_back(std::move(a));
  HandBack(st, unreleased);
  LogInfo(absl::StrFormat(
      "%s: leaving; %d requests not yet sent handed back to the coordinator, %d in flight get up "
      "to %d ms (a second signal cuts them now)",
      st.stop_reason, unreleased.size(), st.sender->inflight(), st.drain_ms));
  return true;
}

void WorkerSession::Serve(State& st) {
  while (true) {
    if (st.started ? LeaveOnSignal(st) : StopSignal() != 0) return;
    const Clock::TimePoint now = clock_.Now();
    if (now >= st.next_heartbeat) SendHeartbeat(st, now);
    if (CoordinatorLost(st, now)) {
      LogError("coordinator lost (no heartbeat acknowledged); stopping");
      st.stop_reason = "coordinator_lost";
      st.exit_code = kExitCoordinatorLost;
      return;
    }
    FlushRecords(false);
    auto in = transport_.Receive(clock_.Now() + options_.poll);
    if (!in.ok()) {
      OnReceiveError(in.status());
      continue;
    }
    if (in->has_value() && ServeMessage(st, (*in)->message)) return;
  }
}

void WorkerSession::Drain(State& st) {
  // Stop releasing, report what was never released, give in-flight
  // requests up to drain_ms, then cut them off (they become INTERRUPTED
  // with what is known of them). A later Stop (the user's second Ctrl-C, or
  // the coordinator's end of run) shortens the drain to its own drain_ms.
  if (st.left_on_signal == 0) {
    st.loop->Stop();
    clock_.Join(st.pacer);
  }
  const std::string reason = st.stop_reason.empty() ? "stopped" : st.stop_reason;
  std::vector<surge::v1::Assignment> unreleased;
  if (st.left_on_signal == 0) {
    unreleased = st.sessions->Close(reason);
    for (surge::v1::Assignment& a : st.loop->TakeUnreleased()) unreleased.push_back(std::move(a));
  }
  for (const surge::v1::Assignment& a : unreleased) {
    for (surge::v1::RequestRecord& r :
         st.sessions->UnsentRecords(a, absl::StrCat("not_sent: ", reason))) {
      AddToOutbox(std::move(r));
    }
  }
  Clock::TimePoint drain_end = clock_.Now() + std::chrono::milliseconds(st.drain_ms);
  while (st.exit_code == kExitDone && st.sender->inflight() > 0 && clock_.Now() < drain_end) {
    if (st.left_on_signal != 0 && options_.stop_signals->count.load() > 1) break;  // cut now
    const Clock::TimePoint now = clock_.Now();
    if (now >= st.next_heartbeat) SendHeartbeat(st, now);
    if (ToNanos(now) > st.lease_expiry_ns + 1000000000) break;  // coordinator gone
    FlushRecords(false);
    auto in = transport_.Receive(clock_.Now() + options_.poll);
    if (!in.ok() || !in->has_value()) continue;
    const Envelope& e = (*in)->message;
    if (e.has_assignment_batch() && st.left_on_signal != 0) {
      // Sent before the coordinator read the HandBack: handed back too.
      const auto& list = e.assignment_batch().assignments();
      if (!list.empty()) HandBack(st, {list.begin(), list.end()});
    } else if (e.has_stop()) {
      drain_end =
          std::min(drain_end, clock_.Now() + std::chrono::milliseconds(e.stop().drain_ms()));
    } else if (e.has_heartbeat_ack()) {
      OnHeartbeatAck(st, e.heartbeat_ack());
      st.lease_expiry_ns =
          std::max(st.lease_expiry_ns, e.heartbeat_ack().t1_worker_ns() + st.lease_ns);
    } else if (e.has_reject()) {
      break;
    }
  }
}

int WorkerSession::Goodbye(State& st) {
  st.sender->Shutdown(std::chrono::milliseconds(0));
  if (st.left_on_signal != 0 && st.exit_code == kExitDone) st.exit_code = 128 + st.left_on_signal;
  // A full send queue empties as the coordinator reads: retry for a while
  // (bounded) before giving up on the last records.
  const Clock::TimePoint flush_deadline = clock_.Now() + std::chrono::seconds(2);
  while (!FlushRecords(true) && clock_.Now() < flush_deadline) {
    clock_.SleepUntilCoarse(clock_.Now() + std::chrono::milliseconds(20));
  }
  Envelope bye;
  bye.mutable_goodbye()->set_reason(st.stop_reason);
  bye.mutable_goodbye()->set_last_batch_seq(batch_seq_);
  (void)SendEnvelope(std::move(bye));
  return st.exit_code;
}

void WorkerSession::SendGoodbye(const std::string& reason) {
  Envelope bye;
  bye.mutable_goodbye()->set_reason(reason);
  (void)SendEnvelope(std::move(bye));
}

int WorkerSession::Run() {
  State st;
  if (std::optional<int> code = Join(st)) return *code;
  if (std::optional<int> code = SyncClockPhase()) return *code;
  LogJoined(st);
  StartPacer(st);
  Serve(st);
  if (!st.started && StopSignal() != 0) {
    // Before the start nothing was released: leave at once.
    st.loop->Stop();
    clock_.Join(st.pacer);
    LogInfo(absl::StrCat(SignalName(StopSignal()), ": stopped before the run started"));
    SendGoodbye(SignalName(StopSignal()));
    return 128 + StopSignal();
  }
  if (!st.started && st.exit_code == kExitDone) {
    LogError(absl::StrCat("the coordinator stopped this worker before the run started (",
                          st.stop_reason, "): the run did not happen"));
    st.exit_code = kExitRunNotStarted;
  }
  Drain(st);
  const int code = Goodbye(st);
  LogEnded(st, code);
  return code;
}

void WorkerSession::CheckTarget(State& st) {
  if (!options_.check_target) return;
  const absl::Status s = options_.check_target(st.welcome);
  surge::v1::TargetCheck check;
  check.set_reachable(s.ok());
  if (!s.ok()) check.set_error(ToValidUtf8(std::string(s.message())));
  if (s.ok()) {
    LogInfo("the target accepts connections from this host (pre-flight check)");
  } else {
    LogError(absl::StrCat("this host cannot connect to the target: ", check.error(),
                          " (told to the coordinator, which does not start the run without "
                          "--allow-unreachable-workers)"));
  }
  st.target_check = std::move(check);
}

void WorkerSession::LogJoined(const State& st) const {
  const ClockEstimate& e = clock_sync_.estimate();
  const std::string of =
      st.welcome.num_workers() > 0 ? absl::StrCat(" of ", st.welcome.num_workers()) : "";
  const std::string clock =
      options_.same_clock
          ? std::string("the coordinator's own clock (same host)")
          : absl::StrFormat("clock offset %+.3f ms ± %.3f ms against the coordinator's (%d probes)",
                            e.mapping.offset_ns / 1e6, e.uncertainty_ns / 1e6,
                            static_cast<int>(e.samples));
  LogInfo(absl::StrCat("joined run ", run_id_, " as worker ", st.welcome.worker_index(), of, "; ",
                       clock, "; waiting for the start"));
}

void WorkerSession::LogEnded(const State& st, int exit_code) {
  Tally t;
  {
    std::lock_guard<std::mutex> lock(outbox_mu_);
    t = tally_;
  }
  const std::string why = st.stop_reason.empty() ? std::string("stopped") : st.stop_reason;
  LogInfo(absl::StrFormat(
      "ended (%s): %d records: %d sent (%d ok, %d failed, %d cut off), %d not sent; exit %d", why,
      t.records, t.sent, t.ok, t.failed, t.cut_off, t.not_sent, exit_code));
  if (st.sender == nullptr) return;
  PacerCost pacer{.cpu_ns = st.pacer_cpu_ns.load()};
  if (st.loop != nullptr) {
    pacer.late_wakes = st.loop->late_wakes();
    pacer.late_wake_max_ns = st.loop->late_wake_max_ns();
    pacer.slow_handoffs = st.loop->slow_handoffs();
    pacer.slow_handoff_max_ns = st.loop->slow_handoff_max_ns();
  }
  LogInfo(CostLine(st.sender->stats(), pacer, t.sent));
}

std::string WorkerSession::CostLine(const SenderStats& stats, const PacerCost& pacer,
                                    uint64_t sent) {
  const double per = sent > 0 ? 1e-3 / static_cast<double>(sent) : 0;
  std::string line = absl::StrFormat(
      "cost per sent request: pacer %.2f us CPU (its spin included), I/O %.2f us CPU; "
      "connections: %d opened",
      static_cast<double>(pacer.cpu_ns) * per, static_cast<double>(stats.io_cpu_ns) * per,
      stats.connections_opened);
  if (stats.takes > 0) {
    absl::StrAppendFormat(&line,
                          " (warm pool: %d takes, %d found none idle, %d refills connected, "
                          "%d of the refills started before t0)",
                          stats.takes, stats.cold_takes, stats.refills_ok, stats.at_start);
  }
  // The session's loops keep the default threshold.
  const double threshold_ms =
      std::chrono::duration<double, std::milli>(SendLoopOptions{}.late_wake_threshold).count();
  absl::StrAppendFormat(&line, "; pacer late wakes (≥ %.2f ms): %d", threshold_ms,
                        pacer.late_wakes);
  const auto longest = [&line](uint64_t count, int64_t max_ns) {
    if (count > 0) absl::StrAppendFormat(&line, ", the longest %.3f ms", max_ns / 1e6);
  };
  longest(pacer.late_wakes, pacer.late_wake_max_ns);
  absl::StrAppendFormat(&line, "; hand-offs ≥ %.2f ms: %d", threshold_ms, pacer.slow_handoffs);
  longest(pacer.slow_handoffs, pacer.slow_handoff_max_ns);
  return line;
}

}  // namespace surge::worker
