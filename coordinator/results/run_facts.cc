#include "coordinator/results/run_facts.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/enum_spelling.h"
#include "common/time_units.h"
#include "coordinator/dispatch/lateness_monitor.h"
#include "coordinator/report/clock_summary.h"
#include "coordinator/report/run_context.h"
#include "coordinator/report/worker_losses.h"

namespace surge::coordinator {
namespace {

using surge::v1::RunConfig;
using surge::v1::RunFacts;

constexpr char kClockNote[] =
    "offset = worker clock - coordinator clock at at_coord_ns (NTP-style probes and heartbeats, "
    "minimum-RTT filtering, least-squares drift); every deadline is mapped through it";

// "completed", or how the run was stopped.
std::string StopReason(const absl::StatusOr<DispatchOutcome>& outcome) {
  if (!outcome.ok()) return absl::StrCat("stopped: ", outcome.status().message());
  if (outcome->interrupted) {
    return absl::StrFormat("%s at %.2f s",
                           outcome->terminated ? "stopped (SIGTERM)" : "interrupted by the user",
                           NanosToSeconds(outcome->interrupted_at_ns));
  }
  if (outcome->stopped_on_alarm) {
    return absl::StrCat("stopped by surge (--stop-on-alarm): ", outcome->stop_message);
  }
  if (outcome->target_unreachable) {
    return absl::StrCat("stopped by surge: target unreachable: ", outcome->stop_message);
  }
  if (outcome->saturated) {
    return absl::StrCat("stopped by surge (--stop-on-saturation): ", outcome->stop_message);
  }
  return "completed";
}

// The worker-loss and transport counters, the losses and the clocks.
void AddCounters(const DispatchOutcome& o, RunFacts* f) {
  f->set_send_unknown(o.send_unknown);
  f->set_reassigned(o.reassigned);
  f->set_rejected_records(o.rejected_records);
  f->set_workers_lost(o.workers_lost);
  f->set_workers_fenced(o.workers_fenced);
  f->set_workers_left(o.workers_left);
  f->set_handed_back(o.handed_back);
  for (const WorkerLoss& l : o.worker_losses) {
    *f->add_worker_losses() =
        WorkerLossFactOf(l.worker, l.at_ns, l.why, l.send_unknown, l.not_sent, l.reassigned);
  }
  f->set_undecodable_frames(o.undecodable_frames);
  f->set_records_lost_in_transit(o.records_lost_in_transit);
  *f->mutable_clock_sync() = ClockSyncFactsOf(o.clocks);
}

}  // namespace

RunFacts ConfiguredRunFacts(const RunConfig& config, const ResolvedTraffic& traffic,
                            const std::string& dataset) {
  RunFacts f;
  f.set_seed(config.seed());
  f.set_dataset(dataset);
  f.set_num_prompts(config.num_prompts());
  f.set_target_rate_rps(traffic.target_rate_rps);
  f.set_burstiness(traffic.burstiness);
  f.set_ramp_up_active(traffic.ramp_active);
  f.set_ramp_up_strategy(std::string(RampStrategyTitle(traffic.strategy)));
  f.set_instant_mode(traffic.instant);
  f.set_trace_replay(traffic.trace_replay);
  f.set_base_url(RedactedUrl(config.target().base_url()));
  f.set_endpoint(config.target().endpoint());
  f.set_model(config.target().model());
  f.set_workers(config.workers());
  f.set_assign(EnumSpelling(config.assign()));
  f.set_max_concurrency(config.max_concurrency());
  f.set_late_policy(EnumSpelling(config.late_policy()));
  f.set_late_threshold_ms(config.late_threshold_ms());
  if (config.has_catch_up_rps()) f.set_catch_up_rps(config.catch_up_rps());
  return f;
}

ScheduleFacts ScheduleFactsOf(const absl::StatusOr<DispatchOutcome>& outcome,
                              const RunConfig& config) {
  ScheduleFacts f;
  f.judged = config.lateness_alarm_ms() > 0;
  f.lateness_alarm_ms = config.lateness_alarm_ms();
  if (!outcome.ok()) return f;
  const ScheduleVerdict& v = outcome->schedule;
  if (!v.kept) {
    f.fell_behind_at_s = std::max(0.0, NanosToSeconds(v.fell_behind_at_ns));
    f.worker = v.worker;
    f.lateness_ms = static_cast<double>(v.lateness_ns) / 1e6;
    f.cause = std::string(LatenessCauseKey(v.diagnosis.cause));
    f.cause_text = v.diagnosis.text;
  }
  f.worst_window_p99_ms = static_cast<double>(v.worst_p99_ns) / 1e6;
  f.alarm_reports = v.over_reports;
  f.alarm_lines = outcome->alarm_lines;
  f.stopped_on_alarm = outcome->stopped_on_alarm;
  return f;
}

void AddOutcomeFacts(const absl::StatusOr<DispatchOutcome>& outcome, const RunConfig& config,
                     RunFacts* facts) {
  facts->set_interrupted(outcome.ok() ? outcome->interrupted : true);
  if (outcome.ok() && outcome->interrupted) {
    facts->set_interrupted_at_s(std::round(NanosToSeconds(outcome->interrupted_at_ns) * 100) / 100);
  }
  facts->set_stop_reason(StopReason(outcome));
  if (outcome.ok() && outcome->saturated) {
    facts->set_saturated(true);
    facts->set_saturated_at_s(std::round(NanosToSeconds(outcome->saturated_at_ns) * 100) / 100);
  }
  if (outcome.ok()) AddCounters(*outcome, facts);
  facts->set_clock_note(kClockNote);
  *facts->mutable_schedule() = ScheduleFactOf(ScheduleFactsOf(outcome, config));
}

namespace {

// The worker failures concentrate on, or -1 (RunFacts.failures_concentrate).
int32_t ConcentratedFailures(const RunSummary& summary) {
  uint64_t failed = 0, records = 0;
  for (const auto& [index, c] : summary.by_worker) {
    failed += c.failed;
    records += c.records;
  }
  if (failed < 10 || summary.by_worker.size() < 2) return -1;
  for (const auto& [index, c] : summary.by_worker) {
    const uint64_t others_failed = failed - c.failed;
    const uint64_t others_records = records - c.records;
    if (c.records == 0 || 2 * c.failed < failed) continue;
    // c.failed / c.records >= 2 * others_failed / others_records.
    if (others_records == 0 || c.failed * others_records >= 2 * others_failed * c.records) {
      return index;
    }
  }
  return -1;
}

}  // namespace

void AddWorkerFacts(const absl::StatusOr<DispatchOutcome>& outcome, const RunSummary& summary,
                    RunFacts* facts) {
  for (const auto& [index, c] : summary.by_worker) {
    surge::v1::WorkerFact* f = facts->add_by_worker();
    f->set_worker(index);
    if (outcome.ok() && static_cast<size_t>(index) < outcome->worker_names.size()) {
      f->set_who(outcome->worker_names[index]);
    }
    f->set_records(c.records);
    f->set_sent(c.sent);
    f->set_ok(c.ok);
    f->set_failed(c.failed);
    f->set_interrupted(c.interrupted);
    f->set_not_sent(c.not_sent);
    f->set_lost(c.lost);
  }
  const int32_t worker = ConcentratedFailures(summary);
  if (worker < 0) return;
  const WorkerCounts& c = summary.by_worker.at(worker);
  uint64_t others_failed = 0, others_records = 0;
  for (const auto& [index, other] : summary.by_worker) {
    if (index == worker) continue;
    others_failed += other.failed;
    others_records += other.records;
  }
  const std::string who = outcome.ok() && static_cast<size_t>(worker) < outcome->worker_names.size()
                              ? outcome->worker_names[worker]
                              : std::string();
  facts->set_failures_concentrate(absl::StrCat(
      "failures concentrate on worker ", worker, who.empty() ? "" : absl::StrCat(" (", who, ")"),
      ": ", c.failed, " of its ", c.records, " requests failed, ", others_failed, " of ",
      others_records, " on the other workers"));
}

}  // namespace surge::coordinator
