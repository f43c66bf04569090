#include "coordinator/capacity/certificate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "nlohmann/json.hpp"

namespace surge::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// A summary of a run that kept its schedule: 200 requests at 50 req/s,
// lateness p99 0.8 ms under a 5 ms alarm, one worker on the same clock and
// one with a 0.25 ms uncertainty.
Json KeptSummary() {
  return Json::parse(R"({
    "requests": {"total": 200, "sent": 200, "succeeded": 200, "lost": 0},
    "intended_rate_rps": 50.0, "achieved_rate_rps": 49.9, "achieved_vs_intended": 0.998,
    "lateness_s": {"p99": 0.0008},
    "run": {
      "instant_mode": false, "stop_reason": "completed", "workers_lost": 0,
      "clock_sync": [{"worker": 0, "reported": true, "same_clock": true, "uncertainty_ms": 0},
                     {"worker": 1, "reported": true, "uncertainty_ms": 0.25},
                     {"worker": 2, "reported": false}],
      "schedule": {"judged": true, "lateness_alarm_ms": 5, "fell_behind_at_s": null,
                   "cause": null, "cause_text": null, "alarm_reports": 0,
                   "lateness_p99_ms": 0.8, "schedule_kept": true},
      "schedule_kept": true
    }})");
}

Json ActualPage() {
  return Json::parse(R"({"stats": {"actual": {"sent": 201, "ks_distance": 0.5}}})");
}

TEST(CertificateTest, KeptScheduleIsValidWithEveryFact) {
  const Json page = ActualPage();
  const RunCertificate c = CertificateOf(KeptSummary(), &page);
  EXPECT_TRUE(c.valid);
  EXPECT_TRUE(c.reasons.empty());
  EXPECT_EQ(c.cause, "");
  EXPECT_EQ(c.intended_rate_rps, 50.0);
  EXPECT_EQ(c.achieved_rate_rps, 49.9);
  EXPECT_EQ(c.achieved_vs_intended, 0.998);
  EXPECT_EQ(c.lateness_p99_ms, 0.8);
  EXPECT_EQ(c.lateness_limit_ms, 5.0);
  EXPECT_EQ(c.ks_distance, 0.5);
  // n = m = 200 intervals: 1.358 · sqrt(400 / 40000) = 0.1358.
  EXPECT_DOUBLE_EQ(c.ks_critical, 0.1358);
  EXPECT_EQ(c.clock_uncertainty_ms, 0.25);
  EXPECT_EQ(c.stop_reason, "completed");
  EXPECT_EQ(c.sent, 200u);
  EXPECT_EQ(c.planned, 200u);
}

TEST(CertificateTest, LatenessOverTheAlarmThresholdFails) {
  Json s = KeptSummary();
  s["run"]["schedule"]["lateness_p99_ms"] = 7.5;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_FALSE(c.valid);
  EXPECT_THAT(c.reasons, ElementsAre("send lateness p99 7.5 ms is over the limit 5 ms (the run's "
                                     "lateness_alarm_ms)"));
}

TEST(CertificateTest, WithTheAlarmOffTheLimitIsTenMs) {
  Json s = KeptSummary();
  s["run"]["schedule"]["lateness_alarm_ms"] = 0;
  s["run"]["schedule"]["judged"] = false;
  s["run"]["schedule"]["lateness_p99_ms"] = 9.5;
  EXPECT_TRUE(CertificateOf(s, nullptr).valid);
  s["run"]["schedule"]["lateness_p99_ms"] = 10.5;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_EQ(c.lateness_limit_ms, 10.0);
  EXPECT_THAT(c.reasons, ElementsAre(HasSubstr("over the limit 10 ms (the default: the lateness "
                                               "alarm was off)")));
}

TEST(CertificateTest, LatenessFromTheSummaryWhenTheScheduleBlockHasNone) {
  Json s = KeptSummary();
  s["run"]["schedule"].erase("lateness_p99_ms");
  s["lateness_s"]["p99"] = 0.006;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_DOUBLE_EQ(c.lateness_p99_ms, 6.0);
  EXPECT_FALSE(c.valid);
}

