// One point of a sweep (docs/CAPACITY.md): a complete run at one rate,
// what it measured, its certificate, and whether it passed the objective.
// Read from the point's run folder; kept in sweep.json, from which a resumed
// sweep reads its finished points back.
#ifndef SURGE_COORDINATOR_SWEEP_SWEEP_POINT_H_
#define SURGE_COORDINATOR_SWEEP_SWEEP_POINT_H_

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/capacity/certificate.h"
#include "coordinator/sweep/slo_search.h"
#include "nlohmann/json.hpp"

namespace surge::coordinator {

// How a point ended.
enum class PointStatus {
  kOk,           // it ran to its end and surge kept its schedule
  kSaturated,    // the over-saturation rule ended it early: the server's limit
  kInvalid,      // its certificate failed: surge was the limit
  kInterrupted,  // Ctrl-C or SIGTERM: not finished (a resumed sweep runs it again)
  kFailed,       // the run failed (target unreachable, ...): not finished
};
std::string_view PointStatusName(PointStatus status);

// The objective of a sweep: the goodput SLOs (--goodput) and the share of
// a point's requests that must meet them.
struct SweepObjective {
  bool has_goodput = false;
  double goodput_fraction = 0.95;
};

struct SweepPoint {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // 1, 2, ... in the order the points ran; the rate asked, requests/s.
  int number = 0;
  double rate_rps = 0;
  // Run once more with more workers after an invalid first try (0 = the
  // first run). The workers the run used.
  int attempt = 0;
  uint32_t workers = 0;
  // The run folder (.../performances/<model>), relative to the sweep folder.
  std::string folder;
  PointStatus status = PointStatus::kFailed;
  // Why it is invalid, saturated, interrupted or failed; empty when ok.
  std::string note;
  // Latencies of the OK requests, ms; throughputs, requests/s and tokens/s.
  double ttft_p50_ms = kNaN, ttft_p99_ms = kNaN;
  double tpot_p50_ms = kNaN, tpot_p99_ms = kNaN;
  double e2el_p50_ms = kNaN, e2el_p99_ms = kNaN;
  double request_throughput_rps = kNaN, output_token_throughput = kNaN;
  // With --goodput: requests/s that met every SLO, and their share of the
  // point's requests.
  double goodput_rps = kNaN, goodput_fraction = kNaN;
  // The largest waiting queue the server reported (--server-metrics); NaN
  // without telemetry.
  double peak_waiting = kNaN;
  // Planned requests, and when the saturation rule stopped it (s after t0).
  uint64_t requests = 0;
  double saturated_at_s = kNaN;
  RunCertificate certificate;

  // Certified points only: ok or saturated (a saturated point's schedule is
  // judged on what it sent).
  bool certified() const { return status == PointStatus::kOk || status == PointStatus::kSaturated; }
  // Finished: a resumed sweep keeps it.
  bool finished() const {
    return status != PointStatus::kInterrupted && status != PointStatus::kFailed;
  }
};

// The point from its run's summary ({dataset}.json) and certificate; the
// status from both: interrupted (a stop signal), failed (`run_failed`: the
// run ended with an error other than a stop by surge; `failure` says
// which), saturated (run.saturated), invalid (the certificate failed), else
// ok. Pure.
SweepPoint PointFromSummary(const nlohmann::json& summary, const RunCertificate& certificate,
                            bool interrupted, bool run_failed, const std::string& failure);

// Reads the point's summary and certificate from `run_folder`. Errors as
// ReadRunCertificate.
absl::StatusOr<SweepPoint> ReadSweepPoint(const std::filesystem::path& run_folder, bool interrupted,
                                          bool run_failed, const std::string& failure);

// The point against the objective: kPass when certified, not saturated and
// (with goodput) at least the fraction met the SLOs; kFail when saturated
// or below the fraction; kInvalid when not certified. Without goodput a
// certified point passes.
PointOutcome OutcomeOf(const SweepPoint& point, const SweepObjective& objective);

// The point as sweep.json holds it: every field by name (NaN as null), the
// status by PointStatusName, the certificate as CertificateJson.
nlohmann::json PointJson(const SweepPoint& point);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_SWEEP_SWEEP_POINT_H_
