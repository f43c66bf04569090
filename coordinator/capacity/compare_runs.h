// `surge compare A B` without the command line: two run folders of the same
// plan read and compared request by request (docs/COMPARE.md), the verdict
// or the reason there is none, and the files it is written to (compare.json;
// the page is coordinator/report/compare_page.h).
#ifndef SURGE_COORDINATOR_CAPACITY_COMPARE_RUNS_H_
#define SURGE_COORDINATOR_CAPACITY_COMPARE_RUNS_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/capacity/certificate.h"
#include "coordinator/capacity/paired_stats.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

struct CompareSettings {
  BootstrapSettings bootstrap;
  // Fewer pairs (requests ok in both runs) than this: no verdict.
  uint64_t min_pairs = 30;
};

// One run of the comparison.
struct ComparedRun {
  std::filesystem::path folder;
  std::string dataset;
  // The plan's hash and where it came from: "summary" (run.plan_hash) or
  // "plan_csv" (hashed here from {dataset}_plan.csv).
  std::string plan_hash;
  std::string plan_hash_source;
  RunCertificate certificate;
};

struct Comparison {
  ComparedRun a, b;
  CompareSettings settings;
  PairedRequests pairs;
  // kComparedMetrics, in order.
  std::vector<PairedMetric> metrics;
  // Whether there is a verdict; else every reason there is none (a failed
  // certificate, too few pairs), one sentence each.
  bool has_verdict = false;
  std::vector<std::string> no_verdict_reasons;
};

// The reasons `c` has no verdict (from its certificates and pair count),
// in order: A's certificate, B's, too few pairs. Pure.
std::vector<std::string> NoVerdictReasons(const RunCertificate& a, const RunCertificate& b,
                                          uint64_t pairs, uint64_t min_pairs);

// The plan hashes differ: no comparison. `a` and `b` as ComparedRun holds
// them. Pure. Errors: INVALID_ARGUMENT naming both folders and hashes.
absl::Status CheckSamePlan(const ComparedRun& a, const ComparedRun& b);

// Compares two requests' lists of the same plan: pairs, metrics, verdict.
// Pure.
Comparison CompareRequests(ComparedRun a, ComparedRun b, std::span<const RequestTimes> a_requests,
                           std::span<const RequestTimes> b_requests,
                           const CompareSettings& settings);

// Reads a run folder (.../performances/<model>): its dataset, certificate,
// plan hash (the summary's run.plan_hash, else the plan CSV's) and the
// requests of its details file (warm-ups left out; a line that does not
// read is skipped). Errors: INVALID_ARGUMENT naming the path and what is
// missing when it is not a run folder.
absl::StatusOr<ComparedRun> ReadComparedRun(const std::filesystem::path& folder,
                                            std::vector<RequestTimes>* requests);

// ReadComparedRun of both, CheckSamePlan, then CompareRequests.
absl::StatusOr<Comparison> CompareRunFolders(const std::filesystem::path& a,
                                             const std::filesystem::path& b,
                                             const CompareSettings& settings);

// Where the files go without --output-dir: beside A's timestamp folder,
// `compare_<A stamp>_vs_<B stamp>` (for A = OUT/20261204_021500Z/
// performances/m: OUT/compare_20261204_021500Z_vs_<B's stamp>). A folder
// not shaped .../<stamp>/performances/<model> uses its own name as the
// stamp and its parent as the place. Pure.
std::filesystem::path DefaultCompareDir(const std::filesystem::path& a,
                                        const std::filesystem::path& b);

// `ms` with three decimals (µs) as the table and the page show it: "n/a"
// for NaN, "0.000" for a value that would print as "-0.000". Pure.
std::string MsText(double ms);

// compare.json's object: both runs (folder, plan hash, certificate), the
// settings, the pair counts, every metric's numbers, and "verdict" (per
// metric: MetricVerdict) or "no_verdict_reason" (the reasons joined by
// "; ") with the other null. Pure.
nlohmann::json ComparisonJson(const Comparison& c);

// The console table: one row per metric (A median/p99, B median/p99, paired
// median difference [95 % CI], share faster in B), then the verdict or the
// reasons there is none. Pure.
std::string ComparisonTable(const Comparison& c);

// Writes ComparisonJson to `dir`/compare.json (creating `dir`). Errors:
// INTERNAL naming the path.
absl::Status WriteComparisonJson(const Comparison& c, const std::filesystem::path& dir);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CAPACITY_COMPARE_RUNS_H_
