#include "coordinator/report/schedule_verdict.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

using surge::v1::ScheduleFact;

// Rounded to `per` parts of one (100: 0.01), without the float noise of
// multiplying by 0.01.
double Round(double v, double per) { return std::round(v * per) / per; }

// Lateness in ms with enough digits for sub-millisecond values.
std::string Ms(double ms) {
  return ms < 10 ? absl::StrFormat("%.2f", ms) : absl::StrFormat("%.1f", ms);
}

// "the generator fell behind from t=1.23 s (worker 1: <cause>)<tail>".
std::string FellBehindSentence(const ScheduleFact& s, const char* tail) {
  std::string who;
  if (s.has_worker()) {
    who =
        absl::StrCat(" (worker ", s.worker(),
                     s.has_cause_text() ? absl::StrCat(": ", s.cause_text()) : std::string(), ")");
  }
  return absl::StrCat(
      absl::StrFormat("the generator fell behind from t=%.2f s", s.fell_behind_at_s()), who, tail,
      s.stopped_on_alarm() ? "; run stopped there (--stop-on-alarm)" : "");
}

}  // namespace

ScheduleFact ScheduleFactOf(const ScheduleFacts& f) {
  ScheduleFact s;
  s.set_judged(f.judged);
  s.set_lateness_alarm_ms(f.lateness_alarm_ms);
  if (f.fell_behind_at_s >= 0) {
    s.set_fell_behind_at_s(Round(f.fell_behind_at_s, 100));
    s.set_worker(f.worker);
    s.set_lateness_ms(Round(f.lateness_ms, 1000));
    s.set_cause(f.cause);
    s.set_cause_text(f.cause_text);
  }
  s.set_worst_window_p99_ms(Round(f.worst_window_p99_ms, 1000));
  s.set_alarm_reports(f.alarm_reports);
  s.set_alarm_lines(f.alarm_lines);
  s.set_stopped_on_alarm(f.stopped_on_alarm);
  return s;
}

void FinishSchedule(double run_lateness_p99_s, ScheduleFact* s) {
  const bool p99_known = std::isfinite(run_lateness_p99_s);
  const double p99_ms = run_lateness_p99_s * 1e3;
  if (p99_known) {
    s->set_lateness_p99_ms(Round(p99_ms, 10000));
  } else {
    s->clear_lateness_p99_ms();
  }
  const double threshold = s->lateness_alarm_ms();
  const bool run_over = s->judged() && p99_known && threshold > 0 && p99_ms > threshold;
  s->set_schedule_kept(!s->has_fell_behind_at_s() && !run_over);
}

std::string ScheduleSentence(const ScheduleFact& s) {
  if (!s.has_schedule_kept()) return "";
  const std::string p99 = s.has_lateness_p99_ms()
                              ? absl::StrCat("send lateness p99 ", Ms(s.lateness_p99_ms()), " ms")
                              : std::string("no request was sent");
  if (s.schedule_kept()) {
    if (!s.judged()) return absl::StrCat(p99, " (no lateness alarm)");
    return absl::StrCat(p99, ": schedule kept");
  }
  constexpr char kTail[] = ": results describe the generator, not the server";
  if (s.has_fell_behind_at_s()) return FellBehindSentence(s, kTail);
  return absl::StrCat(p99, " over the run, above the ",
                      absl::StrFormat("%g", s.lateness_alarm_ms()), " ms alarm threshold", kTail);
}

std::vector<RunEvent> ScheduleEvents(const ScheduleFact& s) {
  std::vector<RunEvent> events;
  if (!s.has_fell_behind_at_s()) return events;
  std::string label = "generator fell behind";
  if (s.has_worker()) {
    absl::StrAppend(&label, ": worker ", s.worker());
    if (s.has_cause()) absl::StrAppend(&label, ", ", s.cause());
  }
  events.push_back({.at_s = s.fell_behind_at_s(), .label = label, .text = ScheduleSentence(s)});
  return events;
}

}  // namespace surge::coordinator
