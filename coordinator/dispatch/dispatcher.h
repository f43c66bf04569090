// Runs one distributed execution (R-DIST-1..6): welcomes the workers, fixes
// t0, streams assignments in bounded windows, acks heartbeats, takes work
// back from dead workers, runs the stop state machine, and ends with exactly
// one final record per planned request. It composes a RequestLedger (who
// holds which request), a WorkerRegistry (membership and liveness) and an
// AssignmentPolicy; it owns the coordinator's Transport and reads the Clock.
// One thread.
#ifndef SURGE_COORDINATOR_DISPATCH_DISPATCHER_H_
#define SURGE_COORDINATOR_DISPATCH_DISPATCHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/rate_limited_log.h"
#include "common/transport.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dispatch/assignment_policy.h"
#include "coordinator/dispatch/lateness_monitor.h"
#include "coordinator/dispatch/request_ledger.h"
#include "coordinator/dispatch/saturation_rule.h"
#include "coordinator/dispatch/worker_pool.h"
#include "coordinator/dispatch/worker_registry.h"
#include "coordinator/plan/arrival_schedule.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/record.pb.h"
#include "surge/v1/wire.pb.h"

namespace surge::coordinator {

// A snapshot for the progress display (R-UI-3).
struct DispatchProgress {
  // Seconds since t0 (negative before the start).
  double elapsed_s = 0;
  // t0 on the coordinator's clock, ns (DispatchOutcome::t0_ns); 0 until
  // the run's start fixes it.
  int64_t t0_ns = 0;
  uint64_t planned = 0;
  // Final records so far, and how many of them were sent / OK, and never
  // sent (NOT_SENT, e.g. after a stop). Counted from the records by their
  // sink (ProgressReporter, coordinator/results/progress.h), not by the
  // dispatcher: 0 in the dispatcher's snapshots.
  uint64_t records = 0;
  uint64_t sent = 0;
  uint64_t ok = 0;
  uint64_t not_sent = 0;
  // The run is stopping (Ctrl-C, or the target is unreachable).
  bool stopping = false;
  // In flight on the workers, from their last heartbeats.
  uint64_t inflight = 0;
  // Planned offset of the last request, seconds.
  double last_planned_s = 0;
  // Each worker's send lateness over its last reported window, by index; `reported` false until its
  // first report.
  std::vector<WorkerLateness> lateness;
  // A lateness alarm has fired in this run.
  bool behind = false;
  // By worker index: requests whose first byte it has written, from its
  // last heartbeat (Heartbeat.sent_total; 0 before its first report or when
  // its sender does not count). For the live metrics (docs/METRICS.md).
  std::vector<uint64_t> worker_sent_total;
  // Σ over live workers of (sends in its last SendHealth window / window
  // length), requests/s: the rate the pacers released at lately.
  double window_send_rate_rps = 0;
};

struct DispatcherOptions {
  // Workers expected before the run starts.
  int num_workers = 1;
  // Per-worker in-flight caps (R-REQ-2), by worker index; empty = no cap.
  std::vector<uint32_t> max_inflight;
  // Per-worker caps on open sessions (RunConfig.max_sessions, split like
  // max_inflight), by worker index; empty = no cap.
  std::vector<uint32_t> max_sessions;
  // Multi-turn sessions (docs/SESSIONS.md): plan request p is a session of
  // session_turns[p] turns, session_think_ns the think time before each of
  // the plan's turns in plan order (RequestLedger::SetSessions), and
  // add_session_turns(p, start) puts session p's later turns into its
  // start's assignment (next_turns). Empty / null = single requests.
  std::vector<uint32_t> session_turns;
  std::vector<int64_t> session_think_ns;
  std::function<void(uint64_t session, surge::v1::Assignment& start)> add_session_turns;
  // Target and request options sent in Welcome.
  surge::v1::TargetConfig target;
  // The target's API key for every worker's Welcome (Welcome.api_key);
  // empty = each worker uses its own. Never logged.
  std::string worker_api_key;
  // A worker whose own pre-flight check (Heartbeat.target_check) says it
  // cannot connect to the target: false = the run does not start (Run
  // fails, naming each such worker); true = each is named in a WARNING and
  // the run starts with it.
  bool allow_unreachable_workers = false;
  uint64_t seed = 0;
  std::string run_id;
  // Late-send policy sent in Welcome (RunConfig.late_policy; every worker
  // gets the same): policy, threshold (ns, 0 = the worker's default 10 ms)
  // and, for CAP, the run's catch-up rate (requests/s), of which each of the
  // num_workers workers gets an equal share.
  surge::v1::LatePolicy late_policy = surge::v1::LATE_POLICY_SEND;
  int64_t late_threshold_ns = 0;
  double catch_up_rps = 0;
  // Streaming window: assign requests planned up to this
  // far ahead of now, in batches of at most max_batch, with at most
  // max_outstanding_per_worker assigned-but-unfinished per worker.
  std::chrono::milliseconds lookahead{2000};
  size_t max_batch = 512;
  size_t max_outstanding_per_worker = 16384;
  // Warm-ups (RunConfig.num_warmups; docs/DATASETS.md "Warm-up and steady
  // state"): their planned offsets, ns after t0, negative and increasing
  // (WarmupOffsetsNs), and their payloads (warm-up s sends
  // warmup_payloads->At(s); must outlive Run). They go through the same
  // ledger, windows and workers as the plan, as index N + s with
  // Assignment.warmup, and t0 moves back by the first one's lead so that
  // none is due before the workers have Start. Empty = none.
  std::vector<int64_t> warmup_offsets_ns;
  const PayloadSource* warmup_payloads = nullptr;
  // Who gets the next request: round-robin by default.
  AssignPolicyKind assign = AssignPolicyKind::kRoundRobin;
  // Liveness: heartbeat period, lease, and the silence after which a worker
  // is dead.
  uint32_t heartbeat_ms = 250;
  uint32_t lease_ms = 1000;
  std::chrono::milliseconds dead_after{1500};
  // t0 = (time all workers are welcomed) + start_lead.
  std::chrono::milliseconds start_lead{500};
  // How long to wait for all workers to be ready (Hello answered and the
  // first heartbeat received: a worker heartbeats only once its HTTP sender
  // is built). The run starts only when every worker is ready.
  std::chrono::milliseconds hello_timeout{20000};
  // In-flight requests get this long after the first stop request (Ctrl-C).
  std::chrono::milliseconds drain{10000};
  // The same after SIGTERM (RequestStop(true): `docker stop`, a pod
  // eviction), shorter so that the drain, the cut-off wait and writing the
  // results fit inside the 10 s a container gets before SIGKILL.
  std::chrono::milliseconds terminate_drain{5000};
  // After a second stop request (or a stop by surge itself), how long the
  // coordinator still waits for the records of the requests it cut off;
  // anything without a record then is INTERRUPTED "interrupted: no_record".
  std::chrono::milliseconds cut_wait{1000};
  // Stop the run when the first this-many records of the run are all
  // connection failures (no response at all: errors "connect", "tls",
  // "connection_closed"): the target is unreachable. 0 = never (R-UI-5).
  uint32_t abort_after_connect_failures = 0;
  // The lateness monitor: threshold and cause thresholds
  // (threshold_ns 0 = no alarm). Its warnings are rate limited: one line per
  // alarm_log_interval, with the count of those it stands for.
  LatenessMonitorOptions lateness;
  std::chrono::milliseconds alarm_log_interval{10000};
  // End the run at the first alarm: nothing more is sent, the requests in
  // flight get alarm_drain and are then cut off (INTERRUPTED with what is
  // known of them), and the coordinator waits up to alarm_record_wait after
  // the stop for the records; all files are written. A worker that fell
  // behind is busy: its answers and cut-off records take a while.
  bool stop_on_alarm = false;
  std::chrono::milliseconds alarm_drain{0};
  std::chrono::milliseconds alarm_record_wait{2000};
  // The over-saturation stop (RunConfig.stop_on_saturation; the rule in
  // saturation_rule.h): unset = off. When it finds the server saturated,
  // nothing more is sent (NOT_SENT "not_sent: saturated"), the requests in
  // flight are cut off at once, and their records are awaited up to
  // alarm_record_wait.
  std::optional<SaturationOptions> saturation;
  // Where warning lines go (tests capture them); default: the log.
  RateLimitedLog::Writer log_writer = Log;
  // Called on the dispatcher thread every progress_period while running.
  std::function<void(const DispatchProgress&)> on_progress;
  std::chrono::milliseconds progress_period{250};
};

// One worker declared dead during the run and what became of the requests
// it held, for the summary and the actual page.
struct WorkerLoss {
  int32_t worker = -1;
  // When it was declared dead, ns after t0 on the coordinator's clock.
  int64_t at_ns = 0;
  // Why, e.g. "silent for 1500 ms" or "process exited (signal 9)".
  std::string why;
  // Its requests that may have been sent: LOST "send_unknown: ...".
  uint64_t send_unknown = 0;
  // Provably unsent but already due: NOT_SENT "not_sent: worker k lost ...".
  uint64_t not_sent = 0;
  // Provably unsent and still ahead: queued again for the others.
  uint64_t reassigned = 0;
};

// One worker that joined and was dropped again before the start (silent or
// unreachable during the join wait); its slot went to the next worker that
// joined, and it sent nothing of the run.
struct JoinDrop {
  int32_t worker = -1;
  // Where it ran (WorkerRegistry::Describe), e.g. "10.0.0.7, host w1".
  std::string who;
  // Why, e.g. "silent for 1500 ms" or "unreachable (its connection is gone)".
  std::string why;
  // When it was dropped, ns after t0 on the coordinator's clock (negative:
  // every drop is before t0).
  int64_t at_ns = 0;
  // Workers the run still waited for to join after the drop: the expected
  // count minus those joined (ready or still setting up).
  int32_t still_missing = 0;
};

struct DispatchOutcome {
  // Who each worker of the run was, by index, as the logs name it
  // (WorkerRegistry::Describe at the start: address, host, pid).
  std::vector<std::string> worker_names;
  // The user asked to stop (RequestStop) after the start; `terminated`
  // when that stop was SIGTERM's.
  bool interrupted = false;
  bool terminated = false;
  // Stopped by --stop-on-alarm at the first lateness alarm (stop_message
  // says which worker, when and why).
  bool stopped_on_alarm = false;
  // Stopped by the over-saturation rule (stop_message says why), at
  // saturated_at_ns after t0.
  bool saturated = false;
  int64_t saturated_at_ns = 0;
  // The lateness monitor's verdict, and how many alarm
  // reports there were and how many warning lines they took.
  ScheduleVerdict schedule;
  uint64_t alarm_lines = 0;
  // When the first stop request was seen, ns from t0 (valid when interrupted).
  int64_t interrupted_at_ns = 0;
  // The run was stopped by surge because its first
  // abort_after_connect_failures records were all connection failures;
  // `stop_message` says so in words.
  bool target_unreachable = false;
  std::string stop_message;
  // Records with status LOST (a worker was lost while it held them).
  uint64_t send_unknown = 0;
  // Records delivered through the sink (== plan size on return), and of
  // the warm-ups (== their count on return; not in `records`).
  uint64_t records = 0;
  uint64_t warmup_records = 0;
  uint64_t reassigned = 0;
  // Records that broke the ledger rules (wrong owner/attempt, duplicates):
  // dropped and counted; 0 in a healthy run.
  uint64_t rejected_records = 0;
  uint64_t workers_lost = 0;
  // Of those, how many spoke again later and were told to stop ("fenced"),
  // not counting one whose Goodbye says it left on its own (it gave up on
  // the coordinator before it heard the Stop).
  uint64_t workers_fenced = 0;
  // One entry per lost worker, in the order they were declared dead.
  std::vector<WorkerLoss> worker_losses;
  // Workers that left on their own after the start (a stop signal): they
  // handed back what they had not released (HandBack) and finished their
  // requests in flight; none of them is in workers_lost. `handed_back`:
  // the requests they handed back (queued again for the others, or
  // not_sent when already due).
  uint64_t workers_left = 0;
  uint64_t handed_back = 0;
  // Workers dropped during the join wait, in the order they were dropped
  // (none of them is in workers_lost: they never held a request).
  std::vector<JoinDrop> left_before_start;
  // Frames from workers that were not an Envelope (DATA_LOSS from the
  // transport): skipped and counted; 0 in a healthy run.
  uint64_t undecodable_frames = 0;
  // Requests finalized LOST "record_lost: ..." because their worker reported
  // itself idle (nothing in flight, nothing queued) for kIdleGrace while
  // still owning them: their record or assignment was lost in transit.
  uint64_t records_lost_in_transit = 0;
  // t0 on the coordinator's steady clock, ns.
  int64_t t0_ns = 0;
  // By worker index: the worker's last clock estimate (R-DIST-4), from its
  // last heartbeat; samples == 0 for a worker that never reported one.
  std::vector<surge::v1::ClockReport> clocks;
};

class Dispatcher {
 public:
  // Receives every final record exactly once, on the dispatcher thread, times
  // relative to t0 (ns).
  using RecordSink = std::function<void(const surge::v1::RequestRecord&)>;

