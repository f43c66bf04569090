#include "worker/worker_session.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/failure_kind.h"
#include "common/fd_limit.h"
#include "common/log.h"
#include "common/utf8.h"
#include "worker/send_health.h"
#include "worker/send_loop.h"

namespace surge::worker {
namespace {

using surge::v1::Envelope;

// DISTRIBUTED.md §2: a RecordBatch holds at most 256 records or 64 KiB, so a
// heartbeat never waits long behind bulk data.
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

int WorkerSession::Run() {
  // 1. Hello until Welcome or Reject.
  surge::v1::Welcome welcome;
  {
    const Clock::TimePoint give_up = clock_.Now() + options_.hello_timeout;
    Clock::TimePoint next_hello = clock_.Now();
    bool welcomed = false;
    while (!welcomed) {
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
      auto in = transport_.Receive(clock_.Now() + options_.poll);
      if (!in.ok()) OnReceiveError(in.status());
      if (!in.ok() || !in->has_value()) continue;
      const Envelope& e = (*in)->message;
      if (e.protocol_version() != surge::v1::PROTOCOL_VERSION_CURRENT) {
        LogError(absl::StrCat("the coordinator speaks protocol version ", e.protocol_version(),
                              ", this worker speaks version ", surge::v1::PROTOCOL_VERSION_CURRENT,
                              ": run the same surge release on both sides"));
        return kExitRejected;
      }
      if (e.has_reject()) {
        const auto kind = e.reject().kind();
        if (kind == surge::v1::REJECT_RUN_STARTED || kind == surge::v1::REJECT_RUN_FULL) {
          // Too late or one too many: nothing went wrong, there is just
          // nothing for this worker to do.
          LogInfo(absl::StrCat("not needed: ", e.reject().reason(), "; exiting"));
          return kExitDone;
        }
        LogError(absl::StrCat("rejected by the coordinator: ", e.reject().reason()));
        return kExitRejected;
      }
      if (e.has_welcome()) {
        welcome = e.welcome();
        run_id_ = e.run_id();
        welcomed = true;
      }
    }
  }
  SetLogTag(absl::StrCat("worker ", welcome.worker_index()));

  auto sender_or = make_sender_(welcome);
  if (!sender_or.ok()) {
    LogError(absl::StrCat("cannot create the HTTP sender: ", sender_or.status().ToString()));
    Envelope bye;
    // May quote a TLS library's or a file's text.
    bye.mutable_goodbye()->set_reason(ToValidUtf8(std::string(sender_or.status().message())));
    (void)SendEnvelope(std::move(bye));
    return kExitSenderFailed;
  }
  std::unique_ptr<RequestSender> sender = *std::move(sender_or);

  const auto heartbeat_period =
      std::chrono::milliseconds(welcome.heartbeat_ms() > 0 ? welcome.heartbeat_ms() : 250);
  const int64_t lease_ns =
      static_cast<int64_t>(welcome.lease_ms() > 0 ? welcome.lease_ms() : 1000) * 1000000;
  // R-DIST-4: measure the coordinator's clock before the first heartbeat
  // (the coordinator starts the run only when every worker heartbeats), so
  // the first deadline already goes through a real estimate.
  if (const int code = SyncClock(clock_.Now() + options_.hello_timeout); code != kExitDone) {
    Envelope bye;
    bye.mutable_goodbye()->set_reason(code == kExitStoppedBeforeStart ? "stopped"
                                                                      : "clock_sync_failed");
    (void)SendEnvelope(std::move(bye));
    return code == kExitStoppedBeforeStart ? kExitDone : code;
  }

  // Issue 9 item 1: every connection is a descriptor. The worker holds at
  // most what its open-file limit allows; beyond that a request waits for a
  // slot (its lateness shows it) instead of failing with EMFILE.
  const uint64_t fd_limit = options_.fd_limit > 0 ? options_.fd_limit : SoftOpenFileLimit();
  const uint64_t fd_capacity = std::min<uint64_t>(DescriptorCapacity(fd_limit), UINT32_MAX);
  uint32_t max_inflight = welcome.max_inflight();
  if (max_inflight == 0 || max_inflight > fd_capacity) {
    if (max_inflight > fd_capacity) {
      LogWarning(absl::StrCat("in-flight cap lowered from ", max_inflight, " to ", fd_capacity,
                              ": the open-file limit is ", fd_limit, " (ulimit -n)"));
    }
    max_inflight = static_cast<uint32_t>(fd_capacity);
  }
  auto read_totals = [&sender, this] {
    HealthTotals t;
    const ConnectTotals c = sender->connect_totals();
    t.connects = c.connects;
    t.connect_ns = c.connect_ns;
    if (options_.read_cpu) {
      t.cpu_ns = ProcessCpuNs();
      ReadHostCpu(t);
    }
    return t;
  };
  SendHealth health(ToNanos(clock_.Now()), read_totals());
  SendLoopOptions loop_options;
  loop_options.worker_index = welcome.worker_index();
  loop_options.max_inflight = max_inflight;
  loop_options.health = &health;
  // Late-send policy (RunConfig.late_policy; the coordinator validated it).
  ApplyLatePolicy(welcome, &loop_options);
  SendLoop loop(clock_, *sender, loop_options, [this, &health](surge::v1::RequestRecord record) {
    health.OnRecordError(record.error());
    AddToOutbox(std::move(record));
  });
  loop.SetClockMapping(UsedMapping());
  // Every heartbeat ack is a clock sample; the pacer reads the new mapping
  // at its next deadline.
  auto on_heartbeat_ack = [&](const surge::v1::HeartbeatAck& ack) {
    if (ack.t3_coord_ns() == 0) return;  // an ack without coordinator stamps
    AddClockSample(ack.t1_worker_ns(), ack.t2_coord_ns(), ack.t3_coord_ns());
    loop.SetClockMapping(UsedMapping());
  };
  // The lease starts at Welcome, so a coordinator that dies before the first
  // heartbeat ack still stops this worker (DISTRIBUTED.md §3).
  int64_t lease_expiry_ns = ToNanos(clock_.Now()) + lease_ns;
  loop.SetLeaseExpiry(lease_expiry_ns);
  std::thread pacer = clock_.StartThread([&loop, pacer_options = options_.pacer] {
    const std::string refused = ConfigurePacerThread(pacer_options);
    if (!refused.empty()) LogWarning(refused);
    loop.Run();
  });

  uint64_t hb_seq = 0;
  Clock::TimePoint next_heartbeat = clock_.Now();
  // Before Start nothing can be released, so a late heartbeat ack (the
  // coordinator is busy welcoming hundreds of workers on a loaded machine)
  // is no reason to leave: until Start the worker waits up to hello_timeout.
  bool started = false;
  const Clock::TimePoint start_give_up = clock_.Now() + options_.hello_timeout;
  std::string stop_reason;
  uint32_t drain_ms = 0;
  int exit_code = kExitDone;
  last_flush_ = clock_.Now();
  // Also during the drain (queued 0 then: the unreleased are reported).
  auto send_heartbeat = [&](Clock::TimePoint now) {
    Envelope hb;
    auto* h = hb.mutable_heartbeat();
    h->set_hb_seq(++hb_seq);
    h->set_t1_worker_ns(ToNanos(now));
    h->set_inflight(static_cast<uint32_t>(sender->inflight()));
    h->set_sent_total(sender->sent_total());
    h->set_queued(static_cast<uint32_t>(loop.queued()));
    h->set_horizon_ns(loop.horizon_ns());
    *h->mutable_clock() = ClockReportNow();
    if (started) {
      surge::v1::SendHealth* sh = h->mutable_send_health();
      *sh = health.Report(ToNanos(now), read_totals(), loop.OverdueNs(ToNanos(now)));
      sh->set_max_inflight(max_inflight);
      sh->set_inflight(h->inflight());
      sh->set_fd_limit(fd_limit);
      sh->set_fd_capacity(fd_capacity);
    }
    (void)SendEnvelope(std::move(hb));
    next_heartbeat = now + heartbeat_period;
  };

  // R-DIST-7: a coordinator silent past the lease stops the pacer at once
  // (the pacer checks the lease itself). Half a second later the worker asks
  // once more (a heartbeat), and gives up one second after the lease ended,
  // but never less than kLastCallNs after that question: a process that was
  // frozen (SIGSTOP, a VM pause) and wakes long past both moments still
  // hears the answer — a Stop ("fenced": it was declared dead; DISTRIBUTED.md
  // §6) or an ack that renews the lease (§7: the window is kept) — instead of
  // leaving without a word.
  constexpr int64_t kAskAgainNs = 500000000;
  constexpr int64_t kGiveUpNs = 1000000000;
  constexpr int64_t kLastCallNs = 300000000;
  int64_t asked_again_ns = -1;  // local time of the last question; -1: none
  while (true) {
    const Clock::TimePoint now = clock_.Now();
    const int64_t now_ns = ToNanos(now);
    if (now >= next_heartbeat) send_heartbeat(now);
    if (started && now_ns > lease_expiry_ns + kAskAgainNs && asked_again_ns < lease_expiry_ns) {
      send_heartbeat(now);
      asked_again_ns = now_ns;
    }
    if (started ? now_ns > lease_expiry_ns + kGiveUpNs && now_ns > asked_again_ns + kLastCallNs
                : now > start_give_up) {
      LogError("coordinator lost (no heartbeat acknowledged); stopping");
      stop_reason = "coordinator_lost";
      exit_code = kExitCoordinatorLost;
      break;
    }
    FlushRecords(false);

    auto in = transport_.Receive(clock_.Now() + options_.poll);
    if (!in.ok()) {
      OnReceiveError(in.status());
      continue;
    }
    if (!in->has_value()) continue;
    Envelope& e = (*in)->message;
    if (e.has_start()) {
      started = true;
      loop.SetStart(e.start().t0_coord_ns());
    } else if (e.has_assignment_batch()) {
      auto* list = e.mutable_assignment_batch()->mutable_assignments();
      loop.Enqueue(std::vector<surge::v1::Assignment>(std::make_move_iterator(list->begin()),
                                                      std::make_move_iterator(list->end())));
    } else if (e.has_heartbeat_ack()) {
      on_heartbeat_ack(e.heartbeat_ack());
      // The lease runs from the worker's own send time of the acknowledged
      // heartbeat, so a late ack can never extend it (DISTRIBUTED.md §3).
      const int64_t expiry = e.heartbeat_ack().t1_worker_ns() + lease_ns;
      if (expiry > lease_expiry_ns) {
        lease_expiry_ns = expiry;
        loop.SetLeaseExpiry(expiry);
      }
    } else if (e.has_stop()) {
      stop_reason = e.stop().reason();
      drain_ms = e.stop().drain_ms();
      if (stop_reason == kStopFenced) {
        // Its pacer released nothing past the lease; what it still holds was
        // taken back by the coordinator.
        LogError(
            "the coordinator declared this worker dead and told it to stop (fenced); nothing "
            "more is sent");
        exit_code = kExitFenced;
      }
      break;
    } else if (e.has_reject()) {
      stop_reason = "rejected";
      exit_code = kExitRejected;
      break;
    }
  }

  // Drain: stop releasing, report what was never released, give in-flight
  // requests up to drain_ms, then cut them off (they become INTERRUPTED with
  // what is known of them). A later Stop (the user's second Ctrl-C, or the
  // coordinator's end of run) shortens the drain to its own drain_ms.
  loop.Stop();
  clock_.Join(pacer);
  for (const auto& a : loop.TakeUnreleased()) {
    surge::v1::RequestRecord r;
    r.set_index(a.index());
    r.set_attempt(a.attempt());
    r.set_worker(welcome.worker_index());
    r.set_planned_ns(a.offset_ns());
    SetFailure(r, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
               absl::StrCat("not_sent: ", stop_reason.empty() ? "stopped" : stop_reason));
    AddToOutbox(std::move(r));
  }
  Clock::TimePoint drain_end = clock_.Now() + std::chrono::milliseconds(drain_ms);
  while (exit_code == kExitDone && sender->inflight() > 0 && clock_.Now() < drain_end) {
    const Clock::TimePoint now = clock_.Now();
    if (now >= next_heartbeat) send_heartbeat(now);
    if (ToNanos(now) > lease_expiry_ns + 1000000000) break;  // coordinator gone
    FlushRecords(false);
    auto in = transport_.Receive(clock_.Now() + options_.poll);
    if (!in.ok() || !in->has_value()) continue;
    const Envelope& e = (*in)->message;
    if (e.has_stop()) {
      drain_end =
          std::min(drain_end, clock_.Now() + std::chrono::milliseconds(e.stop().drain_ms()));
    } else if (e.has_heartbeat_ack()) {
      on_heartbeat_ack(e.heartbeat_ack());
      lease_expiry_ns = std::max(lease_expiry_ns, e.heartbeat_ack().t1_worker_ns() + lease_ns);
    } else if (e.has_reject()) {
      break;
    }
  }
  sender->Shutdown(std::chrono::milliseconds(0));
  // A full send queue empties as the coordinator reads: retry for a while
  // (bounded) before giving up on the last records.
  const Clock::TimePoint flush_deadline = clock_.Now() + std::chrono::seconds(2);
  while (!FlushRecords(true) && clock_.Now() < flush_deadline) {
    clock_.SleepUntilCoarse(clock_.Now() + std::chrono::milliseconds(20));
  }
  Envelope bye;
  bye.mutable_goodbye()->set_reason(stop_reason);
  bye.mutable_goodbye()->set_last_batch_seq(batch_seq_);
  (void)SendEnvelope(std::move(bye));
  return exit_code;
}

}  // namespace surge::worker
