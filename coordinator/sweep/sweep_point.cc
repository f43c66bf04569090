#include "coordinator/sweep/sweep_point.h"

#include <cmath>
#include <initializer_list>

#include "absl/strings/str_join.h"
#include "coordinator/capacity/run_folder.h"

namespace surge::coordinator {
namespace {

using nlohmann::json;

double Ms(const json& summary, const char* metric, const char* percentile) {
  return NumberAt(summary, {metric, percentile}) * 1e3;
}

json Finite(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

void ReadMetrics(const json& summary, SweepPoint& p) {
  p.ttft_p50_ms = Ms(summary, "ttft_s", "p50");
  p.ttft_p99_ms = Ms(summary, "ttft_s", "p99");
  p.tpot_p50_ms = Ms(summary, "tpot_s", "p50");
  p.tpot_p99_ms = Ms(summary, "tpot_s", "p99");
  p.e2el_p50_ms = Ms(summary, "e2el_s", "p50");
  p.e2el_p99_ms = Ms(summary, "e2el_s", "p99");
  p.request_throughput_rps = NumberAt(summary, {"request_throughput_rps"});
  p.output_token_throughput = NumberAt(summary, {"output_token_throughput"});
  p.goodput_rps = NumberAt(summary, {"goodput", "goodput_rps"});
  const double good = NumberAt(summary, {"goodput", "good_requests"});
  const double total = NumberAt(summary, {"requests", "total"});
  if (std::isfinite(good) && total > 0) p.goodput_fraction = good / total;
  p.peak_waiting = NumberAt(summary, {"server_metrics", "peak_waiting"});
  p.requests = std::isfinite(total) ? static_cast<uint64_t>(total) : 0;
  const double workers = NumberAt(summary, {"run", "workers"});
  p.workers = std::isfinite(workers) ? static_cast<uint32_t>(workers) : 0;
}

bool Saturated(const json& summary) {
  const json* run = summary.contains("run") ? &summary["run"] : nullptr;
  return run != nullptr && run->is_object() && run->value("saturated", false);
}

}  // namespace

std::string_view PointStatusName(PointStatus status) {
  switch (status) {
    case PointStatus::kOk:
      return "ok";
    case PointStatus::kSaturated:
      return "saturated";
    case PointStatus::kInvalid:
      return "invalid";
    case PointStatus::kInterrupted:
      return "interrupted";
    case PointStatus::kFailed:
      return "failed";
  }
  return "failed";
}

SweepPoint PointFromSummary(const json& summary, const RunCertificate& certificate,
                            bool interrupted, bool run_failed, const std::string& failure) {
  SweepPoint p;
  p.certificate = certificate;
  ReadMetrics(summary, p);
  if (interrupted) {
    p.status = PointStatus::kInterrupted;
    p.note = certificate.stop_reason;
  } else if (run_failed) {
    p.status = PointStatus::kFailed;
    p.note = failure;
  } else if (!certificate.valid) {
    p.status = PointStatus::kInvalid;
    p.note = absl::StrJoin(certificate.reasons, "; ");
  } else if (Saturated(summary)) {
    p.status = PointStatus::kSaturated;
    p.saturated_at_s = NumberAt(summary, {"run", "saturated_at_s"});
    p.note = certificate.stop_reason;
  } else {
    p.status = PointStatus::kOk;
  }
  // What the certificate saw but did not hold against the point (an
  // invalid point's alarm cause too, when it was the target's).
  if (!certificate.notes.empty()) {
    if (!p.note.empty()) p.note += "; ";
    p.note += absl::StrJoin(certificate.notes, "; ");
  }
  return p;
}

absl::StatusOr<SweepPoint> ReadSweepPoint(const std::filesystem::path& run_folder, bool interrupted,
                                          bool run_failed, const std::string& failure) {
  absl::StatusOr<RunCertificate> certificate = ReadRunCertificate(run_folder);
  if (!certificate.ok()) return certificate.status();
  absl::StatusOr<std::string> dataset = RunFolderDataset(run_folder);
  if (!dataset.ok()) return dataset.status();
  absl::StatusOr<json> summary = ReadJsonFile(run_folder / (*dataset + ".json"));
  if (!summary.ok()) return summary.status();
  return PointFromSummary(*summary, *certificate, interrupted, run_failed, failure);
}

PointOutcome OutcomeOf(const SweepPoint& point, const SweepObjective& objective) {
  if (!point.certified()) return PointOutcome::kInvalid;
  if (point.status == PointStatus::kSaturated) return PointOutcome::kFail;
  if (!objective.has_goodput) return PointOutcome::kPass;
  return point.goodput_fraction >= objective.goodput_fraction ? PointOutcome::kPass
                                                              : PointOutcome::kFail;
}

json PointJson(const SweepPoint& p) {
  return {
      {"number", p.number},
      {"rate_rps", p.rate_rps},
      {"attempt", p.attempt},
      {"workers", p.workers},
      {"folder", p.folder},
      {"status", std::string(PointStatusName(p.status))},
      {"note", p.note},
      {"requests", p.requests},
      {"saturated_at_s", Finite(p.saturated_at_s)},
      {"metrics",
       {{"ttft_p50_ms", Finite(p.ttft_p50_ms)},
        {"ttft_p99_ms", Finite(p.ttft_p99_ms)},
        {"tpot_p50_ms", Finite(p.tpot_p50_ms)},
        {"tpot_p99_ms", Finite(p.tpot_p99_ms)},
        {"e2el_p50_ms", Finite(p.e2el_p50_ms)},
        {"e2el_p99_ms", Finite(p.e2el_p99_ms)},
        {"request_throughput_rps", Finite(p.request_throughput_rps)},
        {"output_token_throughput", Finite(p.output_token_throughput)},
        {"goodput_rps", Finite(p.goodput_rps)},
        {"goodput_fraction", Finite(p.goodput_fraction)},
        {"peak_waiting", Finite(p.peak_waiting)}}},
      {"certificate", CertificateJson(p.certificate)},
  };
}

}  // namespace surge::coordinator
