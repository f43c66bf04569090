#include "coordinator/capacity/certificate.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/capacity/run_folder.h"
#include "coordinator/report/plot_pages.h"

namespace surge::coordinator {

namespace {

using Json = nlohmann::json;
constexpr double kNaN = RunCertificate::kNaN;

uint64_t CountAt(const Json& j, std::initializer_list<const char*> path) {
  const Json* v = JsonAt(j, path);
  if (v == nullptr || !v->is_number_integer()) return 0;
  return v->is_number_unsigned() ? v->get<uint64_t>()
                                 : static_cast<uint64_t>(std::max<int64_t>(0, v->get<int64_t>()));
}

std::string StringAt(const Json& j, std::initializer_list<const char*> path) {
  const Json* v = JsonAt(j, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

// The largest clock uncertainty of the workers that reported one.
double ClockUncertaintyMs(const Json& summary) {
  const Json* sync = JsonAt(summary, {"run", "clock_sync"});
  if (sync == nullptr || !sync->is_array()) return kNaN;
  double largest = kNaN;
  for (const Json& w : *sync) {
    const Json* same = JsonAt(w, {"same_clock"});
    double u = same != nullptr && same->is_boolean() && same->get<bool>()
                   ? 0.0
                   : NumberAt(w, {"uncertainty_ms"});
    if (!std::isnan(u)) largest = std::isnan(largest) ? u : std::max(largest, u);
  }
  return largest;
}

// The facts the rules judge, copied from the summary and the page.
RunCertificate FactsOf(const Json& summary, const Json* actual_page) {
  RunCertificate c;
  c.intended_rate_rps = NumberAt(summary, {"intended_rate_rps"});
  c.achieved_rate_rps = NumberAt(summary, {"achieved_rate_rps"});
  c.achieved_vs_intended = NumberAt(summary, {"achieved_vs_intended"});
  if (std::isnan(c.achieved_vs_intended) && c.intended_rate_rps > 0) {
    c.achieved_vs_intended = c.achieved_rate_rps / c.intended_rate_rps;
  }
  c.lateness_p99_ms = NumberAt(summary, {"run", "schedule", "lateness_p99_ms"});
  if (std::isnan(c.lateness_p99_ms)) {
    c.lateness_p99_ms = NumberAt(summary, {"lateness_s", "p99"}) * 1e3;
  }
  const double alarm_ms = NumberAt(summary, {"run", "schedule", "lateness_alarm_ms"});
  c.lateness_limit_ms = alarm_ms > 0 ? alarm_ms : kDefaultLatenessLimitMs;
  c.cause = StringAt(summary, {"run", "schedule", "cause"});
  c.clock_uncertainty_ms = ClockUncertaintyMs(summary);
  c.stop_reason = StringAt(summary, {"run", "stop_reason"});
  const Json* instant = JsonAt(summary, {"run", "instant_mode"});
  c.instant_mode = instant != nullptr && instant->is_boolean() && instant->get<bool>();
  c.sent = CountAt(summary, {"requests", "sent"});
  c.planned = CountAt(summary, {"requests", "total"});
  if (actual_page != nullptr) {
    const Json* stats = JsonAt(*actual_page, {"stats"});
    const Json& s = stats != nullptr ? *stats : *actual_page;
    c.ks_distance = NumberAt(s, {"actual", "ks_distance"});
    const double intervals = NumberAt(s, {"actual", "sent"}) - 1;
    if (intervals >= 1) c.ks_critical = 1.358 * std::sqrt(2.0 / intervals);
  }
  return c;
}

// Rule 1: lateness p99 within its limit.
void JudgeLateness(const Json& summary, RunCertificate& c) {
  if (std::isnan(c.lateness_p99_ms)) {
    c.reasons.push_back("the send lateness p99 is unknown: no request was sent");
    return;
  }
  if (c.lateness_p99_ms <= c.lateness_limit_ms) return;
  const bool alarm_on = NumberAt(summary, {"run", "schedule", "lateness_alarm_ms"}) > 0;
  c.reasons.push_back(absl::StrCat(
      "send lateness p99 ", Num(c.lateness_p99_ms), " ms is over the limit ",
      Num(c.lateness_limit_ms), " ms",
      alarm_on ? " (the run's lateness_alarm_ms)" : " (the default: the lateness alarm was off)"));
}

// Rule 2: achieved rate at least 99 % of the intended one.
void JudgeRate(RunCertificate& c) {
  if (c.instant_mode) return;
  if (std::isnan(c.achieved_vs_intended)) {
    c.reasons.push_back(
        "achieved vs intended rate is unknown: fewer than 2 requests were sent, or the plan has "
        "no intended rate");
    return;
  }
  if (c.achieved_vs_intended >= kMinAchievedVsIntended) return;
  c.reasons.push_back(absl::StrCat("achieved rate ", Num(c.achieved_rate_rps), " req/s is ",
                                   Num(c.achieved_vs_intended * 100), " % of the intended ",
                                   Num(c.intended_rate_rps), " req/s (at least ",
                                   Num(kMinAchievedVsIntended * 100), " % needed)"));
}

// Rule 3: no lateness alarm, and the summary says the schedule was kept.
void JudgeAlarm(const Json& summary, bool lateness_ok, RunCertificate& c) {
  const double fell_behind_s = NumberAt(summary, {"run", "schedule", "fell_behind_at_s"});
  if (!std::isnan(fell_behind_s) || CountAt(summary, {"run", "schedule", "alarm_reports"}) > 0) {
    const std::string text = StringAt(summary, {"run", "schedule", "cause_text"});
    const bool server_side = std::find(std::begin(kServerSideCauses), std::end(kServerSideCauses),
                                       c.cause) != std::end(kServerSideCauses);
    std::vector<std::string>& into = server_side ? c.notes : c.reasons;
    into.push_back(absl::StrCat(
        "the lateness alarm fired", std::isnan(fell_behind_s) ? "" : " at ",
        std::isnan(fell_behind_s) ? "" : Num(fell_behind_s), std::isnan(fell_behind_s) ? "" : " s",
        c.cause.empty() ? "" : absl::StrCat(" (cause ", c.cause, ")"),
        text.empty() ? "" : absl::StrCat(": ", text),
        server_side ? "; a cause on the target's side, not held against the schedule" : ""));
    return;
  }
  const Json* kept = JsonAt(summary, {"run", "schedule", "schedule_kept"});
  if (kept == nullptr) kept = JsonAt(summary, {"run", "schedule_kept"});
  if (kept == nullptr || !kept->is_boolean()) {
    c.reasons.push_back(
        "the summary does not say whether the schedule was kept (no "
        "run.schedule.schedule_kept)");
  } else if (!kept->get<bool>() && lateness_ok) {
    c.reasons.push_back(
        "the summary says the schedule was not kept (run.schedule.schedule_kept "
        "false)");
  }
}

// Rule 4: nothing lost.
void JudgeLosses(const Json& summary, RunCertificate& c) {
  if (const uint64_t lost = CountAt(summary, {"requests", "lost"}); lost > 0) {
    c.reasons.push_back(absl::StrCat(lost, " request", lost == 1 ? " was" : "s were",
                                     " lost (possibly sent, no record)"));
  }
  if (const uint64_t workers = CountAt(summary, {"run", "workers_lost"}); workers > 0) {
    c.reasons.push_back(
        absl::StrCat(workers, " worker", workers == 1 ? " was" : "s were", " lost during the run"));
  }
}

Json JsonNumberOrNull(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

}  // namespace

RunCertificate CertificateOf(const nlohmann::json& summary, const nlohmann::json* actual_page) {
  RunCertificate c = FactsOf(summary, actual_page);
  JudgeLateness(summary, c);
  const bool lateness_ok = c.reasons.empty();
  JudgeRate(c);
  JudgeAlarm(summary, lateness_ok, c);
  JudgeLosses(summary, c);
  c.valid = c.reasons.empty();
  return c;
}

absl::StatusOr<RunCertificate> ReadRunCertificate(const std::filesystem::path& run_folder) {
  absl::StatusOr<std::string> dataset = RunFolderDataset(run_folder);
  if (!dataset.ok()) return dataset.status();
  absl::StatusOr<Json> summary = ReadJsonFile(run_folder / (*dataset + ".json"));
  if (!summary.ok()) return summary.status();
  const std::filesystem::path page_json = FigureJsonPath(run_folder / ActualPlotFileName(*dataset));
  std::error_code ec;
  if (!std::filesystem::exists(page_json, ec)) return CertificateOf(*summary, nullptr);
  absl::StatusOr<Json> page = ReadJsonFile(page_json);
  if (!page.ok()) return page.status();
  return CertificateOf(*summary, &*page);
}

nlohmann::json CertificateJson(const RunCertificate& c) {
  return Json{{"valid", c.valid},
              {"reasons", c.reasons},
              {"notes", c.notes},
              {"cause", c.cause.empty() ? Json(nullptr) : Json(c.cause)},
              {"intended_rate_rps", JsonNumberOrNull(c.intended_rate_rps)},
              {"achieved_rate_rps", JsonNumberOrNull(c.achieved_rate_rps)},
              {"achieved_vs_intended", JsonNumberOrNull(c.achieved_vs_intended)},
              {"lateness_p99_ms", JsonNumberOrNull(c.lateness_p99_ms)},
              {"lateness_limit_ms", JsonNumberOrNull(c.lateness_limit_ms)},
              {"ks_distance", JsonNumberOrNull(c.ks_distance)},
              {"ks_critical", JsonNumberOrNull(c.ks_critical)},
              {"clock_uncertainty_ms", JsonNumberOrNull(c.clock_uncertainty_ms)},
              {"stop_reason", c.stop_reason},
              {"instant_mode", c.instant_mode},
              {"sent", c.sent},
              {"planned", c.planned}};
}

}  // namespace surge::coordinator