  // `pool` (may be null: workers only join) is asked whether worker k has
  // exited (process ground truth, faster than heartbeat silence); it must
  // outlive Run.
  Dispatcher(Clock& clock, Transport& transport, const ArrivalSchedule& plan,
             const PayloadSource& payloads, DispatcherOptions options, RecordSink sink,
             WorkerPool* pool = nullptr);

  // Runs to the end. Errors: UNAVAILABLE when not all workers said Hello in
  // time (nothing was sent then), ABORTED when every worker was lost (every
  // request still has its record).
  absl::StatusOr<DispatchOutcome> Run();

  // Asks the run to stop (Ctrl-C). Async-signal-safe: only sets a flag.
  // First call: nothing more is released (NOT_SENT "not_sent: interrupted"),
  // in-flight requests get `drain`. A second call cuts the drain short: the
  // workers cut off what is in flight (INTERRUPTED, with what is known of
  // each) and the coordinator waits at most `cut_wait` for those records.
  // `terminate`: the stop is SIGTERM's (terminate_drain, and the run is
  // reported "stopped (SIGTERM)" instead of "interrupted by the user").
  void RequestStop(bool terminate = false) {
    if (terminate) terminate_requested_.store(true);
    stop_requests_.fetch_add(1);
  }

 private:
  using Worker = WorkerRegistry::Worker;
  // Assignments waiting to go to one worker in its next AssignmentBatch.
  struct Outbox {
    std::vector<surge::v1::Assignment> pending;
    uint64_t assign_seq = 0;
  };

