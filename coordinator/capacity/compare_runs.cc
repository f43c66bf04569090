#include "coordinator/capacity/compare_runs.h"

#include <cmath>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/atomic_file.h"
#include "common/time_units.h"
#include "coordinator/capacity/plan_hash.h"
#include "coordinator/capacity/run_folder.h"
#include "coordinator/results/run_files.h"

namespace surge::coordinator {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// A details record as the comparison needs it; the TPOT as the summary
// computes it (seconds, then ms).
RequestTimes TimesOf(const surge::v1::RequestRecord& r) {
  RequestTimes t;
  t.index = r.index();
  t.planned_offset_s = NanosToSeconds(r.planned_ns());
  t.ok = r.status() == surge::v1::OK;
  if (!t.ok) return t;
  const double ttft_s = NanosToSeconds(r.ttft_ns());
  const double e2el_s = NanosToSeconds(r.e2el_ns());
  t.ms[0] = ttft_s * 1e3;
  if (r.output_tokens() > 1) {
    t.ms[1] = (e2el_s - ttft_s) / static_cast<double>(r.output_tokens() - 1) * 1e3;
  }
  t.ms[2] = e2el_s * 1e3;
  return t;
}

// The plan hash the summary recorded, else the plan CSV's.
absl::Status FillPlanHash(const Json& summary, ComparedRun& run) {
  const Json* run_block =
      summary.is_object() && summary.contains("run") ? &summary["run"] : nullptr;
  if (run_block != nullptr && run_block->is_object() && run_block->contains("plan_hash") &&
      (*run_block)["plan_hash"].is_string()) {
    run.plan_hash = (*run_block)["plan_hash"].get<std::string>();
    run.plan_hash_source = "summary";
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> hash = PlanFileHash(run.folder / (run.dataset + "_plan.csv"));
  if (!hash.ok()) return hash.status();
  run.plan_hash = *hash;
  run.plan_hash_source = "plan_csv";
  return absl::OkStatus();
}

// A run folder's problem as the command's: the path and what is missing.
absl::Status NotARunFolder(const fs::path& folder, const absl::Status& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("not a run folder: ", folder.string(), ": ", why.message()));
}

Json NumberOrNull(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json RunJson(const ComparedRun& r) {
  return Json{{"folder", r.folder.string()},
              {"dataset", r.dataset},
              {"plan_hash", r.plan_hash},
              {"plan_hash_source", r.plan_hash_source},
              {"certificate", CertificateJson(r.certificate)}};
}

Json MetricJson(const PairedMetric& m) {
  return Json{{"metric", m.metric},
              {"pairs", m.pairs},
              {"a_median_ms", NumberOrNull(m.a_median_ms)},
              {"a_p99_ms", NumberOrNull(m.a_p99_ms)},
              {"b_median_ms", NumberOrNull(m.b_median_ms)},
              {"b_p99_ms", NumberOrNull(m.b_p99_ms)},
              {"median_diff_ms", NumberOrNull(m.median_diff_ms)},
              {"ci95_low_ms", NumberOrNull(m.ci_ms.low)},
              {"ci95_high_ms", NumberOrNull(m.ci_ms.high)},
              {"share_b_faster", NumberOrNull(m.share_b_faster)},
              {"verdict", MetricVerdict(m)}};
}

}  // namespace

std::vector<std::string> NoVerdictReasons(const RunCertificate& a, const RunCertificate& b,
                                          uint64_t pairs, uint64_t min_pairs) {
  std::vector<std::string> reasons;
  for (const auto& [name, cert] : {std::pair{"A", &a}, std::pair{"B", &b}}) {
    if (cert->valid) continue;
    reasons.push_back(absl::StrCat(
        "run ", name, " did not keep its schedule: ", absl::StrJoin(cert->reasons, "; ")));
  }
  if (pairs < min_pairs) {
    reasons.push_back(absl::StrCat("only ", pairs, " requests are ok in both runs, fewer than ",
                                   "--min-pairs ", min_pairs));
  }
  return reasons;
}

absl::Status CheckSamePlan(const ComparedRun& a, const ComparedRun& b) {
  if (a.plan_hash == b.plan_hash) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("different plans: A (", a.folder.string(), ") has plan hash ", a.plan_hash,
                   ", B (", b.folder.string(), ") has ", b.plan_hash,
                   "; replay A's plan for B with `surge run --plan-file A/", a.dataset,
                   "_plan.csv` (docs/REPLAY.md)"));
}

