// Worker losses (R-DIST-6) in words and numbers: when a worker was declared
// dead mid-run, why, and what became of the requests it held (may have been
// sent → LOST send_unknown; provably unsent but already due → NOT_SENT;
// still ahead → moved to the other workers). For the summary JSON's run
// block (run.worker_losses), the console summary and the actual page (a red
// line at the moment on the time axes, and the sentence above the charts).
// Pure: facts in, text out; `surge report` redraws the page from the summary
// JSON alone.
#ifndef SURGE_COORDINATOR_REPORT_WORKER_LOSSES_H_
#define SURGE_COORDINATOR_REPORT_WORKER_LOSSES_H_

#include <google/protobuf/repeated_ptr_field.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/report/rps_figure.h"  // RunEvent
#include "surge/v1/run_facts.pb.h"

namespace surge::coordinator {

using WorkerLossFacts = google::protobuf::RepeatedPtrField<surge::v1::WorkerLossFact>;

// One entry of run.worker_losses: worker, at_s (seconds after t0, rounded to
// 0.01 s), at_ns (exact), why, send_unknown, not_sent, reassigned. `at_ns`
// is ns after t0 on the coordinator's clock.
surge::v1::WorkerLossFact WorkerLossFactOf(int32_t worker, int64_t at_ns, std::string_view why,
                                           uint64_t send_unknown, uint64_t not_sent,
                                           uint64_t reassigned);

// The sentence for one loss, e.g. "worker 2 lost at 16.24 s (silent for
// 1500 ms): 52 send_unknown, 25 not sent, 3,010 moved to the others".
std::string WorkerLossText(const surge::v1::WorkerLossFact& loss);

// The short label on the page's line, e.g. "worker 2 lost: 52 send_unknown,
// 25 not sent, 3,010 moved".
std::string WorkerLossLabel(const surge::v1::WorkerLossFact& loss);

// One RunEvent per loss (at_s, WorkerLossLabel, WorkerLossText), in order.
std::vector<RunEvent> WorkerLossEvents(const WorkerLossFacts& worker_losses);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_WORKER_LOSSES_H_
