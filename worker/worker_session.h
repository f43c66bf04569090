// One worker process's life (R-DIST-1..7): Hello/Welcome, Start, receiving
// assignment batches into the pacer, heartbeats and the lease, record
// batches, Stop and drain. Runs on the thread that owns the Transport.
#ifndef SURGE_WORKER_WORKER_SESSION_H_
#define SURGE_WORKER_WORKER_SESSION_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/clock_sync.h"
#include "common/transport.h"
#include "surge/v1/wire.pb.h"
#include "worker/pacer_thread.h"
#include "worker/request_sender.h"
#include "worker/send_health.h"

namespace surge::worker {

// Exit codes of `surge worker`.
inline constexpr int kExitDone = 0;
inline constexpr int kExitRejected = 2;
inline constexpr int kExitCoordinatorLost = 3;
inline constexpr int kExitSenderFailed = 4;
// Declared dead by the coordinator (silent past its death timeout) and told
// to stop when it spoke again (Stop reason kStopFenced, R-DIST-6/7).
inline constexpr int kExitFenced = 5;
// Told to stop before the run started (the coordinator gave up: a worker
// missing at its join timeout, a worker that cannot reach the target, a
// Ctrl-C): the run did not happen, so this worker sent nothing.
inline constexpr int kExitRunNotStarted = 6;
// Stop.reason the coordinator gives a worker it has declared dead.
inline constexpr char kStopFenced[] = "fenced";
// Stop signals a process received (SIGTERM, or SIGINT to a standalone
// worker), written by its signal handler: how many, and the first one.
struct StopSignals {
  std::atomic<int> count{0};
  std::atomic<int> first{0};
};

// Internal (never an exit code): told to stop before the start.
inline constexpr int kExitStoppedBeforeStart = -1;

struct WorkerSessionOptions {
  // Index asked for in Hello; -1 lets the coordinator choose.
  int32_t requested_index = -1;
  // Random per process start; a restarted process is a new worker to the
  // coordinator, never the old one resumed.
  uint64_t incarnation = 0;
  // How long Hello is repeated before giving up; also how long a welcomed
  // worker waits for Start (the lease is enforced only after Start).
  std::chrono::milliseconds hello_timeout{30000};
  // Hello repeat period.
  std::chrono::milliseconds hello_period{250};
  // Longest wait for a message before the loop does its periodic work.
  std::chrono::milliseconds poll{5};
  // A record batch is sent when this old, or at kMaxBatchRecords/Bytes.
  std::chrono::milliseconds record_flush{50};
  // Clock sync before the first heartbeat (R-DIST-4):
  // rounds of probe_count probes probe_period apart, each round waiting up
  // to probe_round_wait for late replies, until the estimator is ready
  // (clock_sync.min_probes usable replies). Gives up after hello_timeout.
  int probe_count = 16;
  std::chrono::milliseconds probe_period{5};
  std::chrono::milliseconds probe_round_wait{200};
  ClockSyncOptions clock_sync;
  // The coordinator's steady clock is this process's own: a worker that
  // `surge run` started as its child on the same host (worker_main sets it
  // when --parent-pid is its parent and the clock is not simulated). The
  // pacer then maps deadlines with offset 0, exactly, instead of the
  // estimate, whose loopback bias (−0.01 to −0.42 ms measured on the wire,
  // docs/PERFORMANCE.md) would shift each worker's sends by a different
  // amount. The probes still run (they prove the link) and their estimate
  // is reported as ClockReport.measured_offset_ns. Default false.
  bool same_clock = false;
  // The open-file limit the worker's connection capacity is derived from:
  // capacity = fd_limit − kReservedDescriptors
  // (common/fd_limit.h), and the in-flight cap becomes min(Welcome's cap,
  // capacity) (the capacity alone when Welcome gives none), so a request
  // waits for a descriptor instead of failing with EMFILE. 0 = read the soft
  // RLIMIT_NOFILE at the Welcome.
  uint64_t fd_limit = 0;
  // Whether heartbeats read /proc/stat and the process CPU time for their
  // SendHealth (tests on simulated time turn it off: those are real).
  bool read_cpu = true;
  // Test-only: called for every heartbeat's ClockReport to add the
  // simulated truth (SkewedClock); empty = the clock is not simulated.
  std::function<void(surge::v1::ClockReport&)> describe_simulated_clock;
  // The pacer thread's scheduling, applied on that thread before it runs;
  // a refused setting is logged once as a warning.
  PacerThreadOptions pacer;
  // Stop signals to leave on (null: none are watched). At the first one the
  // worker leaves on its own: before the start it says Goodbye at once;
  // after it, it stops its pacer, hands back what it never released
  // (HandBack: the coordinator gives it to the others), gives its requests
  // in flight up to leave_drain (a second signal cuts them at once), sends
  // every record and a Goodbye, and exits 128 + the signal.
  const StopSignals* stop_signals = nullptr;
  std::chrono::milliseconds leave_drain{5000};
  // The worker's own pre-flight check of the target, once after the Welcome
  // (a standalone worker: a connection to the target from this host and a
  // GET /v1/models, any answer passing); its
  // result goes to the coordinator in every heartbeat before the start
  // (Heartbeat.target_check). Empty = no check (a worker of `surge run`,
  // on the host the coordinator checked from).
  std::function<absl::Status(const surge::v1::Welcome&)> check_target;
};

// Makes the HTTP sender once the Welcome names the target.
using SenderFactory =
    std::function<absl::StatusOr<std::unique_ptr<RequestSender>>(const surge::v1::Welcome&)>;

class WorkerSession {
 public:
  WorkerSession(Clock& clock, Transport& transport, SenderFactory make_sender,
                WorkerSessionOptions options);
  // Runs to the end; returns the process exit code (kExit*).
  int Run();

