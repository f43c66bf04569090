// The server telemetry's part of a run's end (docs/METRICS.md "Server
// telemetry"), for `surge run` and `surge report` alike: the run folder's
// {dataset}_server_metrics.jsonl read back into the summary's
// `server_metrics` block, its console line and the actual page's traces.
#ifndef SURGE_COORDINATOR_RESULTS_SERVER_METRICS_RESULTS_H_
#define SURGE_COORDINATOR_RESULTS_SERVER_METRICS_RESULTS_H_

#include <filesystem>
#include <optional>
#include <string>

#include "coordinator/report/server_figure.h"
#include "coordinator/telemetry/server_metrics.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

struct ServerMetricsResults {
  nlohmann::json summary;    // the `server_metrics` block
  std::string console_line;  // "server metrics: 31 samples (0 failed), ..."
  ServerSeries series;       // the page's running and waiting requests
};

// From the folder's file; nullopt (and a warning) when there is none.
// Unreadable lines are skipped with a warning.
std::optional<ServerMetricsResults> ReadServerMetricsResults(const std::filesystem::path& folder,
                                                             const std::string& dataset,
                                                             const ServerMetricsSource& source);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_SERVER_METRICS_RESULTS_H_