  absl::Status AwaitWorkers();
  void Send(const Worker& worker, surge::v1::Envelope envelope);
  // `index` and `alive` only choose the log level of a failed send.
  void SendTo(const std::string& peer, int32_t index, bool alive, surge::v1::Envelope envelope);
  void Handle(Inbound& in);
  // The Hello of `peer`: joins it (Welcome) or refuses it (Reject).
  void HandleHello(const Inbound& in, Clock::TimePoint now);
  // The join wait's membership check at `now`: drops every joined worker
  // that is silent (FindGoneBeforeStart) or whose connection is gone (a
  // Ping it cannot be sent). Pings the workers quiet for kProbeAfter, or
  // every one with `probe_all` (just before t0). Returns how many left.
  int DropGone(Clock::TimePoint now, bool probe_all);
  bool Reachable(const Worker& worker);
  // The workers' own pre-flight checks, once all are ready: OK, or (unless
  // allow_unreachable_workers) UNAVAILABLE naming each worker that cannot
  // connect to the target and why.
  absl::Status CheckWorkersReachTarget();
  // A message from a worker dropped before the start: told to stop.
  void AnswerLeft(WorkerRegistry::Left& left);
  // A final record from the ledger: counted, checked by the connect-failure
  // rule, handed to the sink.
  void Deliver(surge::v1::RequestRecord record);
  void Refill(Clock::TimePoint now);
  void FlushPending(Worker& worker, bool last);
  void SweepLiveness(Clock::TimePoint now);
  void DeclareDead(Worker& worker, Clock::TimePoint now, const std::string& why);
  // A worker leaving on its own hands back what it never released (and
  // what still waits in its outbox): queued again or not_sent; it is
  // assigned nothing more.
  void OnHandBack(Worker& worker, const surge::v1::HandBack& hand_back, Clock::TimePoint now);
  // Its Goodbye: a leaving worker that owns nothing more is gone without
  // being lost; one that still owns requests is declared dead.
  void OnGoodbye(Worker& worker, const surge::v1::Goodbye& goodbye, Clock::TimePoint now);
  void FinishUnassigned(const std::string& reason);
  // A failed Receive: counts and logs (the first undecodable frame only).
  void OnReceiveError(const absl::Status& status);
  // Finalizes as LOST the past-due requests of workers idle for the grace
  // period: nothing else would ever end them (see records_lost_in_transit).
  void SweepIdleOwners(Clock::TimePoint now);
  // The run's phases: fixes t0, sends the first window and Start; serves
  // turns (stop rules, messages, sweeps, refills) until every record is in,
  // the wait after a stop ends, or no worker is left (false then); releases
  // the workers and awaits their Goodbyes.
  void StartRun();
  bool Serve();
  void Release();
  void ReportProgress(Clock::TimePoint now);
  // Takes and handles the messages of one turn.
  void ReceiveTurn();

