// The run's facts (surge/v1/run_facts.proto) from its configuration, its
// plan and the dispatcher's outcome: what `surge run` writes as the summary
// JSON's run block.
#ifndef SURGE_COORDINATOR_RESULTS_RUN_FACTS_H_
#define SURGE_COORDINATOR_RESULTS_RUN_FACTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/report/schedule_verdict.h"
#include "coordinator/results/summary.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/run_facts.pb.h"

namespace surge::coordinator {

// The configured part: seed, dataset (the file-name stem), num_prompts, the
// plan's traffic facts, the target (base URL redacted), workers, assign
// ("round-robin" when empty), concurrency cap, late-send policy ("send"
// when empty), its threshold and catch-up rate (unset when not given).
// Pure.
surge::v1::RunFacts ConfiguredRunFacts(const surge::v1::RunConfig& config,
                                       const ResolvedTraffic& traffic, const std::string& dataset);

// The lateness monitor's verdict as report facts (run.schedule): judged when
// the config's lateness alarm is on; only the alarm's settings when the
// dispatcher failed. Pure.
ScheduleFacts ScheduleFactsOf(const absl::StatusOr<DispatchOutcome>& outcome,
                              const surge::v1::RunConfig& config);

// How the run ended, into `facts`: interrupted (also when the dispatcher
// failed) and when (rounded to 0.01 s), the stop reason in words, the
// worker-loss and transport counters and losses, each worker's clock
// estimate and the schedule verdict. A failed dispatcher leaves the counters
// 0 and the clocks empty. Pure.
void AddOutcomeFacts(const absl::StatusOr<DispatchOutcome>& outcome,
                     const surge::v1::RunConfig& config, surge::v1::RunFacts* facts);

// One WorkerFact per worker of the summary's by_worker (named from the
// outcome's worker_names where the dispatcher ran), and the sentence
// failures_concentrate when failures concentrate on one worker (the rule
// is RunFacts.failures_concentrate's). Pure.
void AddWorkerFacts(const absl::StatusOr<DispatchOutcome>& outcome, const RunSummary& summary,
                    surge::v1::RunFacts* facts);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_RUN_FACTS_H_
