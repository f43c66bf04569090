// The run certificate: whether a run kept the schedule it was asked for,
// so that its latencies describe the server and not surge falling behind.
// Read from the run folder's summary ({dataset}.json) and the actual page's
// JSON; `surge compare` refuses a verdict without a valid certificate for
// both runs (docs/COMPARE.md).
#ifndef SURGE_COORDINATOR_CAPACITY_CERTIFICATE_H_
#define SURGE_COORDINATOR_CAPACITY_CERTIFICATE_H_

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

// Lateness alarm causes (LatenessCauseKey) on the target's side: the
// server refused connections, or most sends needed a new connection
// because the server held the open ones (a saturated server in an open
// loop).
inline constexpr const char* kServerSideCauses[] = {"target_refusing", "connection_setup"};

// The lateness p99 limit when the run's lateness alarm was off, ms.
inline constexpr double kDefaultLatenessLimitMs = 10.0;
// The smallest achieved / intended rate of a kept schedule.
inline constexpr double kMinAchievedVsIntended = 0.99;

// Whether a run kept the schedule it was asked for (surge was not the
// limit), read from its folder.
struct RunCertificate {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // Every rule below holds.
  bool valid = false;
  // One sentence per failed rule, in rule order; empty when valid.
  std::vector<std::string> reasons;
  // What was seen but not held against the schedule (a lateness alarm
  // whose cause is on the target's side), one sentence each.
  std::vector<std::string> notes;
  // The lateness alarm's cause key when one fired (e.g. "cpu"), else empty.
  std::string cause;
  // Rates over the run, requests/s, and achieved / intended (NaN unknown).
  double intended_rate_rps = kNaN, achieved_rate_rps = kNaN, achieved_vs_intended = kNaN;
  // Send lateness p99 of the sent requests, ms, and its limit: the run's
  // lateness_alarm_ms, or kDefaultLatenessLimitMs when the alarm was off.
  double lateness_p99_ms = kNaN, lateness_limit_ms = kNaN;
  // The actual page's KS distance of achieved vs planned inter-send
  // intervals, and its 5 % critical value 1.358·sqrt((n+m)/(n·m)) for the
  // n = m = sent − 1 intervals. Reported, never a rule: a constant-rate
  // plan's intervals are all equal, so any jitter gives a large distance.
  double ks_distance = kNaN, ks_critical = kNaN;
  // Largest worker clock uncertainty (run.clock_sync[].uncertainty_ms), ms;
  // 0 for workers on the coordinator's clock; NaN when none reported.
  double clock_uncertainty_ms = kNaN;
  // run.stop_reason ("completed", "interrupted by the user at ...", ...).
  std::string stop_reason;
  // Whether the run was in instant mode (the rate rule is skipped there).
  bool instant_mode = false;
  // Requests sent and planned.
  uint64_t sent = 0, planned = 0;
};

// The certificate's rules, all of which must hold:
//   1. lateness p99 <= limit;
//   2. achieved / intended >= kMinAchievedVsIntended (skipped in instant
//      mode, where the intended rate is not defined);
//   3. no lateness alarm fired (run.schedule.schedule_kept true) whose
//      cause is on surge's side: an alarm the lateness monitor explains by
//      the target (kServerSideCauses: it refused connections, or its
//      connections took long to set up while it held every open one) is a
//      note, not a failure, as long as rules 1 and 2 hold;
//   4. no request lost (requests.lost 0) and no worker lost
//      (run.workers_lost 0).
// A run stopped early is judged on what it sent; stopping early is no rule.
// Pure: `summary` is the parsed {dataset}.json; `actual_page` the actual
// page's JSON (the whole page object, or its "stats" object), or null when
// there is none (then the KS fields stay NaN).
RunCertificate CertificateOf(const nlohmann::json& summary, const nlohmann::json* actual_page);

// Reads {dataset}.json and the actual page's .json from a run folder (the
// performances/<model> folder; the dataset is the stem of its one
// {dataset}_plan.csv). A missing actual page JSON leaves the KS fields NaN.
// Errors: NOT_FOUND naming the folder or file that is missing;
// INVALID_ARGUMENT naming a file that is not JSON.
absl::StatusOr<RunCertificate> ReadRunCertificate(const std::filesystem::path& run_folder);

// The certificate as a JSON object (sweep.json, compare.json): every field
// by its name, NaN as null.
nlohmann::json CertificateJson(const RunCertificate& c);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CAPACITY_CERTIFICATE_H_
