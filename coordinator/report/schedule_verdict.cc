#include "coordinator/report/schedule_verdict.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

// Rounded to `per` parts of one (100: 0.01), without the float noise of
// multiplying by 0.01.
double Round(double v, double per) { return std::round(v * per) / per; }

// Lateness in ms with enough digits for sub-millisecond values.
std::string Ms(double ms) {
  return ms < 10 ? absl::StrFormat("%.2f", ms) : absl::StrFormat("%.1f", ms);
}

bool Number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number();
}

}  // namespace

nlohmann::json ScheduleJson(const ScheduleFacts& f) {
  const bool fell = f.fell_behind_at_s >= 0;
  return {{"judged", f.judged},
          {"lateness_alarm_ms", f.lateness_alarm_ms},
          {"fell_behind_at_s", fell ? nlohmann::json(Round(f.fell_behind_at_s, 100)) : nullptr},
          {"worker", fell ? nlohmann::json(f.worker) : nullptr},
          {"lateness_ms", fell ? nlohmann::json(Round(f.lateness_ms, 1000)) : nullptr},
          {"cause", fell ? nlohmann::json(f.cause) : nullptr},
          {"cause_text", fell ? nlohmann::json(f.cause_text) : nullptr},
          {"worst_window_p99_ms", Round(f.worst_window_p99_ms, 1000)},
          {"alarm_reports", f.alarm_reports},
          {"alarm_lines", f.alarm_lines},
          {"stopped_on_alarm", f.stopped_on_alarm}};
}

void FinishScheduleJson(nlohmann::json& s, double run_lateness_p99_s) {
  if (!s.is_object()) return;
  const bool p99_known = std::isfinite(run_lateness_p99_s);
  const double p99_ms = run_lateness_p99_s * 1e3;
  s["lateness_p99_ms"] = p99_known ? nlohmann::json(Round(p99_ms, 10000)) : nullptr;
  const bool judged = s.value("judged", false);
  const double threshold =
      Number(s, "lateness_alarm_ms") ? s["lateness_alarm_ms"].get<double>() : 0;
  const bool monitor_fired = Number(s, "fell_behind_at_s");
  const bool run_over = judged && p99_known && threshold > 0 && p99_ms > threshold;
  s["schedule_kept"] = !monitor_fired && !run_over;
}

std::string ScheduleSentence(const nlohmann::json& s) {
  if (!s.is_object() || !s.contains("schedule_kept") || !s["schedule_kept"].is_boolean()) {
    return "";
  }
  const std::string p99 =
      Number(s, "lateness_p99_ms")
          ? absl::StrCat("send lateness p99 ", Ms(s["lateness_p99_ms"].get<double>()), " ms")
          : std::string("no request was sent");
  if (s["schedule_kept"].get<bool>()) {
    if (!s.value("judged", false)) return absl::StrCat(p99, " (no lateness alarm)");
    return absl::StrCat(p99, ": schedule kept");
  }
  constexpr char kTail[] = ": results describe the generator, not the server";
  if (Number(s, "fell_behind_at_s")) {
    std::string who;
    if (Number(s, "worker")) {
      who = absl::StrCat(" (worker ", s["worker"].get<int64_t>(),
                         s.contains("cause_text") && s["cause_text"].is_string()
                             ? absl::StrCat(": ", s["cause_text"].get<std::string>())
                             : std::string(),
                         ")");
    }
    return absl::StrCat(
        absl::StrFormat("the generator fell behind from t=%.2f s",
                        s["fell_behind_at_s"].get<double>()),
        who, kTail,
        s.value("stopped_on_alarm", false) ? "; run stopped there (--stop-on-alarm)" : "");
  }
  return absl::StrCat(p99, " over the run, above the ",
                      absl::StrFormat("%g", s.value("lateness_alarm_ms", 0.0)),
                      " ms alarm threshold", kTail);
}

std::vector<RunEvent> ScheduleEvents(const nlohmann::json& s) {
  std::vector<RunEvent> events;
  if (!s.is_object() || !Number(s, "fell_behind_at_s")) return events;
  std::string label = "generator fell behind";
  if (Number(s, "worker")) {
    absl::StrAppend(&label, ": worker ", s["worker"].get<int64_t>());
    if (s.contains("cause") && s["cause"].is_string()) {
      absl::StrAppend(&label, ", ", s["cause"].get<std::string>());
    }
  }
  events.push_back(
      {.at_s = s["fell_behind_at_s"].get<double>(), .label = label, .text = ScheduleSentence(s)});
  return events;
}

}  // namespace surge::coordinator
