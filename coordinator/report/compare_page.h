// The page of `surge compare A B` (docs/COMPARE.md): compare.html, one
// self-contained file with plotly.js inline (works offline, like the RPS
// pages): the verdict or why there is none, the numbers per metric, both
// runs' certificates, the paired differences B − A over plan time and the
// two runs' distributions (ECDFs) per metric.
#ifndef SURGE_COORDINATOR_REPORT_COMPARE_PAGE_H_
#define SURGE_COORDINATOR_REPORT_COMPARE_PAGE_H_

#include <cstddef>
#include <filesystem>

#include "absl/status/status.h"
#include "coordinator/capacity/compare_runs.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

// Points drawn per metric at most: the paired differences keep every k-th
// pair (k the smallest that fits), each ECDF at most kCompareEcdfPoints
// evenly spaced quantiles. The numbers in the table use every pair.
inline constexpr size_t kCompareMaxDiffPoints = 20000;
inline constexpr size_t kCompareEcdfPoints = 1000;

// The page's two figures as plotly JSON: {"diff": {data, layout}, "dist":
// {data, layout}}. Trace names: "<metric> B − A" for the differences (x
// planned offset s, y ms), "<metric> A" and "<metric> B" for the ECDFs.
// Pure.
nlohmann::json CompareFigures(const Comparison& c);

// Writes compare.html at `html_path` (the folder is created). Errors:
// INTERNAL naming the path.
absl::Status WriteComparePage(const Comparison& c, const std::filesystem::path& html_path);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_COMPARE_PAGE_H_
