// Whether the run kept its schedule, in words and numbers, for the summary
// JSON (run.schedule, run.schedule_kept), the console summary and the actual
// page (a red line at the moment the generator fell behind, and the sentence
// in the run context and the list of run events). Pure: facts in, facts and
// text out; `surge report` redraws the page from the summary JSON alone.
#ifndef SURGE_COORDINATOR_REPORT_SCHEDULE_VERDICT_H_
#define SURGE_COORDINATOR_REPORT_SCHEDULE_VERDICT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/report/rps_figure.h"  // RunEvent
#include "surge/v1/run_facts.pb.h"

namespace surge::coordinator {

// What the lateness monitor saw (coordinator/dispatch/lateness_monitor.h).
struct ScheduleFacts {
  // The alarm was on; its threshold, ms.
  bool judged = false;
  double lateness_alarm_ms = 0;
  // The first over-threshold report: when (s after t0; < 0 = none), which
  // worker, its lateness (ms), the cause's key and sentence.
  double fell_behind_at_s = -1;
  int32_t worker = -1;
  double lateness_ms = 0;
  std::string cause;
  std::string cause_text;
  // Largest window p99 any worker reported, ms; over-threshold reports and
  // the warning lines they took; the run was ended by --stop-on-alarm.
  double worst_window_p99_ms = 0;
  uint64_t alarm_reports = 0;
  uint64_t alarm_lines = 0;
  bool stopped_on_alarm = false;
};

// run.schedule before the records are summarized: the facts with
// fell_behind_at_s rounded to 0.01 s, lateness_ms and worst_window_p99_ms to
// 0.001 ms; fell_behind_at_s, worker, lateness_ms, cause and cause_text
// unset when the monitor never fired.
surge::v1::ScheduleFact ScheduleFactOf(const ScheduleFacts& facts);

// Completes run.schedule with the run's send lateness p99 over every sent
// request (seconds, from the summary; NaN when nothing was sent):
// lateness_p99_ms (unset when NaN; rounded to 0.0001 ms) and schedule_kept =
// no over-threshold report and (when judged) lateness p99 ≤ the threshold.
// Idempotent.
void FinishSchedule(double run_lateness_p99_s, surge::v1::ScheduleFact* schedule);

// The plain sentence: "send lateness p99 0.04 ms: schedule kept", "the
// generator fell behind from t=1.23 s (worker 1: CPU saturated (…)): results
// describe the generator, not the server", or, when only the run's p99 is
// over, "send lateness p99 14.2 ms over the run, above the 10 ms alarm
// threshold: results describe the generator, not the server". With the
// alarm off: "send lateness p99 0.04 ms (no lateness alarm)". Empty without
// schedule_kept (not finished, or a summary from before the alarm existed).
std::string ScheduleSentence(const surge::v1::ScheduleFact& schedule);

// One RunEvent at fell_behind_at_s when the generator fell behind (label
// "generator fell behind: worker 1, cpu_saturated"; text ScheduleSentence);
// none otherwise.
std::vector<RunEvent> ScheduleEvents(const surge::v1::ScheduleFact& schedule);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_SCHEDULE_VERDICT_H_
