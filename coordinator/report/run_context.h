// The run context shown at the top of both RPS pages, so a page read alone
// says what it shows: model, server, endpoint, dataset, seed, N, traffic,
// workers, concurrency cap, when the run started and which surge made it.
// Pure: the caller supplies the start time text and the version.
#ifndef SURGE_COORDINATOR_REPORT_RUN_CONTEXT_H_
#define SURGE_COORDINATOR_REPORT_RUN_CONTEXT_H_

#include <string>
#include <string_view>

#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/report/page_types.h"  // PageContext
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// `url` without user info ("user:secret@") and without query and fragment
// ("?key=…"), where credentials could hide: the pages and the summary show
// the server, never a secret. "http://u:p@h:8000/v1?k=1" → "http://h:8000/v1".
std::string RedactedUrl(std::string_view url);

// The context rows, in display order, with these labels: Model, Server,
// Endpoint, Dataset, Requests (N), Seed, then the traffic's own rows
// (TrafficDescription::context: Request rate, Burstiness (β) or Interval
// sampler, Ramp-up), Workers, Assignment, Max concurrency, Run started,
// surge version.
// `config` is the configuration used (run_config.json: the model and worker
// count as resolved; an empty base_url means `surge plan` without a target).
// `plan` gives N and the traffic's description. `started_at` is the run's start in local time
// (empty = unknown).
PageContext RunContextItems(const surge::v1::RunConfig& config, const ArrivalSchedule& plan,
                            const std::string& dataset, const std::string& started_at,
                            std::string_view version);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_RUN_CONTEXT_H_