Comparison CompareRequests(ComparedRun a, ComparedRun b, std::span<const RequestTimes> a_requests,
                           std::span<const RequestTimes> b_requests,
                           const CompareSettings& settings) {
  Comparison c;
  c.a = std::move(a);
  c.b = std::move(b);
  c.settings = settings;
  c.pairs = PairByIndex(a_requests, b_requests);
  for (int m = 0; m < kComparedMetricCount; ++m) {
    c.metrics.push_back(
        ComparePairs(kComparedMetrics[m], c.pairs.a_ms[m], c.pairs.b_ms[m], settings.bootstrap));
  }
  c.no_verdict_reasons =
      NoVerdictReasons(c.a.certificate, c.b.certificate, c.pairs.index.size(), settings.min_pairs);
  c.has_verdict = c.no_verdict_reasons.empty();
  return c;
}

absl::StatusOr<ComparedRun> ReadComparedRun(const fs::path& folder,
                                            std::vector<RequestTimes>* requests) {
  ComparedRun run;
  run.folder = folder;
  absl::StatusOr<std::string> dataset = RunFolderDataset(folder);
  if (!dataset.ok()) return NotARunFolder(folder, dataset.status());
  run.dataset = *dataset;
  const fs::path details = folder / (run.dataset + "_details.jsonl");
  std::error_code ec;
  if (!fs::is_regular_file(details, ec)) {
    return NotARunFolder(
        folder, absl::NotFoundError(
                    absl::StrCat(details.filename().string(), " is missing: nothing was sent")));
  }
  absl::StatusOr<Json> summary = ReadJsonFile(folder / (run.dataset + ".json"));
  if (!summary.ok()) return NotARunFolder(folder, summary.status());
  absl::StatusOr<RunCertificate> certificate = ReadRunCertificate(folder);
  if (!certificate.ok()) return NotARunFolder(folder, certificate.status());
  run.certificate = *certificate;
  if (absl::Status s = FillPlanHash(*summary, run); !s.ok()) return NotARunFolder(folder, s);
  ForEachDetailsLine(details, [&](absl::StatusOr<surge::v1::RequestRecord> record) {
    if (record.ok() && !record->warmup()) requests->push_back(TimesOf(*record));
  });
  return run;
}

absl::StatusOr<Comparison> CompareRunFolders(const fs::path& a, const fs::path& b,
                                             const CompareSettings& settings) {
  std::vector<RequestTimes> a_requests, b_requests;
  absl::StatusOr<ComparedRun> run_a = ReadComparedRun(a, &a_requests);
  if (!run_a.ok()) return run_a.status();
  absl::StatusOr<ComparedRun> run_b = ReadComparedRun(b, &b_requests);
  if (!run_b.ok()) return run_b.status();
  if (absl::Status s = CheckSamePlan(*run_a, *run_b); !s.ok()) return s;
  return CompareRequests(*std::move(run_a), *std::move(run_b), a_requests, b_requests, settings);
}

std::string MsText(double ms) {
  if (std::isnan(ms)) return "n/a";
  const std::string text = absl::StrFormat("%.3f", ms);
  return text == "-0.000" ? "0.000" : text;
}