  // What a stop rule asks for when its cause appears: the Stop reason (also
  // "not_sent: <reason>" for what was never released), the drain the
  // requests in flight get, when the wait for their records ends (unset:
  // drain + cut_wait), and whether it only cuts off a stop under way.
  struct StopOrder {
    std::string reason;
    std::chrono::milliseconds drain{0};
    std::optional<Clock::TimePoint> records_by;
    bool cut_off = false;
  };
  // The stop rules, asked in this order at every turn (in the manner of
  // Nighthawk's termination predicates: each answers "stop now, and why?",
  // logging the why): the user's stop (Ctrl-C), the user's second stop
  // (cuts off the drain), the lateness alarm (--stop-on-alarm), the
  // unreachable target (the connect-failure rule).
  std::optional<StopOrder> UserStopRule(Clock::TimePoint now);
  std::optional<StopOrder> SecondStopRule(Clock::TimePoint now);
  std::optional<StopOrder> AlarmStopRule(Clock::TimePoint now);
  std::optional<StopOrder> UnreachableStopRule(Clock::TimePoint now);
  // The over-saturation rule (DispatcherOptions::saturation): fed the
  // requests in flight every progress period, asked once a second.
  std::optional<StopOrder> SaturationStopRule(Clock::TimePoint now);
  void ApplyStopRules(Clock::TimePoint now);
  // The one way a Stop is made, and sent to every worker (or the alive
  // ones).
  static surge::v1::Envelope StopEnvelope(const std::string& reason,
                                          std::chrono::milliseconds drain);
  void StopWorkers(const std::string& reason, std::chrono::milliseconds drain, bool alive_only);
  // Stops releasing (the rest NOT_SENT "not_sent: <reason>") and tells the
  // workers to stop with `drain`.
  void BeginStop(Clock::TimePoint now, const std::string& reason, std::chrono::milliseconds drain);
  void CountConnectFailure(const surge::v1::RequestRecord& record);
  // Feeds a heartbeat's SendHealth to the lateness monitor; warns (rate
  // limited) and, with stop_on_alarm, marks the run to stop at the first
  // alarm.
  void ObserveLateness(const Worker& w, const surge::v1::Heartbeat& hb, Clock::TimePoint now);
  int64_t NowRelNs(Clock::TimePoint now) const { return ToNanos(now) - t0_ns_; }

