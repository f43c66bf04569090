// Worker losses (R-DIST-6; DISTRIBUTED.md §6) in words and numbers: when a
// worker was declared dead mid-run, why, and what became of the requests it
// held (may have been sent → LOST send_unknown; provably unsent but already
// due → NOT_SENT; still ahead → moved to the other workers). For the summary
// JSON's run block (run.worker_losses), the console summary and the actual
// page (a red line at the moment on the time axes, and the sentence above
// the charts). Pure: JSON in, text out; `surge report` redraws the page from
// the summary JSON alone.
#ifndef SURGE_COORDINATOR_REPORT_WORKER_LOSSES_H_
#define SURGE_COORDINATOR_REPORT_WORKER_LOSSES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/report/rps_figure.h"  // RunEvent
#include "nlohmann/json.hpp"

namespace surge::coordinator {

// One object of run.worker_losses: {"worker", "at_s" (seconds after t0,
// rounded to 0.01 s), "at_ns" (exact), "why", "send_unknown", "not_sent",
// "reassigned"}. `at_ns` is ns after t0 on the coordinator's clock.
nlohmann::json WorkerLossJson(int32_t worker, int64_t at_ns, std::string_view why,
                              uint64_t send_unknown, uint64_t not_sent, uint64_t reassigned);

// The sentence for one WorkerLossJson object, e.g. "worker 2 lost at 16.24 s
// (silent for 1500 ms): 52 send_unknown, 25 not sent, 3,010 moved to the
// others". Empty for an object without a numeric "worker" and "at_s".
std::string WorkerLossText(const nlohmann::json& loss);

// The short label on the page's line, e.g. "worker 2 lost: 52 send_unknown,
// 25 not sent, 3,010 moved". Empty as for WorkerLossText.
std::string WorkerLossLabel(const nlohmann::json& loss);

// One RunEvent per well-formed entry of a run.worker_losses array (at_s,
// WorkerLossLabel, WorkerLossText); none for anything else (a summary
// written before worker_losses existed).
std::vector<RunEvent> WorkerLossEvents(const nlohmann::json& worker_losses);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_WORKER_LOSSES_H_