TEST(CertificateTest, RateBelowNinetyNinePercentFails) {
  Json s = KeptSummary();
  s["achieved_rate_rps"] = 45.0;
  s["achieved_vs_intended"] = 0.9;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_FALSE(c.valid);
  EXPECT_THAT(c.reasons, ElementsAre("achieved rate 45 req/s is 90 % of the intended 50 req/s (at "
                                     "least 99 % needed)"));
}

TEST(CertificateTest, RateRuleIsSkippedInInstantMode) {
  Json s = KeptSummary();
  s["run"]["instant_mode"] = true;
  s["intended_rate_rps"] = nullptr;
  s["achieved_vs_intended"] = nullptr;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_TRUE(c.valid) << c.reasons.size();
  EXPECT_TRUE(std::isnan(c.achieved_vs_intended));
}

TEST(CertificateTest, UnknownRateOutsideInstantModeFails) {
  Json s = KeptSummary();
  s["achieved_rate_rps"] = nullptr;
  s["achieved_vs_intended"] = nullptr;
  EXPECT_THAT(CertificateOf(s, nullptr).reasons,
              ElementsAre(HasSubstr("achieved vs intended rate is unknown")));
}

TEST(CertificateTest, AlarmFiredFailsWithItsCause) {
  Json s = KeptSummary();
  s["run"]["schedule"]["fell_behind_at_s"] = 1.25;
  s["run"]["schedule"]["cause"] = "cpu";
  s["run"]["schedule"]["cause_text"] = "the worker's CPU was saturated";
  s["run"]["schedule"]["alarm_reports"] = 3;
  s["run"]["schedule"]["schedule_kept"] = false;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_FALSE(c.valid);
  EXPECT_EQ(c.cause, "cpu");
  EXPECT_THAT(c.reasons, ElementsAre("the lateness alarm fired at 1.25 s (cause cpu): the "
                                     "worker's CPU was saturated"));
}

TEST(CertificateTest, AnAlarmWithACauseOnTheTargetsSideIsANote) {
  Json s = KeptSummary();
  s["run"]["schedule"]["fell_behind_at_s"] = 8.6;
  s["run"]["schedule"]["cause"] = "connection_setup";
  s["run"]["schedule"]["cause_text"] = "connection set-up (40 new connections for 60 sends)";
  s["run"]["schedule"]["alarm_reports"] = 1;
  s["run"]["schedule"]["schedule_kept"] = false;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_TRUE(c.valid);
  EXPECT_TRUE(c.reasons.empty());
  EXPECT_THAT(c.notes, ElementsAre(HasSubstr("the lateness alarm fired at 8.6 s (cause "
                                             "connection_setup)")));
  EXPECT_THAT(c.notes[0], HasSubstr("not held against the schedule"));
  EXPECT_EQ(CertificateJson(c)["notes"].size(), 1u);
  // The same alarm with the lateness p99 over its limit still fails (rule 1).
  s["run"]["schedule"]["lateness_p99_ms"] = 12.0;
  const RunCertificate late = CertificateOf(s, nullptr);
  EXPECT_FALSE(late.valid);
  EXPECT_THAT(late.reasons, ElementsAre(HasSubstr("send lateness p99 12 ms")));
}

TEST(CertificateTest, ScheduleNotKeptWithoutAnAlarmFails) {
  Json s = KeptSummary();
  s["run"]["schedule"]["schedule_kept"] = false;
  EXPECT_THAT(CertificateOf(s, nullptr).reasons,
              ElementsAre("the summary says the schedule was not kept "
                          "(run.schedule.schedule_kept false)"));
}

TEST(CertificateTest, LateRunGivesOneReasonNotTwo) {
  // Over the threshold without an alarm: schedule_kept false repeats rule 1.
  Json s = KeptSummary();
  s["run"]["schedule"]["lateness_p99_ms"] = 6.0;
  s["run"]["schedule"]["schedule_kept"] = false;
  EXPECT_EQ(CertificateOf(s, nullptr).reasons.size(), 1u);
}