  Clock& clock_;
  Transport& transport_;
  const PayloadSource& payloads_;
  const DispatcherOptions options_;
  RecordSink sink_;
  // From the pool; empty without one.
  WorkerRegistry::ExitProbe exited_;
  // Workers a failed send has been logged for (once each).
  std::set<int32_t> send_failures_logged_;
  std::atomic<int> stop_requests_{0};
  std::atomic<bool> terminate_requested_{false};

  // The parts this class composes: who holds which request (ledger), who
  // is there and alive (registry), who gets the next request (policy).
  RequestLedger ledger_;
  WorkerRegistry registry_;
  std::unique_ptr<AssignmentPolicy> policy_;
  std::vector<Outbox> outboxes_;   // by worker index
  std::vector<WorkerLoad> loads_;  // scratch for the policy, by position
  uint64_t seq_ = 0;
  int64_t t0_ns_ = 0;
  DispatchOutcome outcome_;
  // The connect-failure rule: records counted so far, and whether a record
  // other than a connection failure has settled it (rule off).
  uint32_t connect_failures_ = 0;
  bool connect_rule_settled_ = false;
  bool stopping_ = false;
  // The stop rules' memory: the user's first and second stop were seen.
  bool user_stop_seen_ = false;
  // The over-saturation rule and when it was last fed and asked.
  std::optional<SaturationRule> saturation_;
  Clock::TimePoint saturation_fed_{};
  Clock::TimePoint saturation_checked_{};
  bool second_stop_seen_ = false;
  Clock::TimePoint stop_deadline_{};
  LatenessMonitor lateness_;
  RateLimitedLog alarm_log_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_DISPATCHER_H_
