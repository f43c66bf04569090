// The run's facts from its configuration and the dispatcher's outcome, and
// their JSON form, the summary's "run" block (coordinator/results/run_facts.h,
// run_facts_json.h).
#include "coordinator/results/run_facts.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "coordinator/results/run_facts_json.h"

namespace surge::coordinator {
namespace {

surge::v1::RunConfig Config() {
  surge::v1::RunConfig config;
  config.set_seed(7);
  config.set_num_prompts(40);
  config.set_workers(2);
  config.set_late_threshold_ms(10);
  config.set_lateness_alarm_ms(50);
  config.mutable_target()->set_base_url("http://user:secret@127.0.0.1:8000");
  config.mutable_target()->set_endpoint("/v1/completions");
  config.mutable_target()->set_model("m");
  return config;
}

ResolvedTraffic Traffic(double rate) {
  ResolvedTraffic t;
  t.target_rate_rps = rate;
  t.burstiness = 0.5;
  return t;
}

DispatchOutcome Interrupted() {
  DispatchOutcome o;
  o.interrupted = true;
  o.interrupted_at_ns = 4'967'000'000;
  o.send_unknown = 3;
  o.reassigned = 20;
  o.workers_lost = 1;
  o.worker_losses.push_back({.worker = 1,
                             .at_ns = 2'550'000'000,
                             .why = "silent for 1500 ms",
                             .send_unknown = 3,
                             .not_sent = 2,
                             .reassigned = 20});
  surge::v1::ClockReport clock;
  clock.set_samples(10);
  clock.set_offset_ns(1'500'000);
  o.clocks = {clock, {}};
  return o;
}

TEST(RunFactsTest, ConfiguredFactsNameTheDefaultsAndRedactTheUrl) {
  const surge::v1::RunFacts f = ConfiguredRunFacts(Config(), Traffic(30), "synthetic");
  EXPECT_EQ(f.seed(), 7u);
  EXPECT_EQ(f.dataset(), "synthetic");
  EXPECT_EQ(f.num_prompts(), 40u);
  EXPECT_DOUBLE_EQ(f.target_rate_rps(), 30);
  EXPECT_DOUBLE_EQ(f.burstiness(), 0.5);
  EXPECT_EQ(f.ramp_up_strategy(), "") << "no ramp-up";
  EXPECT_FALSE(f.ramp_up_active());
  EXPECT_EQ(f.base_url().find("secret"), std::string::npos) << f.base_url();
  EXPECT_EQ(f.workers(), 2u);
  EXPECT_EQ(f.assign(), "round-robin");
  EXPECT_EQ(f.late_policy(), "send");
  EXPECT_DOUBLE_EQ(f.late_threshold_ms(), 10);
  EXPECT_FALSE(f.has_catch_up_rps());
  EXPECT_FALSE(f.has_plan_file());
}

TEST(RunFactsTest, OutcomeSaysHowTheRunEndedAndWhatBecameOfTheWorkers) {
  surge::v1::RunFacts f;
  AddOutcomeFacts(Interrupted(), Config(), &f);
  EXPECT_TRUE(f.interrupted());
  EXPECT_DOUBLE_EQ(f.interrupted_at_s(), 4.97);
  EXPECT_EQ(f.stop_reason(), "interrupted by the user at 4.97 s");
  EXPECT_EQ(f.send_unknown(), 3u);
  EXPECT_EQ(f.workers_lost(), 1u);
  ASSERT_EQ(f.worker_losses_size(), 1);
  EXPECT_DOUBLE_EQ(f.worker_losses(0).at_s(), 2.55);
  ASSERT_EQ(f.clock_sync_size(), 2);
  EXPECT_TRUE(f.clock_sync(0).reported());
  EXPECT_FALSE(f.clock_sync(1).reported());
  EXPECT_FALSE(f.clock_note().empty());
  ASSERT_TRUE(f.has_schedule());
  EXPECT_TRUE(f.schedule().judged());
  EXPECT_DOUBLE_EQ(f.schedule().lateness_alarm_ms(), 50);
  EXPECT_FALSE(f.schedule().has_fell_behind_at_s());
}

TEST(RunFactsTest, FailedDispatcherIsAnInterruptionWithNoCounters) {
  surge::v1::RunFacts f;
  AddOutcomeFacts(absl::UnavailableError("no workers joined"), Config(), &f);
  EXPECT_TRUE(f.interrupted());
  EXPECT_FALSE(f.has_interrupted_at_s());
  EXPECT_EQ(f.stop_reason(), "stopped: no workers joined");
  EXPECT_EQ(f.clock_sync_size(), 0);
  EXPECT_TRUE(f.schedule().judged());
  DispatchOutcome alarm;
  alarm.stopped_on_alarm = true;
  alarm.stop_message = "worker 0 p99 80 ms";
  AddOutcomeFacts(alarm, Config(), &f);
  EXPECT_EQ(f.stop_reason(), "stopped by surge (--stop-on-alarm): worker 0 p99 80 ms");
  EXPECT_TRUE(f.schedule().stopped_on_alarm());
  AddOutcomeFacts(DispatchOutcome{}, Config(), &f);
  EXPECT_EQ(f.stop_reason(), "completed");
}

// The block as it has always been written: 64-bit integers as numbers,
// doubles as doubles, "inf", nulls for the unset values that say "none",
// and no key for the other unset ones.
TEST(RunFactsJsonTest, BlockKeepsTheSummarysNamesAndValueTypes) {
  surge::v1::RunFacts f =
      ConfiguredRunFacts(Config(), Traffic(std::numeric_limits<double>::infinity()), "synthetic");
  AddOutcomeFacts(Interrupted(), Config(), &f);
  const nlohmann::json j = RunFactsToJson(f);
  EXPECT_EQ(j["target_rate_rps"], "inf");
  EXPECT_TRUE(j["seed"].is_number_unsigned());
  EXPECT_EQ(j["seed"], 7);
  EXPECT_TRUE(j["late_threshold_ms"].is_number_float());
  EXPECT_NE(j.dump().find("\"late_threshold_ms\":10.0"), std::string::npos) << j.dump();
  EXPECT_TRUE(j["plan_file"].is_null());
  EXPECT_TRUE(j["catch_up_rps"].is_null());
  EXPECT_DOUBLE_EQ(j["interrupted_at_s"].get<double>(), 4.97);
  EXPECT_EQ(j["send_unknown"], 3);
  EXPECT_EQ(j["rejected_records"], 0) << "counters are written also when 0";
  EXPECT_EQ(j["worker_losses"][0]["at_ns"], 2'550'000'000);
  EXPECT_TRUE(j["worker_losses"][0]["at_ns"].is_number_integer());
  EXPECT_TRUE(j["clock_sync"][0]["offset_ns"].is_number_integer());
  EXPECT_EQ(j["clock_sync"][0]["offset_ns"], 1'500'000);
  EXPECT_EQ(j["clock_sync"][1], (nlohmann::json{{"worker", 1}, {"reported", false}}));
  EXPECT_TRUE(j["schedule"]["fell_behind_at_s"].is_null());
  EXPECT_TRUE(j["schedule"]["lateness_p99_ms"].is_null());
  EXPECT_FALSE(j["schedule"].contains("schedule_kept")) << "not finished yet";
  EXPECT_FALSE(j.contains("schedule_kept"));
  EXPECT_FALSE(j.contains("rebuilt_by_report"));
  EXPECT_FALSE(j.contains("report_surge_version"));
}

TEST(RunFactsJsonTest, BlockReadsBackToTheSameFacts) {
  surge::v1::RunFacts f =
      ConfiguredRunFacts(Config(), Traffic(std::numeric_limits<double>::infinity()), "synthetic");
  f.set_plan_file("/tmp/x_plan.csv");
  AddOutcomeFacts(Interrupted(), Config(), &f);
  FinishSchedule(0.0123, f.mutable_schedule());
  auto back = RunFactsFromJson(RunFactsToJson(f));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), f.SerializeAsString());
  EXPECT_EQ(RunFactsToJson(*back), RunFactsToJson(f));
}

// `surge report` on a folder whose run never wrote its summary knows only
// a few facts, and writes only those (seed 0 included: it is set).
TEST(RunFactsJsonTest, FactsOfARunWhoseEndIsUnknownHoldOnlyWhatIsSet) {
  surge::v1::RunFacts f;
  f.set_seed(0);
  f.set_dataset("synthetic");
  f.set_rebuilt_by_report(true);
  f.set_started_at("2026-12-01 21:45:46");
  f.set_surge_version("0.1.0");
  f.set_report_surge_version("0.1.0");
  EXPECT_EQ(RunFactsToJson(f), (nlohmann::json{{"seed", 0},
                                               {"dataset", "synthetic"},
                                               {"rebuilt_by_report", true},
                                               {"started_at", "2026-12-01 21:45:46"},
                                               {"surge_version", "0.1.0"},
                                               {"report_surge_version", "0.1.0"}}));
  f.set_stop_reason("completed");
  EXPECT_TRUE(RunFactsToJson(f)["plan_file"].is_null()) << "a known end: the whole block";
}

TEST(RunFactsJsonTest, UnknownKeysAreIgnoredAndWrongTypesRefused) {
  auto old =
      RunFactsFromJson({{"seed", 3}, {"a_key_from_elsewhere", 1}, {"catch_up_rps", nullptr}});
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->seed(), 3u);
  EXPECT_FALSE(old->has_catch_up_rps());
  EXPECT_FALSE(RunFactsFromJson(nlohmann::json::array()).ok());
  EXPECT_FALSE(RunFactsFromJson({{"worker_losses", "garbage"}}).ok());
  EXPECT_FALSE(RunFactsFromJson({{"seed", "seven"}}).ok());
}

}  // namespace
}  // namespace surge::coordinator
