#include "tests/integration/run_folder_check.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "coordinator/config/run_config.h"
#include "coordinator/plan/arrival_process.h"  // ResolveTraffic
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;

bool Close(double a, double b, double rel) {
  return std::fabs(a - b) <= rel * std::max({1.0, std::fabs(a), std::fabs(b)});
}

}  // namespace

std::string RunFolderReport::Describe() const {
  std::string s =
      absl::StrCat("planned ", planned, ", records ", records, ", ok ", ok, ", achieved ",
                   achieved_rate_rps, " RPS, intended ", intended_rate_rps, " RPS");
  for (const auto& p : problems) absl::StrAppend(&s, "\n  PROBLEM: ", p);
  return s;
}

RunFolderReport CheckRunFolder(const fs::path& folder, const std::string& dataset) {
  RunFolderReport report;
  auto problem = [&](std::string p) {
    if (report.problems.size() < 20) report.problems.push_back(std::move(p));
  };
  for (const char* suffix :
       {"_plan.csv", "_details.jsonl", ".json", "_rps_distribution_plot_with_actual_rps.html"}) {
    if (!fs::exists(folder / (dataset + suffix)))
      problem(absl::StrCat("missing ", dataset, suffix));
  }
  if (!fs::exists(folder / "run_config.json")) problem("missing run_config.json");

  // The configuration actually used, to recompute what §3 demands.
  nlohmann::json config;
  {
    std::ifstream in(folder / "run_config.json");
    config = nlohmann::json::parse(in, nullptr, false);
  }
  surge::v1::RunConfig run = coordinator::DefaultRunConfig();
  if (config.is_object()) {
    // "inf" (vLLM's all at once) is saved as a string: JSON has no infinity.
    if (config.contains("request_rate") && config["request_rate"] == "inf") {
      run.set_request_rate(std::numeric_limits<double>::infinity());
    } else {
      run.set_request_rate(config.value("request_rate", 0.0));
    }
    const auto tc = config.value("traffic_cfg", nlohmann::json::object());
    run.mutable_traffic_cfg()->set_burstiness(tc.value("burstiness", 0.0));
    // The strategy by its spelling (config.proto), "" = none.
    surge::v1::RampUpStrategy strategy = surge::v1::RAMP_UP_STRATEGY_UNSPECIFIED;
    const std::string strategy_text = tc.value("ramp_up_strategy", std::string());
    if (!strategy_text.empty()) {
      if (!surge::v1::RampUpStrategy_Parse(
              "RAMP_UP_STRATEGY_" + absl::AsciiStrToUpper(strategy_text), &strategy)) {
        problem(absl::StrCat("unknown ramp_up_strategy ", strategy_text));
      }
    }
    run.mutable_traffic_cfg()->set_ramp_up_strategy(strategy);
    if (tc.contains("ramp_up_start_rps")) {
      run.mutable_traffic_cfg()->set_ramp_up_start_rps(tc["ramp_up_start_rps"].get<double>());
    }
    if (tc.contains("ramp_up_end_rps")) {
      run.mutable_traffic_cfg()->set_ramp_up_end_rps(tc["ramp_up_end_rps"].get<double>());
    }
  }
  const coordinator::ResolvedTraffic traffic = coordinator::ResolveTraffic(run);

  // Plan CSV against the schedule rules (R-RATE, R-CUM, R-NORM, R-ANOM, R-OUT-2).
  std::ifstream csv(folder / (dataset + "_plan.csv"));
  std::string line;
  std::getline(csv, line);
  if (line != "index,rate_rps,interval_s,offset_s,anomaly") problem("bad plan CSV header: " + line);
  std::vector<double> rates, intervals, offsets;
  double previous = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ',');
    if (f.size() != 5) {
      problem("bad plan row: " + line);
      continue;
    }
    const size_t i = std::stoull(f[0]);
    const double rate = std::stod(f[1]), interval = std::stod(f[2]), offset = std::stod(f[3]);
    if (i != rates.size()) problem(absl::StrCat("row index ", i, " out of order"));
    rates.push_back(rate);
    intervals.push_back(interval);
    offsets.push_back(offset);
    if (!traffic.instant) {
      if (!Close(offset - previous, interval, 1e-9)) {
        problem(absl::StrCat("row ", i, ": offset is not the running sum of intervals (R-CUM)"));
      }
      const std::string expected(coordinator::AnomalyName(
          coordinator::ClassifyInterval(interval, rate, traffic.burstiness)));
      if (f[4] != expected)
        problem(absl::StrCat("row ", i, ": class ", f[4], " but R-ANOM gives ", expected));
    }
    previous = offset;
  }
  report.planned = rates.size();
  const size_t n = rates.size();
  for (size_t i = 0; i < n && !traffic.instant; ++i) {
    double lambda = traffic.request_rate_rps;
    if (traffic.ramp_active) {
      const double p = n > 1 ? static_cast<double>(i) / (n - 1) : 0;
      lambda =
          traffic.strategy == coordinator::RampStrategy::kLinear
              ? traffic.ramp_start_rps + (traffic.ramp_end_rps - traffic.ramp_start_rps) * p
              : traffic.ramp_start_rps * std::pow(traffic.ramp_end_rps / traffic.ramp_start_rps, p);
    }
    if (!Close(rates[i], lambda, 1e-12)) problem(absl::StrCat("row ", i, ": rate is not R-RATE's"));
  }
  if (n > 0 && !traffic.instant && !traffic.ramp_active &&
      !Close(offsets.back(), n / traffic.request_rate_rps, 1e-12)) {
    problem(absl::StrCat("last offset ", offsets.back(), " != N/request_rate (R-NORM)"));
  }

  // Details: exactly one record per planned request.
  std::ifstream details(folder / (dataset + "_details.jsonl"));
  std::set<uint64_t> seen;
  while (std::getline(details, line)) {
    nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    if (r.is_discarded()) {
      problem("unparsable details line");
      continue;
    }
    const uint64_t index = r.value("index", uint64_t{0});
    if (!seen.insert(index).second) problem(absl::StrCat("index ", index, " has two records"));
    if (r.value("warmup", false)) {
      // A warm-up (num_warmups): after the plan's indices, before t0.
      if (index < n) problem(absl::StrCat("warm-up with a planned index ", index));
      continue;
    }
    ++report.records;
    if (index >= n) problem(absl::StrCat("record for unplanned index ", index));
    if (r.value("status", std::string()) == "ok") ++report.ok;
    if (index < n && r["planned_offset_s"].is_number() &&
        std::fabs(r["planned_offset_s"].get<double>() - offsets[index]) > 1e-6) {
      problem(absl::StrCat("index ", index, ": planned_offset_s differs from the plan"));
    }
    // From the planned send = the measured latency + the
    // request's lateness (to the ns), only for a sent request with that metric.
    for (const char* metric : {"ttft", "e2el"}) {
      const nlohmann::json& planned = r[absl::StrCat(metric, "_from_planned_s")];
      const nlohmann::json& measured = r[absl::StrCat(metric, "_s")];
      const bool expect = r["actual_offset_s"].is_number() && measured.is_number();
      if (planned.is_number() != expect) {
        problem(absl::StrCat("index ", index, ": ", metric, "_from_planned_s ",
                             expect ? "missing" : "present without a send or metric"));
      } else if (expect && std::fabs(planned.get<double>() -
                                     (measured.get<double>() + r["actual_offset_s"].get<double>() -
                                      r["planned_offset_s"].get<double>())) > 3e-9) {
        problem(absl::StrCat("index ", index, ": ", metric,
                             "_from_planned_s != measured + actual − planned"));
      }
    }
  }
  if (seen.size() != n) problem(absl::StrCat(seen.size(), " distinct records for ", n, " planned"));

  std::ifstream summary_in(folder / (dataset + ".json"));
  report.summary = nlohmann::json::parse(summary_in, nullptr, false);
  if (report.summary.is_object()) {
    if (report.summary["achieved_rate_rps"].is_number()) {
      report.achieved_rate_rps = report.summary["achieved_rate_rps"].get<double>();
    }
    if (report.summary["intended_rate_rps"].is_number()) {
      report.intended_rate_rps = report.summary["intended_rate_rps"].get<double>();
    }
    if (report.summary["requests"]["total"].get<size_t>() != n) problem("summary total != planned");
    // Both latency views cover the same OK requests.
    for (const char* metric : {"ttft", "e2el"}) {
      if (report.summary[absl::StrCat(metric, "_s")]["count"] !=
          report.summary[absl::StrCat(metric, "_from_planned_s")]["count"]) {
        problem(
            absl::StrCat("summary: ", metric, "_from_planned_s count differs from ", metric, "_s"));
      }
    }
  } else {
    problem("summary JSON unreadable");
  }
  return report;
}

}  // namespace surge::testing