fs::path DefaultCompareDir(const fs::path& a, const fs::path& b) {
  auto stamp_and_place = [](const fs::path& folder) {
    const fs::path clean = folder.lexically_normal();
    const fs::path model = clean.has_filename() ? clean : clean.parent_path();
    const fs::path performances = model.parent_path();
    if (performances.filename() == "performances" && !performances.parent_path().empty()) {
      const fs::path stamp = performances.parent_path();
      return std::pair{stamp.filename().string(), stamp.parent_path()};
    }
    return std::pair{model.filename().string(), model.parent_path()};
  };
  const auto [a_stamp, place] = stamp_and_place(a);
  const std::string b_stamp = stamp_and_place(b).first;
  return place / absl::StrCat("compare_", a_stamp, "_vs_", b_stamp);
}

Json ComparisonJson(const Comparison& c) {
  Json metrics = Json::array();
  Json verdict = Json::object();
  for (const PairedMetric& m : c.metrics) {
    metrics.push_back(MetricJson(m));
    verdict[m.metric] = MetricVerdict(m);
  }
  const PairedRequests& p = c.pairs;
  return Json{{"a", RunJson(c.a)},
              {"b", RunJson(c.b)},
              {"same_plan", c.a.plan_hash == c.b.plan_hash},
              {"bootstrap",
               {{"resamples", c.settings.bootstrap.resamples},
                {"seed", c.settings.bootstrap.seed},
                {"interval", "percentile bootstrap 95 % of the median of B − A"}}},
              {"min_pairs", c.settings.min_pairs},
              {"pairs",
               {{"ok_in_both", p.index.size()},
                {"a_ok", p.a_ok},
                {"b_ok", p.b_ok},
                {"only_in_a", p.only_in_a},
                {"only_in_b", p.only_in_b}}},
              {"metrics", std::move(metrics)},
              {"verdict", c.has_verdict ? std::move(verdict) : Json(nullptr)},
              {"no_verdict_reason",
               c.has_verdict ? Json(nullptr) : Json(absl::StrJoin(c.no_verdict_reasons, "; "))}};
}

std::string ComparisonTable(const Comparison& c) {
  std::string out = absl::StrFormat("%-8s %21s %21s %34s %9s\n", "metric", "A median / p99 ms",
                                    "B median / p99 ms", "B − A median ms [95% CI]", "B faster");
  for (const PairedMetric& m : c.metrics) {
    const std::string a = absl::StrCat(MsText(m.a_median_ms), " / ", MsText(m.a_p99_ms));
    const std::string b = absl::StrCat(MsText(m.b_median_ms), " / ", MsText(m.b_p99_ms));
    const std::string diff = absl::StrCat(MsText(m.median_diff_ms), " [", MsText(m.ci_ms.low), ", ",
                                          MsText(m.ci_ms.high), "]");
    const std::string share = std::isnan(m.share_b_faster)
                                  ? std::string("n/a")
                                  : absl::StrFormat("%.1f%%", m.share_b_faster * 100);
    const std::string name = m.metric.substr(0, m.metric.size() - 3);  // "ttft_ms" → "ttft"
    absl::StrAppendFormat(&out, "%-8s %21s %21s %34s %9s\n", name, a, b, diff, share);
  }
  absl::StrAppend(&out, c.pairs.index.size(), " pairs (ok in both runs); bootstrap ",
                  c.settings.bootstrap.resamples, " resamples, seed ", c.settings.bootstrap.seed,
                  "\n");
  if (c.has_verdict) {
    for (const PairedMetric& m : c.metrics) {
      absl::StrAppend(&out, "verdict ", m.metric, ": ", MetricVerdict(m), "\n");
    }
  } else {
    for (const std::string& why : c.no_verdict_reasons)
      absl::StrAppend(&out, "no verdict: ", why, "\n");
  }
  return out;
}

absl::Status WriteComparisonJson(const Comparison& c, const fs::path& dir) {
  const std::string text = ComparisonJson(c).dump(2) + "\n";
  return WriteFileAtomically(dir / "compare.json", {text});
}

}  // namespace surge::coordinator