  // What the pacer thread cost and where it lost time: its CPU time, ns,
  // its late wakes and its slow hand-offs (SendLoop::late_wakes,
  // slow_handoffs, and the longest of each).
  struct PacerCost {
    int64_t cpu_ns = 0;
    uint64_t late_wakes = 0;
    int64_t late_wake_max_ns = 0;
    uint64_t slow_handoffs = 0;
    int64_t slow_handoff_max_ns = 0;
  };
  // The worker's last log line: what each sent request cost in CPU and
  // connections, and the pacer's late wakes, e.g. "cost per sent request:
  // pacer 3.10 us CPU (its spin included), I/O 11.52 us CPU; connections:
  // 152 opened (warm pool: 40000 takes, 85 found none idle, 67 refills);
  // pacer late wakes (≥ 0.05 ms): 12, the longest 1.250 ms; hand-offs
  // ≥ 0.05 ms: 3, the longest 0.210 ms". Pure.
  static std::string CostLine(const SenderStats& stats, const PacerCost& pacer, uint64_t sent);

 private:
  // The phases of Run, over one State: Join (Hello until Welcome or a
  // refusal, then the HTTP sender), SyncClock (probes until the estimator
  // is ready), the set-up of the pacer, Serve (heartbeats, the lease,
  // assignments, until Stop or the coordinator is lost), Drain (what was
  // never released, the requests in flight) and Goodbye (the last records
  // and the Goodbye). A phase that ends the session returns its exit code.
  struct State;
  std::optional<int> Join(State& st);
  std::optional<int> SyncClockPhase();
  void StartPacer(State& st);
  void Serve(State& st);
  void Drain(State& st);
  int Goodbye(State& st);
  // Join: logs what the transport saw go wrong on the link (a refused
  // connection, a refused key, a failed handshake), each kind at once and
  // then at most every 10 s.
  void ReportLinkTroubles();
  // Join: the exit code when `e` refuses this worker (another protocol
  // version, a Reject).
  std::optional<int> RefusedJoin(const surge::v1::Envelope& e);
  // Serve: handles one message; true when it ends serving (Stop, Reject).
  bool ServeMessage(State& st, surge::v1::Envelope& e);
  // The first stop signal received (0: none, or none watched).
  int StopSignal() const;
  // Serve: the first stop signal after the start (stop_signals): stops the
  // pacer and hands back what was never released. True when it left.
  bool LeaveOnSignal(State& st);
  // Sends a HandBack of `requests` (the worker is leaving).
  void HandBack(State& st, const std::vector<surge::v1::Assignment>& requests);
  // Serve: true when the coordinator counts as lost (asks once more first).
  bool CoordinatorLost(State& st, Clock::TimePoint now);
  void SendHeartbeat(State& st, Clock::TimePoint now);
  void OnHeartbeatAck(State& st, const surge::v1::HeartbeatAck& ack);
  HealthTotals ReadTotals(const RequestSender& sender) const;
  // A Goodbye that carries only `reason` (a session that ends before Serve).
  void SendGoodbye(const std::string& reason);
  // The pre-flight check of the target (options_.check_target), logged.
  void CheckTarget(State& st);
  // One INFO line when the worker has joined (index, clock) and two when it
  // ends (what became of its requests, why, the exit code; what each sent
  // request cost in CPU and connections).
  void LogJoined(const State& st) const;
  void LogEnded(const State& st, int exit_code);

