#include "coordinator/results/summary.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/stats.h"
#include "common/time_units.h"

namespace surge::coordinator {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// (n − 1)/(max − min): the rate that n events spread over their span have.
double RateOverSpan(const std::vector<double>& times_s) {
  if (times_s.size() < 2) return kNaN;
  const auto [lo, hi] = std::minmax_element(times_s.begin(), times_s.end());
  const double span = *hi - *lo;
  if (!(span > 0)) return kNaN;
  return static_cast<double>(times_s.size() - 1) / span;
}

nlohmann::json Number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

nlohmann::json StatsJson(const MetricStats& s) {
  return {{"count", s.count},    {"mean", Number(s.mean)}, {"min", Number(s.min)},
          {"max", Number(s.max)}, {"p50", Number(s.p50)},   {"p75", Number(s.p75)},
          {"p90", Number(s.p90)}, {"p99", Number(s.p99)}};
}

std::string Ms(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  return absl::StrFormat("%.3f", seconds * 1e3);
}

}  // namespace

MetricStats ComputeStats(std::vector<double> values) {
  MetricStats s;
  s.count = values.size();
  if (values.empty()) {
    s.mean = s.min = s.max = s.p50 = s.p75 = s.p90 = s.p99 = kNaN;
    return s;
  }
  std::sort(values.begin(), values.end());
  s.mean = Mean(values);
  s.min = values.front();
  s.max = values.back();
  s.p50 = PercentileOfSorted(values, 50);
  s.p75 = PercentileOfSorted(values, 75);
  s.p90 = PercentileOfSorted(values, 90);
  s.p99 = PercentileOfSorted(values, 99);
  return s;
}

RunSummary Summarize(const std::vector<surge::v1::RequestRecord>& records) {
  RunSummary s;
  std::vector<double> sent_s, planned_s, lateness, ttft, e2el;
  double end_s = 0;
  for (const auto& r : records) {
    ++s.total;
    switch (r.status()) {
      case surge::v1::OK:
        ++s.succeeded;
        break;
      case surge::v1::FAILED:
        ++s.failed;
        break;
      case surge::v1::LOST:
        ++s.lost;
        break;
      default:
        ++s.not_sent;
        break;
    }
    if (r.status() != surge::v1::OK) {
      const std::string& e = r.error();
      ++s.reasons[e.empty() ? std::string("unknown") : e.substr(0, e.find(':'))];
    }
    if (!r.sent()) continue;
    ++s.sent;
    const double sent = NanosToSeconds(r.sent_ns());
    sent_s.push_back(sent);
    planned_s.push_back(NanosToSeconds(r.planned_ns()));
    lateness.push_back(NanosToSeconds(r.sent_ns() - r.planned_ns()));
    end_s = std::max(end_s, sent + NanosToSeconds(r.e2el_ns()));
    if (r.status() == surge::v1::OK) {
      ttft.push_back(NanosToSeconds(r.ttft_ns()));
      e2el.push_back(NanosToSeconds(r.e2el_ns()));
      s.input_tokens += r.input_tokens();
      s.output_tokens += r.output_tokens();
    }
  }
  s.duration_s = end_s;
  s.request_throughput_rps = end_s > 0 ? static_cast<double>(s.succeeded) / end_s : kNaN;
  s.output_token_throughput = end_s > 0 ? static_cast<double>(s.output_tokens) / end_s : kNaN;
  s.achieved_rate_rps = RateOverSpan(sent_s);
  s.intended_rate_rps = RateOverSpan(planned_s);
  s.lateness_s = ComputeStats(std::move(lateness));
  s.ttft_s = ComputeStats(std::move(ttft));
  s.e2el_s = ComputeStats(std::move(e2el));
  return s;
}

nlohmann::json SummaryToJson(const RunSummary& s, const nlohmann::json& context) {
  nlohmann::json j;
  j["run"] = context;
  j["requests"] = {{"total", s.total},   {"succeeded", s.succeeded}, {"failed", s.failed},
                   {"lost", s.lost},     {"not_sent", s.not_sent},   {"sent", s.sent}};
  j["duration_s"] = Number(s.duration_s);
  j["request_throughput_rps"] = Number(s.request_throughput_rps);
  j["achieved_rate_rps"] = Number(s.achieved_rate_rps);
  j["intended_rate_rps"] = Number(s.intended_rate_rps);
  j["achieved_vs_intended"] = Number(s.achieved_rate_rps / s.intended_rate_rps);
  j["lateness_s"] = StatsJson(s.lateness_s);
  j["ttft_s"] = StatsJson(s.ttft_s);
  j["e2el_s"] = StatsJson(s.e2el_s);
  j["total_input_tokens"] = s.input_tokens;
  j["total_output_tokens"] = s.output_tokens;
  j["output_token_throughput"] = Number(s.output_token_throughput);
  j["reasons"] = s.reasons;
  j["percentile_method"] = "linear interpolation between closest ranks (numpy default)";
  return j;
}

std::string FormatSummaryTable(const RunSummary& s) {
  std::string out;
  auto row = [&](const std::string& name, const std::string& value) {
    absl::StrAppend(&out, absl::StrFormat("  %-34s %s\n", name, value));
  };
  auto rate = [](double v) { return std::isfinite(v) ? absl::StrFormat("%.3f", v) : "-"; };
  absl::StrAppend(&out, "============ surge run summary ============\n");
  row("Requests (total)", absl::StrCat(s.total));
  row("  succeeded / failed", absl::StrCat(s.succeeded, " / ", s.failed));
  row("  lost / not sent", absl::StrCat(s.lost, " / ", s.not_sent));
  row("Duration (s)", rate(s.duration_s));
  row("Intended rate (RPS)", rate(s.intended_rate_rps));
  row("Achieved rate (RPS)", rate(s.achieved_rate_rps));
  row("Request throughput (RPS)", rate(s.request_throughput_rps));
  row("Output token throughput (tok/s)", rate(s.output_token_throughput));
  row("Send lateness p50/p99/max (ms)",
      absl::StrCat(Ms(s.lateness_s.p50), " / ", Ms(s.lateness_s.p99), " / ", Ms(s.lateness_s.max)));
  row("TTFT mean/p50/p99 (ms)",
      absl::StrCat(Ms(s.ttft_s.mean), " / ", Ms(s.ttft_s.p50), " / ", Ms(s.ttft_s.p99)));
  row("E2EL mean/p50/p99 (ms)",
      absl::StrCat(Ms(s.e2el_s.mean), " / ", Ms(s.e2el_s.p50), " / ", Ms(s.e2el_s.p99)));
  for (const auto& [reason, count] : s.reasons) row(absl::StrCat("  ", reason), absl::StrCat(count));
  absl::StrAppend(&out, "===========================================\n");
  return out;
}

absl::Status WriteJsonFile(const nlohmann::json& json, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json.dump(2) << "\n";
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

}  // namespace surge::coordinator
