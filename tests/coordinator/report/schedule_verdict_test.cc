// Whether the schedule was kept: run.schedule in the run facts, the
// sentence on the console and the actual page, and the red line at the
// moment the generator fell behind (coordinator/report/schedule_verdict.h).
#include "coordinator/report/schedule_verdict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace surge::coordinator {
namespace {

ScheduleFacts Kept() {
  ScheduleFacts f;
  f.judged = true;
  f.lateness_alarm_ms = 10;
  f.worst_window_p99_ms = 0.061;
  return f;
}

ScheduleFacts FellBehind() {
  ScheduleFacts f = Kept();
  f.fell_behind_at_s = 1.2345;
  f.worker = 1;
  f.lateness_ms = 23.4;
  f.cause = "cpu_saturated";
  f.cause_text = "CPU saturated (worker process 1.93 cores, host 100% busy)";
  f.worst_window_p99_ms = 812.5;
  f.alarm_reports = 37;
  f.alarm_lines = 2;
  f.stopped_on_alarm = true;
  return f;
}

TEST(ScheduleVerdictTest, KeptRunSaysSoWithItsP99) {
  surge::v1::ScheduleFact j = ScheduleFactOf(Kept());
  EXPECT_FALSE(j.has_fell_behind_at_s());
  EXPECT_FALSE(j.has_cause());
  EXPECT_FALSE(j.has_worker());
  EXPECT_DOUBLE_EQ(j.worst_window_p99_ms(), 0.061);
  EXPECT_EQ(ScheduleSentence(j), "") << "not finished: no verdict yet";
  FinishSchedule(0.00004, &j);
  EXPECT_TRUE(j.schedule_kept());
  EXPECT_DOUBLE_EQ(j.lateness_p99_ms(), 0.04);
  EXPECT_EQ(ScheduleSentence(j), "send lateness p99 0.04 ms: schedule kept");
  EXPECT_TRUE(ScheduleEvents(j).empty());
}

TEST(ScheduleVerdictTest, FellBehindNamesTheMomentTheWorkerAndTheCause) {
  surge::v1::ScheduleFact j = ScheduleFactOf(FellBehind());
  FinishSchedule(0.2, &j);
  FinishSchedule(0.2, &j);  // idempotent (surge report runs it again)
  EXPECT_FALSE(j.schedule_kept());
  EXPECT_DOUBLE_EQ(j.fell_behind_at_s(), 1.23);
  EXPECT_EQ(j.worker(), 1);
  EXPECT_DOUBLE_EQ(j.lateness_ms(), 23.4);
  EXPECT_EQ(j.cause(), "cpu_saturated");
  EXPECT_EQ(j.alarm_reports(), 37u);
  EXPECT_EQ(j.alarm_lines(), 2u);
  EXPECT_TRUE(j.stopped_on_alarm());
  EXPECT_DOUBLE_EQ(j.lateness_p99_ms(), 200);
  EXPECT_EQ(ScheduleSentence(j),
            "the generator fell behind from t=1.23 s (worker 1: CPU saturated (worker process 1.93 "
            "cores, host 100% busy)): results describe the generator, not the server; run stopped "
            "there (--stop-on-alarm)");
  const std::vector<RunEvent> events = ScheduleEvents(j);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_DOUBLE_EQ(events[0].at_s, 1.23);
  EXPECT_EQ(events[0].label, "generator fell behind: worker 1, cpu_saturated");
  EXPECT_EQ(events[0].text, ScheduleSentence(j));
}

// No window was over, but the run's p99 over every send is: not kept.
TEST(ScheduleVerdictTest, RunP99OverTheThresholdIsNotKeptEvenWithoutAnAlarm) {
  surge::v1::ScheduleFact j = ScheduleFactOf(Kept());
  FinishSchedule(0.0142, &j);
  EXPECT_FALSE(j.schedule_kept());
  EXPECT_EQ(ScheduleSentence(j),
            "send lateness p99 14.2 ms over the run, above the 10 ms alarm threshold: results "
            "describe the generator, not the server");
  EXPECT_TRUE(ScheduleEvents(j).empty());  // no moment to mark
}

TEST(ScheduleVerdictTest, AlarmOffAndNothingSentAndOldSummaries) {
  ScheduleFacts off;
  off.worst_window_p99_ms = 30;
  surge::v1::ScheduleFact j = ScheduleFactOf(off);
  FinishSchedule(0.03, &j);
  EXPECT_TRUE(j.schedule_kept());
  EXPECT_EQ(ScheduleSentence(j), "send lateness p99 30.0 ms (no lateness alarm)");
  surge::v1::ScheduleFact none = ScheduleFactOf(Kept());
  FinishSchedule(std::numeric_limits<double>::quiet_NaN(), &none);
  EXPECT_FALSE(none.has_lateness_p99_ms());
  EXPECT_EQ(ScheduleSentence(none), "no request was sent: schedule kept");
  // A summary from before the alarm existed: no schedule facts.
  EXPECT_EQ(ScheduleSentence(surge::v1::ScheduleFact()), "");
  EXPECT_TRUE(ScheduleEvents(surge::v1::ScheduleFact()).empty());
}

}  // namespace
}  // namespace surge::coordinator