TEST(CertificateTest, MissingScheduleVerdictFails) {
  Json s = KeptSummary();
  s["run"]["schedule"].erase("schedule_kept");
  s["run"].erase("schedule_kept");
  EXPECT_THAT(CertificateOf(s, nullptr).reasons,
              ElementsAre(HasSubstr("does not say whether the schedule was kept")));
}

TEST(CertificateTest, LostRequestsAndWorkersFailEach) {
  Json s = KeptSummary();
  s["requests"]["lost"] = 3;
  s["run"]["workers_lost"] = 1;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_FALSE(c.valid);
  EXPECT_THAT(c.reasons, ElementsAre("3 requests were lost (possibly sent, no record)",
                                     "1 worker was lost during the run"));
}

TEST(CertificateTest, StoppedEarlyIsJudgedOnWhatWasSent) {
  Json s = KeptSummary();
  s["run"]["stop_reason"] = "saturated";
  s["requests"]["sent"] = 120;
  const RunCertificate c = CertificateOf(s, nullptr);
  EXPECT_TRUE(c.valid);
  EXPECT_EQ(c.stop_reason, "saturated");
  EXPECT_EQ(c.sent, 120u);
}

TEST(CertificateTest, NothingSentFails) {
  Json s = KeptSummary();
  s["run"]["schedule"]["lateness_p99_ms"] = nullptr;
  s["lateness_s"]["p99"] = nullptr;
  EXPECT_THAT(CertificateOf(s, nullptr).reasons,
              testing::Contains("the send lateness p99 is unknown: no request was sent"));
}

TEST(CertificateTest, KsIsReportedNeverARule) {
  const Json page = Json::parse(R"({"actual": {"sent": 201, "ks_distance": 1.0}})");
  const RunCertificate c = CertificateOf(KeptSummary(), &page);
  EXPECT_EQ(c.ks_distance, 1.0);
  EXPECT_GT(c.ks_distance, c.ks_critical);
  EXPECT_TRUE(c.valid);
}

TEST(CertificateTest, JsonHasEveryFieldAndNullForUnknown) {
  const Json j = CertificateJson(CertificateOf(KeptSummary(), nullptr));
  EXPECT_EQ(j["valid"], true);
  EXPECT_EQ(j["reasons"], Json::array());
  EXPECT_TRUE(j["cause"].is_null());
  EXPECT_TRUE(j["ks_distance"].is_null());
  EXPECT_EQ(j["lateness_limit_ms"], 5.0);
  EXPECT_EQ(j["clock_uncertainty_ms"], 0.25);
  EXPECT_EQ(j["planned"], 200);
}

class CertificateFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(CertificateFolderTest, ReadsSummaryAndActualPage) {
  Write("synthetic_plan.csv", "index,rate_rps,interval_s,offset_s,anomaly\n");
  Write("synthetic.json", KeptSummary().dump());
  Write("synthetic_rps_distribution_plot_with_actual_rps.json", ActualPage().dump());
  auto c = ReadRunCertificate(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->valid);
  EXPECT_EQ(c->ks_distance, 0.5);
}

TEST_F(CertificateFolderTest, MissingSummaryIsNotFoundNamingIt) {
  Write("synthetic_plan.csv", "index,rate_rps,interval_s,offset_s,anomaly\n");
  auto c = ReadRunCertificate(dir_);
  EXPECT_TRUE(absl::IsNotFound(c.status()));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("synthetic.json is missing"));
}

TEST_F(CertificateFolderTest, FolderWithoutPlanIsNotFound) {
  auto c = ReadRunCertificate(dir_);
  EXPECT_TRUE(absl::IsNotFound(c.status()));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("no {dataset}_plan.csv"));
  EXPECT_TRUE(absl::IsNotFound(ReadRunCertificate(dir_ / "nope").status()));
}

TEST_F(CertificateFolderTest, BrokenSummaryIsInvalidArgumentNamingIt) {
  Write("synthetic_plan.csv", "index,rate_rps,interval_s,offset_s,anomaly\n");
  Write("synthetic.json", "{not json");
  auto c = ReadRunCertificate(dir_);
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("synthetic.json: not valid JSON"));
}

}  // namespace
}  // namespace surge::coordinator