  absl::Status SendEnvelope(surge::v1::Envelope envelope);
  // Sends the outbox in batches when due (or now when `force`). A batch the
  // transport does not take goes back to the front of the outbox and is
  // tried again: records are never dropped. Returns false when some stay.
  bool FlushRecords(bool force);
  // Probes the coordinator's clock until the estimator is ready. Returns
  // kExitDone when ready, else the exit code (coordinator lost, rejected,
  // stopped before the start).
  int SyncClock(Clock::TimePoint give_up);
  // Feeds one exchange (t4 = now) to the estimator; logs the first estimate.
  void AddClockSample(int64_t t1, int64_t t2, int64_t t3);
  surge::v1::ClockReport ClockReportNow() const;
  // A failed Receive: an undecodable frame is counted and logged once.
  void OnReceiveError(const absl::Status& status);
  // Every record enters the outbox here, its error text made valid UTF-8.
  void AddToOutbox(surge::v1::RequestRecord record);

  Clock& clock_;
  Transport& transport_;
  SenderFactory make_sender_;
  WorkerSessionOptions options_;
  uint64_t seq_ = 0;
  uint64_t batch_seq_ = 0;
  std::string run_id_;

  uint64_t undecodable_frames_ = 0;  // frames from the coordinator skipped
  // ReportLinkTroubles, by LinkTrouble: seen, logged, next log allowed.
  uint64_t link_trouble_count_[3] = {0, 0, 0};
  bool link_trouble_logged_[3] = {false, false, false};
  Clock::TimePoint link_trouble_next_[3] = {};
  uint64_t failed_batches_ = 0;  // batches the transport refused (retried)

  std::mutex outbox_mu_;
  std::vector<surge::v1::RequestRecord> outbox_;
  uint64_t repaired_errors_ = 0;  // records whose error text had bad UTF-8
  // What became of this worker's requests, for its end line (counted as
  // their records enter the outbox).
  struct Tally {
    uint64_t records = 0;
    uint64_t sent = 0;
    uint64_t ok = 0;
    uint64_t failed = 0;
    uint64_t cut_off = 0;
    uint64_t not_sent = 0;
  };
  Tally tally_;
  Clock::TimePoint last_flush_{};
  ClockSyncEstimator clock_sync_;
  // The mapping the pacer uses: identity with options_.same_clock, else the
  // estimate.
  ClockMapping UsedMapping() const;
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_WORKER_SESSION_H_
