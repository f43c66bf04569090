// The sweep page, sweep.html (docs/CAPACITY.md "The sweep page"): TTFT,
// TPOT and E2EL p50/p99, throughput and goodput against the offered rate,
// each point's certificate and the server's peak waiting queue, with the
// answer drawn. A point surge could not keep is drawn hollow and says why;
// a saturated one is a diamond. One self-contained file (plotly.js inline,
// offline), written from sweep.json's object (coordinator/sweep).
#ifndef SURGE_COORDINATOR_REPORT_SWEEP_PAGE_H_
#define SURGE_COORDINATOR_REPORT_SWEEP_PAGE_H_

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

// The page's charts as plotly figures {"latency", "throughput",
// "certificate", "waiting"}, each {data, layout}; "waiting" only when some
// point has a peak waiting queue. Pure.
nlohmann::json SweepFigures(const nlohmann::json& sweep);

// Writes the page for `sweep` (sweep.json's object) at `html_path`.
// Errors: INTERNAL naming the file.
absl::Status WriteSweepPage(const nlohmann::json& sweep, const std::filesystem::path& html_path);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_SWEEP_PAGE_H_
