// Run folder layout (R-PLOT-1), plan CSV (R-OUT-2), details JSONL and the
// summary (R-MET-2), and the Mooncake payload source (R-MET-3).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "common/failure_kind.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/results/progress.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using ::surge::testing::FreshDir;

// The details line DetailsWriter writes for `r`, in a fresh folder named
// `dir`; "" (and a test failure) when the writer cannot be made or flushed.
std::string OneDetailsLine(const std::string& dir, const surge::v1::RequestRecord& r) {
  const fs::path path = FreshDir(dir) / "d.jsonl";
  {
    auto w = DetailsWriter::Create(path);
    EXPECT_TRUE(w.ok()) << w.status();
    if (!w.ok()) return "";
    (*w)->Append(r);
    EXPECT_TRUE((*w)->Flush().ok());
  }
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(RunFolderTest, TimestampLayoutWithSuffixesAndModelSlashes) {
  const fs::path out = FreshDir("run_folder_test");
  setenv("TZ", "UTC", 1);
  const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
  auto a = CreateRunFolder(out, "org/model", when);
  auto b = CreateRunFolder(out, "org/model", when);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, out / "20260101_000000" / "performances" / "org_model");
  EXPECT_EQ(*b, out / "20260101_000000_1" / "performances" / "org_model");
  EXPECT_TRUE(fs::is_directory(*b));
}

TEST(PlanCsvTest, HeaderAndRowsReadBackExactly) {
  ArrivalSchedule plan;
  plan.rate_rps = {3.0, 1.0 / 3.0};
  plan.interval_s = {0.1, 0.30000000000000004};
  plan.offset_s = {0.1, 0.4};
  plan.anomaly = {Anomaly::kNormal, Anomaly::kBurstiness};
  const fs::path path = FreshDir("plan_csv") / "x_plan.csv";
  ASSERT_TRUE(WritePlanCsv(plan, path).ok());
  std::ifstream in(path);
  std::string header, row0, row1;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_EQ(header, "index,rate_rps,interval_s,offset_s,anomaly");
  EXPECT_EQ(row0, "0,3,0.10000000000000001,0.10000000000000001,normal");
  EXPECT_EQ(row1, "1,0.33333333333333331,0.30000000000000004,0.40000000000000002,burstiness");
  EXPECT_EQ(std::stod("0.33333333333333331"), 1.0 / 3.0);
}

TEST(DetailsTest, RoundTripsARecord) {
  surge::v1::RequestRecord r;
  r.set_index(7);
  r.set_attempt(1);
  r.set_worker(2);
  r.set_status(surge::v1::OK);
  r.set_planned_ns(1500000000);
  r.set_released(true);
  r.set_released_ns(1500000100);
  r.set_sent(true);
  r.set_sent_ns(1500020000);
  r.set_ttft_ns(50000000);
  r.set_e2el_ns(90000000);
  r.add_itl_ns(10000000);
  r.set_output_tokens(5);
  r.set_http_status(200);
  const std::string line = OneDetailsLine("details", r);
  ASSERT_FALSE(line.empty());
  EXPECT_THAT(line, HasSubstr("\"lateness_s\":2e-05"));
  EXPECT_THAT(line, HasSubstr("\"status\":\"ok\""));
  auto back = ParseDetailsLine(line);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->index(), 7u);
  EXPECT_EQ(back->sent_ns(), 1500020000);
  EXPECT_TRUE(back->sent());
  EXPECT_EQ(back->ttft_ns(), 50000000);
  EXPECT_EQ(back->itl_ns_size(), 1);
}

// Issue 10 item 6: the failure kind is written as a label and read back; a
// details line from before failure_kind gets it from the error's prefix,
// and a label this release does not know reads as OTHER.
TEST(DetailsTest, FailureKindRoundTripsAndOlderLinesDeriveIt) {
  surge::v1::RequestRecord r;
  r.set_index(3);
  r.set_planned_ns(1000);
  SetFailure(r, surge::v1::FAILED, surge::v1::FAILURE_KIND_TLS, "cannot load the CA file");
  const std::string line = OneDetailsLine("details_kind", r);
  ASSERT_FALSE(line.empty());
  EXPECT_THAT(line, HasSubstr("\"failure_kind\":\"tls\""));
  EXPECT_THAT(line, HasSubstr("\"error\":\"cannot load the CA file\""));
  auto back = ParseDetailsLine(line);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->failure_kind(), surge::v1::FAILURE_KIND_TLS);
  EXPECT_EQ(back->error(), "cannot load the CA file");

  auto old = ParseDetailsLine(
      R"({"index": 4, "status": "failed", "http_status": 503, "error": "http_503: busy"})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->failure_kind(), surge::v1::FAILURE_KIND_HTTP_5XX);
  auto ok = ParseDetailsLine(R"({"index": 5, "status": "ok", "error": ""})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->failure_kind(), surge::v1::FAILURE_KIND_UNSPECIFIED);
  auto future = ParseDetailsLine(
      R"({"index": 6, "status": "failed", "error": "x: y", "failure_kind": "quantum_noise"})");
  ASSERT_TRUE(future.ok());
  EXPECT_EQ(future->failure_kind(), surge::v1::FAILURE_KIND_OTHER);
}

// Reasons are counted by kind, not by the text: a TLS set-up failure whose
// text has no "tls:" prefix still counts as "tls"; HTTP errors keep their
// status; an unknown old text keeps its own prefix.
TEST(SummaryTest, ReasonsComeFromTheFailureKind) {
  std::vector<surge::v1::RequestRecord> records(4);
  for (size_t i = 0; i < records.size(); ++i) records[i].set_index(i);
  SetFailure(records[0], surge::v1::FAILED, surge::v1::FAILURE_KIND_TLS, "cannot load the CA file");
  SetFailure(records[1], surge::v1::FAILED, surge::v1::FAILURE_KIND_HTTP_4XX, "http_429: slow");
  records[1].set_http_status(429);
  records[2].set_status(surge::v1::FAILED);
  records[2].set_error("brand_new_reason: from an older release");
  SetFailure(records[3], surge::v1::LOST, surge::v1::FAILURE_KIND_SEND_UNKNOWN,
             "send_unknown: worker 1 lost (silent for 1500 ms)");
  const RunSummary s = Summarize(records);
  EXPECT_EQ(s.reasons,
            (std::map<std::string, uint64_t>{
                {"brand_new_reason", 1}, {"http_429", 1}, {"send_unknown", 1}, {"tls", 1}}));
}

TEST(SummaryTest, PercentilesAreNumpyLinear) {
  std::vector<double> v;
  for (int i = 10; i >= 1; --i) v.push_back(i);
  const MetricStats s = ComputeStats(v);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.p99, 9.91);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
}

TEST(SummaryTest, AchievedAndIntendedRatesAndCounts) {
  std::vector<surge::v1::RequestRecord> records;
  // Planned every 0.1 s; sent at 0.1, 0.2, ... but the last one 0.1 s late.
  for (int i = 0; i < 5; ++i) {
    surge::v1::RequestRecord r;
    r.set_index(i);
    r.set_status(surge::v1::OK);
    r.set_planned_ns((i + 1) * 100000000LL);
    r.set_sent(true);
    r.set_sent_ns((i + 1) * 100000000LL + (i == 4 ? 100000000LL : 0));
    r.set_ttft_ns(10000000);
    r.set_e2el_ns(20000000);
    r.set_output_tokens(4);
    records.push_back(r);
  }
  surge::v1::RequestRecord failed;
  failed.set_index(5);
  failed.set_status(surge::v1::FAILED);
  failed.set_error("http_503: busy");
  failed.set_planned_ns(600000000);
  failed.set_sent(true);
  failed.set_sent_ns(700000000);
  records.push_back(failed);
  surge::v1::RequestRecord unsent;
  unsent.set_index(6);
  unsent.set_status(surge::v1::NOT_SENT);
  unsent.set_error("not_sent: interrupted");
  unsent.set_planned_ns(1000000000);
  records.push_back(unsent);

  const RunSummary s = Summarize(records);
  EXPECT_EQ(s.total, 7u);
  EXPECT_EQ(s.succeeded, 5u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.not_sent, 1u);
  EXPECT_EQ(s.sent, 6u);
  // 6 sends from 0.1 to 0.7 s: 5 / 0.6; the plan's 7 requests from 0.1 to
  // 1.0 s (the unsent one included): 6 / 0.9.
  EXPECT_DOUBLE_EQ(s.achieved_rate_rps, 5 / 0.6);
  EXPECT_DOUBLE_EQ(s.intended_rate_rps, 6 / 0.9);
  EXPECT_NEAR(s.lateness_s.max, 0.1, 1e-12);
  EXPECT_EQ(s.reasons.at("http_503"), 1u);
  EXPECT_EQ(s.reasons.at("not_sent"), 1u);
  EXPECT_EQ(s.output_tokens, 20u);
  // The last OK request ends at 0.6 + 0.02 s; the failed one was sent at 0.7 s.
  EXPECT_NEAR(s.duration_s, 0.7, 1e-12);
}

// Issue 8 item 3: interrupted requests were sent: they count in the sent
// total, the achieved rate, lateness, duration and concurrency (in flight
// until they were cut off), and are counted apart from lost and not_sent.
TEST(SummaryTest, InterruptedRequestsCountAsSentUntilTheCut) {
  std::vector<surge::v1::RequestRecord> records;
  // Request 0: OK, sent at 0.1 s, done at 0.3 s.
  surge::v1::RequestRecord ok;
  ok.set_index(0);
  ok.set_status(surge::v1::OK);
  ok.set_planned_ns(100000000);
  ok.set_sent(true);
  ok.set_sent_ns(100000000);
  ok.set_ttft_ns(100000000);
  ok.set_e2el_ns(200000000);
  ok.set_output_tokens(3);
  records.push_back(ok);
  // Requests 1..3: sent at 0.2, 0.3, 0.4 s (planned 0.2, 0.3, 0.35), cut
  // off at 1.0 s.
  const int64_t planned[] = {200000000, 300000000, 350000000};
  for (int k = 0; k < 3; ++k) {
    surge::v1::RequestRecord r;
    r.set_index(1 + k);
    r.set_status(surge::v1::INTERRUPTED);
    r.set_error("interrupted: cut_off_at_stop");
    r.set_planned_ns(planned[k]);
    r.set_sent(true);
    r.set_sent_ns(200000000 + k * 100000000LL);
    r.set_ttft_ns(k == 0 ? 50000000 : 0);
    r.set_output_tokens(k == 0 ? 2 : 0);
    r.set_interrupted_ns(1000000000);
    records.push_back(r);
  }
  surge::v1::RequestRecord unsent;
  unsent.set_index(4);
  unsent.set_status(surge::v1::NOT_SENT);
  unsent.set_error("not_sent: interrupted");
  unsent.set_planned_ns(500000000);
  records.push_back(unsent);

  const RunSummary s = Summarize(records);
  EXPECT_EQ(s.total, 5u);
  EXPECT_EQ(s.succeeded, 1u);
  EXPECT_EQ(s.interrupted, 3u);
  EXPECT_EQ(s.lost, 0u);
  EXPECT_EQ(s.not_sent, 1u);
  EXPECT_EQ(s.sent, 4u);
  // 4 sends from 0.1 to 0.4 s: 3 / 0.3 = 10 RPS (not 1 send: NaN).
  EXPECT_NEAR(s.achieved_rate_rps, 10.0, 1e-9);
  // Intended is the whole plan's: 5 requests planned from 0.1 to 0.5 s.
  EXPECT_NEAR(s.intended_rate_rps, 4 / 0.4, 1e-9);
  EXPECT_EQ(s.lateness_s.count, 4u);
  EXPECT_NEAR(s.lateness_s.max, 0.05, 1e-12);
  // Request 0 ends at 0.3 s as request 2 starts (ends before starts), so
  // at most 3 are in flight (from 0.4 s); the cut at 1.0 s ends the run.
  EXPECT_EQ(s.max_concurrency, 3u);
  EXPECT_NEAR(s.duration_s, 1.0, 1e-12);
  // Busy time 0.2 + 0.8 + 0.7 + 0.6 = 2.3 s over 1.0 s.
  EXPECT_NEAR(s.mean_concurrency, 2.3, 1e-9);
  EXPECT_EQ(s.reasons.at("interrupted"), 3u);
  // TTFT and tokens of OK requests only.
  EXPECT_EQ(s.ttft_s.count, 1u);
  EXPECT_EQ(s.output_tokens, 3u);
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_EQ(j["requests"]["interrupted"], 3);
  EXPECT_EQ(j["requests"]["sent"], 4);
  EXPECT_EQ(j["common"]["Interrupted Requests"], 3);
  EXPECT_EQ(j["common"]["Failed Requests"], 4);
  EXPECT_THAT(SummaryToCsv(s), HasSubstr("Interrupted Requests,3\n"));
  const std::string table = FormatSummaryTable(s);
  EXPECT_THAT(table, ::testing::ContainsRegex("interrupted +3\n"));
  EXPECT_THAT(table, ::testing::ContainsRegex("sent \\(first byte out\\) +4\n"));
}

TEST(DetailsTest, InterruptedRecordRoundTripsWithItsCutTime) {
  surge::v1::RequestRecord r;
  r.set_index(3);
  r.set_status(surge::v1::INTERRUPTED);
  r.set_error("interrupted: cut_off_at_stop");
  r.set_planned_ns(200000000);
  r.set_sent(true);
  r.set_sent_ns(200100000);
  r.set_ttft_ns(40000000);
  r.add_itl_ns(5000000);
  r.set_output_tokens(2);
  r.set_output_tokens_estimated(true);
  r.set_interrupted_ns(4970000000);
  const std::string line = OneDetailsLine("details_interrupted", r);
  ASSERT_FALSE(line.empty());
  EXPECT_THAT(line, HasSubstr("\"status\":\"interrupted\""));
  EXPECT_THAT(line, HasSubstr("\"interrupted_offset_s\":4.97"));
  EXPECT_THAT(line, HasSubstr("\"actual_offset_s\":0.2001"));
  auto back = ParseDetailsLine(line);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status(), surge::v1::INTERRUPTED);
  EXPECT_EQ(back->interrupted_ns(), 4970000000);
  EXPECT_EQ(back->sent_ns(), 200100000);
  EXPECT_EQ(back->output_tokens(), 2u);
  EXPECT_TRUE(back->output_tokens_estimated());
}

// Issue 8, 6(c): at 20,000 RPS only part of the plan reached the socket and
// the intended rate came out as 7,617 RPS. Intended is the plan's: (N − 1)/
// (t_{N−1} − t_0) over every record; achieved stays over the sent ones.
TEST(SummaryTest, IntendedRateIsThePlansWhenOnlyPartWasSent) {
  std::vector<surge::v1::RequestRecord> records;
  for (int i = 0; i < 4000; ++i) {  // planned every 50 µs: 20,000 RPS
    surge::v1::RequestRecord r;
    r.set_index(i);
    r.set_planned_ns(int64_t{50000} * i);
    if (i % 8 == 0 || i % 8 == 3 || i % 8 == 5 || i == 3999) {  // 1,501 sent
      r.set_status(surge::v1::OK);
      r.set_sent(true);
      r.set_sent_ns(int64_t{50000} * i * 3);  // sent at a third of the pace
      r.set_e2el_ns(1000000);
      r.set_ttft_ns(500000);
      r.set_output_tokens(2);
    } else {
      r.set_status(surge::v1::FAILED);
      r.set_error("connect: Cannot assign requested address");
    }
    records.push_back(r);
  }
  const RunSummary s = Summarize(records);
  EXPECT_EQ(s.sent, 1501u);
  EXPECT_NEAR(s.intended_rate_rps, 20000, 1e-6);
  EXPECT_NEAR(s.achieved_rate_rps, 1500 / (3999 * 150e-6), 1e-6);
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_NEAR(j["intended_rate_rps"].get<double>(), 20000, 1e-6);
  EXPECT_NEAR(j["common"]["Intended Rate (req/s)"].get<double>(), 20000, 1e-6);
  EXPECT_THAT(SummaryToCsv(s), HasSubstr("Intended Rate (req/s),20000.0000\n"));
  EXPECT_THAT(FormatSummaryTable(s), HasSubstr("Intended rate, plan (RPS)            20000.000"));
}

// Issue 8, item 8: fewer than two sends have no rate: "n/a" on the
// console, null in the JSON and empty in the CSV, never a made-up number.
// Covers one send, no send (all failed before the socket) and instant mode
// with one request.
TEST(SummaryTest, NoRateFromFewerThanTwoSends) {
  surge::v1::RequestRecord one;
  one.set_index(0);
  one.set_status(surge::v1::OK);
  one.set_planned_ns(200000000);
  one.set_sent(true);
  one.set_sent_ns(200030000);
  one.set_e2el_ns(1000000);
  one.set_output_tokens(3);
  surge::v1::RequestRecord later = one;  // a second planned request, not sent
  later.set_index(1);
  later.set_planned_ns(400000000);
  later.set_sent(false);
  later.set_status(surge::v1::FAILED);
  later.set_error("connect: refused");
  const RunSummary s = Summarize({one, later});
  EXPECT_TRUE(std::isnan(s.achieved_rate_rps));
  EXPECT_NEAR(s.intended_rate_rps, 5, 1e-9);  // the plan's 5 RPS
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_TRUE(j["achieved_rate_rps"].is_null());
  EXPECT_TRUE(j["achieved_vs_intended"].is_null());
  EXPECT_TRUE(j["common"]["Achieved Rate (req/s)"].is_null());
  EXPECT_THAT(SummaryToCsv(s), HasSubstr("Achieved Rate (req/s),\n"));
  EXPECT_THAT(FormatSummaryTable(s), HasSubstr("Achieved rate, sent (RPS)            n/a\n"));

  later.set_sent(false);
  const RunSummary none = Summarize({later});  // nothing sent, one planned
  EXPECT_TRUE(std::isnan(none.achieved_rate_rps));
  EXPECT_TRUE(std::isnan(none.intended_rate_rps));
  EXPECT_THAT(FormatSummaryTable(none), HasSubstr("Intended rate, plan (RPS)            n/a\n"));

  surge::v1::RequestRecord instant = one;  // instant mode: planned at 0
  instant.set_planned_ns(0);
  const RunSummary inst = Summarize({instant});
  EXPECT_TRUE(std::isnan(inst.achieved_rate_rps));
  EXPECT_TRUE(std::isnan(inst.intended_rate_rps));
}

// Issue 9 item 1: the intended rate is the plan's also when the run
// stopped early and not every planned request has a record (surge run and
// surge report take it from the plan: IntendedRateRps over its offsets).
TEST(SummaryTest, IntendedRateIsThePlansForARunStoppedEarly) {
  std::vector<double> plan;  // 20,000 RPS, 80,000 requests
  for (int i = 0; i < 80000; ++i) plan.push_back((i + 1) / 20000.0);
  EXPECT_NEAR(IntendedRateRps(plan), 20000, 1e-6);
  // Only the first 9,000 records came back (a worker died holding the rest,
  // or the run was cut): the records alone say a different rate...
  std::vector<surge::v1::RequestRecord> records;
  for (int i = 0; i < 9000; ++i) {
    surge::v1::RequestRecord r;
    r.set_index(static_cast<uint64_t>(i));
    r.set_planned_ns(static_cast<int64_t>(i + 1) * 50000);
    r.set_status(surge::v1::NOT_SENT);
    records.push_back(r);
  }
  records.back().set_planned_ns(3'000'000'000);  // a straggler planned at 3 s
  const RunSummary s = Summarize(records);
  EXPECT_NEAR(s.intended_rate_rps, 8999 / (3.0 - 0.00005), 1e-6);
  // ...the plan does not change.
  EXPECT_NEAR(IntendedRateRps(plan), 20000, 1e-6);
  EXPECT_TRUE(std::isnan(IntendedRateRps({0.5})));
  EXPECT_TRUE(std::isnan(IntendedRateRps({0, 0, 0})));  // instant mode
}

TEST(RunFolderTest, StartTimeTextAndFromFolderName) {
  setenv("TZ", "UTC", 1);
  const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
  EXPECT_EQ(FormatLocalTime(when), "2026-01-01 00:00:00 +0000");
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015/performances/org_model"),
            "2026-01-01 09:30:15 (local time)");
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015_2/performances/m/"),
            "2026-01-01 09:30:15 (local time)");
  EXPECT_EQ(RunStartFromFolder("somewhere/else"), "");
  EXPECT_EQ(RunStartFromFolder("out/2026x101_093015/performances/m"), "");
}

surge::v1::RequestRecord OkRecord(uint64_t index, double sent_s, double ttft_s, double e2el_s,
                                  uint32_t tokens, std::vector<double> itl_s = {}) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_status(surge::v1::OK);
  r.set_sent(true);
  r.set_planned_ns(static_cast<int64_t>(sent_s * 1e9));
  r.set_sent_ns(static_cast<int64_t>(sent_s * 1e9));
  r.set_ttft_ns(static_cast<int64_t>(ttft_s * 1e9));
  r.set_e2el_ns(static_cast<int64_t>(e2el_s * 1e9));
  r.set_output_tokens(tokens);
  r.set_input_tokens(100);
  for (double g : itl_s) r.add_itl_ns(static_cast<int64_t>(g * 1e9));
  return r;
}

// R-MET-1 with fixed chunk times: content at 0.5, 0.6, 0.7 s after send →
// TTFT 0.5, ITL [0.1, 0.1], TPOT (0.7 − 0.5)/(3 − 1) = 0.1.
TEST(SummaryTest, TpotItlConcurrencyAndGoodput) {
  std::vector<surge::v1::RequestRecord> records = {
      OkRecord(0, 0.0, 0.5, 0.7, 3, {0.1, 0.1}),
      OkRecord(1, 0.2, 0.3, 1.3, 11, {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}),
      OkRecord(2, 0.7, 0.05, 0.1, 1),  // starts as request 0 ends: no overlap
  };
  surge::v1::GoodputConfig slo;
  slo.set_ttft_ms(400);
  slo.set_tpot_ms(150);
  const RunSummary s = Summarize(records, &slo);
  EXPECT_NEAR(s.ttft_s.p50, 0.3, 1e-9);
  ASSERT_EQ(s.tpot_s.count, 2u);  // one-token requests have no TPOT
  EXPECT_NEAR(s.tpot_s.min, 0.1, 1e-9);
  EXPECT_NEAR(s.tpot_s.max, 0.1, 1e-9);
  EXPECT_EQ(s.itl_s.count, 12u);  // pooled over requests
  EXPECT_EQ(s.max_concurrency, 2u);
  EXPECT_NEAR(s.duration_s, 1.5, 1e-9);
  EXPECT_NEAR(s.mean_concurrency, (0.7 + 1.3 + 0.1) / 1.5, 1e-9);
  ASSERT_TRUE(s.has_goodput);
  EXPECT_EQ(s.good_requests, 2u);  // request 0 misses the TTFT objective
  EXPECT_NEAR(s.goodput_rps, 2 / 1.5, 1e-9);

  const std::string csv = SummaryToCsv(s);
  EXPECT_THAT(csv, ::testing::StartsWith(
                       "Performance Parameters,Average,Min,Max,Median,P75,P90,P99,N\n"));
  EXPECT_THAT(csv, HasSubstr("TPOT (ms),100.0000,100.0000,100.0000,100.0000,100.0000,100.0000,"
                             "100.0000,2\n"));
  EXPECT_THAT(csv, HasSubstr("Max Concurrency,2\n"));
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_NEAR(j["metrics"]["TTFT"]["Median"].get<double>(), 300, 1e-6);
  EXPECT_EQ(j["common"]["Success Requests"], 3);
}

// Issue 10 item 6 / issue 9 item 3: the streaming summary. With no limit it
// is Summarize bit for bit; with a small exact limit the counts, rates,
// min/max/mean and concurrency are still exact, the percentiles of the
// metrics past the limit are within the histogram's bound, and the JSON says
// which metrics are estimates.
TEST(SummaryTest, StreamingAccumulatorEqualsTheExactSummaryWithinItsBound) {
  std::vector<surge::v1::RequestRecord> records;
  for (uint64_t i = 0; i < 400; ++i) {
    std::vector<double> itl;
    for (int k = 0; k < 9; ++k) itl.push_back(0.002 + 0.0001 * static_cast<double>((i * 7 + k) % 13));
    records.push_back(OkRecord(i, 0.01 * static_cast<double>(i), 0.04 + 0.001 * static_cast<double>(i % 17),
                               0.3 + 0.001 * static_cast<double>(i % 29), 10, itl));
    records.back().set_sent_ns(records.back().planned_ns() + 20'000 + static_cast<int64_t>(i % 5) * 1'000);
  }
  const RunSummary exact = Summarize(records);
  SummaryAccumulator unlimited(nullptr, StreamingStats::kUnlimited);
  SummaryAccumulator limited(nullptr, /*exact_limit=*/1000);  // ITL: 3,600 values
  for (const auto& r : records) {
    unlimited.Add(r);
    limited.Add(r);
  }
  const RunSummary a = unlimited.Finish();
  EXPECT_EQ(SummaryToJson(a, {}).dump(), SummaryToJson(exact, {}).dump());
  const RunSummary b = limited.Finish();
  EXPECT_TRUE(exact.percentiles_exact);
  EXPECT_FALSE(b.percentiles_exact);
  EXPECT_FALSE(b.itl_s.exact);
  EXPECT_TRUE(b.ttft_s.exact);  // 400 values: under the limit
  EXPECT_EQ(b.total, 400u);
  EXPECT_EQ(b.max_concurrency, exact.max_concurrency);
  EXPECT_DOUBLE_EQ(b.achieved_rate_rps, exact.achieved_rate_rps);
  EXPECT_DOUBLE_EQ(b.intended_rate_rps, exact.intended_rate_rps);
  EXPECT_EQ(b.itl_s.count, 3600u);
  EXPECT_EQ(b.itl_s.min, exact.itl_s.min);
  EXPECT_EQ(b.itl_s.max, exact.itl_s.max);
  EXPECT_NEAR(b.itl_s.mean, exact.itl_s.mean, 1e-12);
  for (auto [est, ex] : {std::pair{b.itl_s.p50, exact.itl_s.p50}, {b.itl_s.p90, exact.itl_s.p90},
                         {b.itl_s.p99, exact.itl_s.p99}}) {
    EXPECT_LE(std::fabs(est - ex), kStreamingRelativeError * ex * 1.0001) << ex;
  }
  const nlohmann::json j = SummaryToJson(b, {});
  EXPECT_EQ(j["itl_s"]["exact"], false);
  EXPECT_EQ(j["ttft_s"]["exact"], true);
  EXPECT_THAT(j["percentile_method"].get<std::string>(), HasSubstr("within 0.5 %"));
  // Finish() again, after more records: the same accumulator goes on.
  limited.Add(OkRecord(400, 4.0, 0.05, 0.3, 10));
  EXPECT_EQ(limited.Finish().total, 401u);
}

// Issue 11 item 8: the edge rules docs/DESIGN.md "Metric edge rules" states.
// A request with at most one output token has no TPOT and meets a TPOT
// objective (vLLM's rule), even a 0 ms one; a timed-out request (failed, E2EL
// 0) is in the send-side metrics only, in flight for no time.
TEST(SummaryTest, DocumentedEdgeRules) {
  std::vector<surge::v1::RequestRecord> records = {
      OkRecord(0, 0.0, 0.2, 0.2, 1),  // one token: no TPOT
      OkRecord(1, 0.1, 0.2, 0.2, 0),  // no token at all: no TPOT either
      OkRecord(2, 0.2, 0.2, 0.4, 3),  // TPOT (0.4 − 0.2)/2 = 0.1 s
  };
  surge::v1::RequestRecord timeout;
  timeout.set_index(3);
  timeout.set_status(surge::v1::FAILED);
  timeout.set_error("timeout");
  timeout.set_sent(true);
  timeout.set_planned_ns(300000000);
  timeout.set_sent_ns(310000000);
  timeout.set_ttft_ns(50000000);  // a first token came, then nothing
  records.push_back(timeout);
  surge::v1::GoodputConfig slo;
  slo.set_tpot_ms(0);
  const RunSummary s = Summarize(records, &slo);
  EXPECT_EQ(s.tpot_s.count, 1u);
  EXPECT_EQ(s.good_requests, 2u);  // the 1- and 0-token requests; request 2 misses 0 ms
  EXPECT_EQ(s.ttft_s.count, 3u);   // ok requests only: the timeout's 50 ms is not there
  EXPECT_NEAR(s.ttft_s.min, 0.2, 1e-9);
  EXPECT_EQ(s.sent, 4u);
  EXPECT_EQ(s.lateness_s.count, 4u);  // send-side: every sent request
  EXPECT_NEAR(s.lateness_s.max, 0.01, 1e-9);
  EXPECT_EQ(s.reasons.at("timeout"), 1u);
  EXPECT_NEAR(s.duration_s, 0.6, 1e-9);  // request 2's end; the timeout adds no time
  EXPECT_NEAR(s.mean_concurrency, (0.2 + 0.2 + 0.4) / 0.6, 1e-9);
  // Nothing for a metric with no value: n/a, null, an empty cell, N = 0.
  const RunSummary none = Summarize({OkRecord(0, 0.0, 0.1, 0.1, 1)});
  EXPECT_THAT(FormatSummaryTable(none),
              HasSubstr("TPOT mean/p50/p99 (ms)               n/a / n/a / n/a"));
  EXPECT_TRUE(SummaryToJson(none, {})["tpot_s"]["p50"].is_null());
  EXPECT_THAT(SummaryToCsv(none), HasSubstr("TPOT (ms),,,,,,,,0\n"));
}

// Issue 8 item 6(a): how many output token counts are estimates is said in
// the console table, {dataset}.json and {dataset}.csv; TPOT uses the count
// the record carries (the estimate when there is no usage).
TEST(SummaryTest, CountsEstimatedOutputTokens) {
  std::vector<surge::v1::RequestRecord> records = {
      OkRecord(0, 0.0, 0.1, 4.2, 1024),  // 4,096 chars, no usage: estimated
      OkRecord(1, 0.1, 0.1, 4.2, 1024), OkRecord(2, 0.2, 0.1, 1.1, 11),  // the server's usage
  };
  records[0].set_output_tokens_estimated(true);
  records[1].set_output_tokens_estimated(true);
  surge::v1::RequestRecord failed;
  failed.set_index(3);
  failed.set_status(surge::v1::FAILED);
  failed.set_error("incomplete_stream");
  failed.set_output_tokens_estimated(true);  // not OK: not in the totals
  records.push_back(failed);
  const RunSummary s = Summarize(records);
  EXPECT_EQ(s.output_tokens_estimated, 2u);
  EXPECT_NEAR(s.tpot_s.min, (4.2 - 0.1) / 1023, 1e-9);  // the estimate, not 82 events
  EXPECT_THAT(FormatSummaryTable(s),
              HasSubstr("  Output tokens estimated for 2 of 3 requests (no usage from the "
                        "server; ~4 chars/token)\n"));
  EXPECT_THAT(SummaryToCsv(s), HasSubstr("\nEstimated Output Token Counts,2\n"));
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_EQ(j["output_tokens_estimated"]["requests"], 2);
  EXPECT_EQ(j["output_tokens_estimated"]["of_succeeded"], 3);
  EXPECT_EQ(j["common"]["Estimated Output Token Counts"], 2);
  // None estimated: no console line.
  records[0].set_output_tokens_estimated(false);
  records[1].set_output_tokens_estimated(false);
  EXPECT_THAT(FormatSummaryTable(Summarize(records)),
              ::testing::Not(HasSubstr("Output tokens estimated")));
}

TEST(SummaryTest, AllFailedStillSummarizes) {
  std::vector<surge::v1::RequestRecord> records(3);
  for (int i = 0; i < 3; ++i) {
    records[i].set_index(i);
    records[i].set_status(surge::v1::FAILED);
    records[i].set_sent(true);
    records[i].set_sent_ns(i * 1000000);
    records[i].set_http_status(503);
    records[i].set_error("http_503: Service Unavailable");
  }
  const RunSummary s = Summarize(records);
  EXPECT_EQ(s.succeeded, 0u);
  EXPECT_EQ(s.failed, 3u);
  EXPECT_EQ(s.reasons.at("http_503"), 3u);
  EXPECT_THAT(FormatSummaryTable(s), HasSubstr("All 3 requests failed"));
  EXPECT_TRUE(SummaryToJson(s, {})["ttft_s"]["p50"].is_null());
}

// Issue 10 item 3, the coordinated-omission view: TTFT and E2EL counted from
// the planned send are the measured values plus each request's lateness,
// exactly; only OK requests (the same ones TTFT/E2EL cover) contribute, so a
// not-sent, lost or failed record adds nothing, whatever times it carries.
std::vector<surge::v1::RequestRecord> LateRecords() {
  // index, planned, sent, ttft, e2el (ns): lateness 0, 50, 10 and 200 ms.
  const int64_t rows[4][5] = {{0, 100000000, 100000000, 20000000, 200000000},
                              {1, 200000000, 250000000, 30000000, 300000000},
                              {2, 300000000, 310000000, 40000000, 100000000},
                              {3, 400000000, 600000000, 10000000, 400000000}};
  std::vector<surge::v1::RequestRecord> records;
  for (const auto& row : rows) {
    surge::v1::RequestRecord r;
    r.set_index(row[0]);
    r.set_status(surge::v1::OK);
    r.set_planned_ns(row[1]);
    r.set_sent(true);
    r.set_sent_ns(row[2]);
    r.set_ttft_ns(row[3]);
    r.set_e2el_ns(row[4]);
    r.set_output_tokens(2);
    records.push_back(r);
  }
  surge::v1::RequestRecord unsent;  // planned, never sent
  unsent.set_index(4);
  unsent.set_status(surge::v1::NOT_SENT);
  unsent.set_error("not_sent: interrupted");
  unsent.set_planned_ns(500000000);
  records.push_back(unsent);
  surge::v1::RequestRecord lost = unsent;  // sent by a lost worker, 3 s late
  lost.set_index(5);
  lost.set_status(surge::v1::LOST);
  lost.set_error("send_unknown");
  lost.set_planned_ns(600000000);
  lost.set_sent(true);
  lost.set_sent_ns(3600000000);
  lost.set_ttft_ns(1000000000);
  lost.set_e2el_ns(2000000000);
  records.push_back(lost);
  surge::v1::RequestRecord failed = lost;  // answered with an error
  failed.set_index(6);
  failed.set_status(surge::v1::FAILED);
  failed.set_error("http_503");
  records.push_back(failed);
  return records;
}

TEST(LatencyFromPlannedTest, LateSendAddsExactlyItsLateness) {
  const std::vector<surge::v1::RequestRecord> records = LateRecords();
  EXPECT_EQ(FromPlannedNs(records[0], records[0].ttft_ns()), 20000000);   // on time: equal
  EXPECT_EQ(FromPlannedNs(records[1], records[1].ttft_ns()), 80000000);   // 30 + 50 ms
  EXPECT_EQ(FromPlannedNs(records[3], records[3].ttft_ns()), 210000000);  // 10 + 200 ms
  EXPECT_EQ(FromPlannedNs(records[3], records[3].e2el_ns()), 600000000);  // 400 + 200 ms
  // Sent 1 ms early (a worker's clock ahead): 1 ms less.
  surge::v1::RequestRecord early = records[0];
  early.set_sent_ns(99000000);
  EXPECT_EQ(FromPlannedNs(early, early.ttft_ns()), 19000000);
}

TEST(LatencyFromPlannedTest, SummaryStatisticsOverOkRequestsOnly) {
  const RunSummary s = Summarize(LateRecords());
  // From actual send: TTFT {20, 30, 40, 10} ms, E2EL {200, 300, 100, 400} ms.
  EXPECT_EQ(s.ttft_s.count, 4u);
  EXPECT_NEAR(s.ttft_s.p50, 0.025, 1e-12);
  EXPECT_EQ(s.ttft_s.max, 0.04);
  // From planned send: TTFT {20, 80, 50, 210} ms; sorted 20, 50, 80, 210.
  const MetricStats& t = s.ttft_from_planned_s;
  EXPECT_EQ(t.count, 4u);
  EXPECT_NEAR(t.mean, 0.09, 1e-12);
  EXPECT_EQ(t.min, 0.02);
  EXPECT_EQ(t.max, 0.21);
  EXPECT_NEAR(t.p50, 0.065, 1e-12);   // (50 + 80)/2
  EXPECT_NEAR(t.p75, 0.1125, 1e-12);  // 80 + 0.25 × 130
  EXPECT_NEAR(t.p90, 0.171, 1e-12);   // 80 + 0.70 × 130
  EXPECT_NEAR(t.p99, 0.2061, 1e-12);  // 80 + 0.97 × 130
  // E2EL from planned send: {200, 350, 110, 600} ms; sorted 110, 200, 350, 600.
  const MetricStats& e = s.e2el_from_planned_s;
  EXPECT_EQ(e.count, 4u);
  EXPECT_NEAR(e.mean, 0.315, 1e-12);
  EXPECT_EQ(e.min, 0.11);
  EXPECT_EQ(e.max, 0.6);
  EXPECT_NEAR(e.p50, 0.275, 1e-12);
  EXPECT_NEAR(e.p75, 0.4125, 1e-12);
  EXPECT_NEAR(e.p90, 0.525, 1e-12);
  EXPECT_NEAR(e.p99, 0.5925, 1e-12);
  // The lost and failed requests were sent: they are late sends (lateness
  // counts 6 sends), but have no latency in either view.
  EXPECT_EQ(s.lateness_s.count, 6u);
}

TEST(LatencyFromPlannedTest, BothViewsAgreeWhenTheScheduleWasKept) {
  std::vector<surge::v1::RequestRecord> records = LateRecords();
  records.resize(4);
  for (auto& r : records) r.set_sent_ns(r.planned_ns());
  const RunSummary s = Summarize(records);
  for (const auto& [actual, planned] : {std::pair(&s.ttft_s, &s.ttft_from_planned_s),
                                        std::pair(&s.e2el_s, &s.e2el_from_planned_s)}) {
    EXPECT_EQ(planned->count, actual->count);
    EXPECT_EQ(planned->mean, actual->mean);
    EXPECT_EQ(planned->min, actual->min);
    EXPECT_EQ(planned->p50, actual->p50);
    EXPECT_EQ(planned->p99, actual->p99);
    EXPECT_EQ(planned->max, actual->max);
  }
}

TEST(LatencyFromPlannedTest, JsonCsvAndConsoleCarryTheNewRows) {
  const RunSummary s = Summarize(LateRecords());
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_EQ(j["ttft_from_planned_s"]["count"], 4);
  EXPECT_NEAR(j["ttft_from_planned_s"]["p50"].get<double>(), 0.065, 1e-12);
  EXPECT_EQ(j["e2el_from_planned_s"]["max"].get<double>(), 0.6);
  EXPECT_EQ(j["metrics"]["TTFTFromPlannedSend"]["unit"], "ms");
  EXPECT_EQ(j["metrics"]["TTFTFromPlannedSend"]["N"], 4);
  EXPECT_NEAR(j["metrics"]["TTFTFromPlannedSend"]["P99"].get<double>(), 206.1, 1e-9);
  EXPECT_NEAR(j["metrics"]["E2ELFromPlannedSend"]["Median"].get<double>(), 275, 1e-9);
  const std::string csv = SummaryToCsv(s);
  EXPECT_THAT(csv, HasSubstr("\nTTFTFromPlannedSend (ms),90.0000,20.0000,210.0000,65.0000,"
                             "112.5000,171.0000,206.1000,4\n"));
  EXPECT_THAT(csv, HasSubstr("\nE2ELFromPlannedSend (ms),315.0000,110.0000,600.0000,275.0000,"
                             "412.5000,525.0000,592.5000,4\n"));
  const std::string table = FormatSummaryTable(s);
  EXPECT_THAT(table, HasSubstr("\n  TTFT mean/p50/p99 (ms)               25.000 / 25.000 / "));
  EXPECT_THAT(table,
              HasSubstr("\n  TTFT from planned send mean/p50/p99  90.000 / 65.000 / 206.100\n"));
  EXPECT_THAT(table,
              HasSubstr("\n  E2EL from planned send mean/p50/p99  315.000 / 275.000 / 592.500\n"));
  // No OK request: n/a, null, empty cells, N = 0.
  const RunSummary none = Summarize({LateRecords()[5]});
  EXPECT_TRUE(SummaryToJson(none, {})["ttft_from_planned_s"]["p50"].is_null());
  EXPECT_THAT(SummaryToCsv(none), HasSubstr("\nE2ELFromPlannedSend (ms),,,,,,,,0\n"));
  EXPECT_THAT(FormatSummaryTable(none),
              HasSubstr("  TTFT from planned send mean/p50/p99  n/a / n/a / n/a\n"));
}

// The details file: the per-request from-planned values, null for a request
// that was never sent.
TEST(LatencyFromPlannedTest, DetailsLineCarriesFromPlannedSeconds) {
  const std::vector<surge::v1::RequestRecord> records = LateRecords();
  const fs::path path = FreshDir("details_from_planned") / "d.jsonl";
  {
    auto w = DetailsWriter::Create(path);
    ASSERT_TRUE(w.ok());
    (*w)->Append(records[3]);
    (*w)->Append(records[4]);
    ASSERT_TRUE((*w)->Flush().ok());
  }
  std::ifstream in(path);
  std::string late, unsent;
  std::getline(in, late);
  std::getline(in, unsent);
  const nlohmann::json a = nlohmann::json::parse(late);
  EXPECT_EQ(a["ttft_from_planned_s"].get<double>(), 0.21);
  EXPECT_EQ(a["e2el_from_planned_s"].get<double>(), 0.6);
  EXPECT_EQ(a["ttft_s"].get<double>(), 0.01);
  EXPECT_EQ(a["lateness_s"].get<double>(), 0.2);
  const nlohmann::json b = nlohmann::json::parse(unsent);
  EXPECT_TRUE(b["ttft_from_planned_s"].is_null());
  EXPECT_TRUE(b["e2el_from_planned_s"].is_null());
  // Derived fields: reading the line back gives the same record.
  auto back = ParseDetailsLine(late);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->ttft_ns(), 10000000);
  EXPECT_EQ(FromPlannedNs(*back, back->ttft_ns()), 210000000);
}

TEST(ProgressTest, LineShowsCountsRateAndEta) {
  DispatchProgress p;
  p.elapsed_s = 10;
  p.planned = 1000;
  p.records = 480;
  p.sent = 490;
  p.ok = 478;
  p.inflight = 10;
  p.last_planned_s = 20;
  EXPECT_EQ(FormatProgress(p),
            "[   10.0 s] done 480/1000  ok 478  failed 2  in flight 10  sent 50.0 RPS  ETA 10 s");
  p.elapsed_s = 21;
  EXPECT_THAT(FormatProgress(p), ::testing::EndsWith("draining"));
  // Issue 8 item 3: after a stop, not-sent requests are not shown as failed.
  {
    DispatchProgress stopped = p;
    stopped.elapsed_s = 5;
    stopped.records = 300;
    stopped.ok = 3;
    stopped.not_sent = 272;
    stopped.stopping = true;
    EXPECT_EQ(FormatProgress(stopped),
              "[    5.0 s] done 300/1000  ok 3  failed 25  not sent 272  in flight 10  sent 100.0 "
              "RPS  stopping");
  }
  // Issue 9 item 1: each worker's lateness over its last window.
  {
    DispatchProgress live = p;
    live.elapsed_s = 10;
    live.lateness = {{0, true, 500, 20000, 52000, 0}, {1, true, 480, 1500000, 23400000, 0}};
    EXPECT_EQ(FormatProgress(live),
              "[   10.0 s] done 480/1000  ok 478  failed 2  in flight 10  sent 50.0 RPS  late "
              "p50/p99 ms w0 0.02/0.05 w1 1.50/23  ETA 10 s");
    live.behind = true;
    EXPECT_THAT(FormatProgress(live), HasSubstr("w1 1.50/23  BEHIND  ETA 10 s"));
    // A stuck worker: nothing sent, its earliest queued request 40 ms overdue.
    live.lateness[1] = {1, true, 0, 0, 0, 40000000};
    EXPECT_THAT(FormatProgress(live), HasSubstr("w1 -/40"));
    // Many workers: the worst only.
    live.lateness.clear();
    for (int32_t k = 0; k < 6; ++k) {
      live.lateness.push_back({k, true, 100, 10000 * (k + 1), 30000 * (k == 4 ? 100 : 1), 0});
    }
    live.behind = false;
    EXPECT_THAT(FormatProgress(live), HasSubstr("late p50/p99 ms worst w4 0.05/3.00 (of 6)  ETA"));
    // Before any report: nothing.
    live.lateness = {{0, false, 0, 0, 0, 0}};
    EXPECT_EQ(FormatLateness(live.lateness, false), "");
  }
  // Issue 10 item 6: the reporter is a record sink; it counts the records
  // itself and shows them with the dispatcher's live part.
  {
    char* sink_text = nullptr;
    size_t sink_size = 0;
    std::FILE* sink_out = open_memstream(&sink_text, &sink_size);
    ProgressReporter sink(sink_out, /*terminal=*/false);
    surge::v1::RequestRecord r;
    r.set_status(surge::v1::OK);
    r.set_sent(true);
    sink.Add(r);
    r.set_status(surge::v1::FAILED);
    sink.Add(r);
    r.set_status(surge::v1::NOT_SENT);
    r.set_sent(false);
    sink.Add(r);
    DispatchProgress live;  // the dispatcher's snapshot: no record counts
    live.elapsed_s = 1;
    live.planned = 10;
    live.inflight = 2;
    live.last_planned_s = 5;
    sink.Update(live);
    std::fclose(sink_out);
    EXPECT_EQ(std::string(sink_text, sink_size),
              "[surge] progress [    1.0 s] done 3/10  ok 1  failed 1  not sent 1  in flight 2  "
              "sent 4.0 RPS  ETA 4 s\n");
    std::free(sink_text);
  }
  p.elapsed_s = 21;
  // Not a terminal: one line per period, not per update.
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  ProgressReporter reporter(out, /*terminal=*/false, /*plain_period_s=*/5);
  for (double t = 0; t < 12; t += 0.25) {
    p.elapsed_s = t;
    reporter.Update(p);
  }
  std::fclose(out);
  EXPECT_EQ(std::count(text, text + size, '\n'), 3);  // at 0, 5 and 10 s
  std::free(text);
}

TEST(PayloadSourceTest, MooncakeLinesBecomePayloadsAndCycle) {
  const fs::path path = FreshDir("mooncake") / "tiny_trace.jsonl";
  std::ofstream(path) << R"({"timestamp": 0, "input_length": 100, "output_length": 7, "hash_ids": [0]}
{"timestamp": 3000, "input_length": 2500, "output_length": 0, "hash_ids": [0, 1]}
)";
  surge::v1::DatasetConfig d;
  d.set_dataset_name("mooncake");
  d.set_dataset_path(path.string());
  auto source = MakePayloadSource(d, 3, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->name(), "tiny_trace");
  EXPECT_EQ((*source)->At(0).input_tokens, 100u);
  EXPECT_EQ((*source)->At(0).max_tokens, 7u);
  EXPECT_EQ((*source)->At(1).max_tokens, 1u);  // 0 asks for one token
  EXPECT_EQ((*source)->At(2).input_tokens, 100u);
  ASSERT_EQ((*source)->warnings().size(), 1u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("reused from the top"));
}

TEST(PayloadSourceTest, BadLineNamesFileAndLine) {
  const fs::path path = FreshDir("mooncake_bad") / "bad.jsonl";
  std::ofstream(path) << "{\"input_length\": 5, \"output_length\": 2}\n{\"input_length\": -1}\n";
  surge::v1::DatasetConfig d;
  d.set_dataset_name("mooncake");
  d.set_dataset_path(path.string());
  auto source = MakePayloadSource(d, 5, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(std::string(source.status().message()), HasSubstr("line 2"));
  EXPECT_THAT(std::string(source.status().message()), HasSubstr("input_length"));
}

// Issue 11: the record's new fields (first content, why the stream ended,
// what was asked, the keep-alive retry) survive details.jsonl.
TEST(DetailsTest, NewRecordFieldsRoundTrip) {
  surge::v1::RequestRecord r = OkRecord(5, 1.0, 0.2, 0.7, 3, {0.1, 0.3, 0.1});
  r.set_ttfc_ns(600000000);
  r.set_finish_reason("stop");
  r.set_max_tokens(8);
  r.set_short_output(true);
  r.set_http_retries(1);
  r.set_retry_reason("keepalive_closed: end of stream");
  r.set_retry_sent_ns(1000600000);
  const fs::path path = FreshDir("details_issue11") / "d.jsonl";
  {
    auto w = DetailsWriter::Create(path);
    ASSERT_TRUE(w.ok());
    (*w)->Append(r);
    surge::v1::RequestRecord plain = OkRecord(6, 2.0, 0.1, 0.2, 1);
    (*w)->Append(plain);
    ASSERT_TRUE((*w)->Flush().ok());
  }
  std::ifstream in(path);
  std::string line, line2;
  std::getline(in, line);
  std::getline(in, line2);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_DOUBLE_EQ(j["ttfc_s"].get<double>(), 0.6);
  EXPECT_EQ(j["finish_reason"], "stop");
  EXPECT_EQ(j["max_tokens"], 8);
  EXPECT_EQ(j["short_output"], true);
  EXPECT_EQ(j["http_retries"], 1);
  EXPECT_EQ(j["retry_reason"], "keepalive_closed: end of stream");
  EXPECT_DOUBLE_EQ(j["retry_offset_s"].get<double>(), 1.0006);
  auto back = ParseDetailsLine(line);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->ttfc_ns(), 600000000);
  EXPECT_EQ(back->finish_reason(), "stop");
  EXPECT_EQ(back->max_tokens(), 8u);
  EXPECT_TRUE(back->short_output());
  EXPECT_EQ(back->http_retries(), 1u);
  EXPECT_EQ(back->retry_reason(), "keepalive_closed: end of stream");
  EXPECT_EQ(back->retry_sent_ns(), 1000600000);
  // Nothing to say: null times and finish_reason, zero counts.
  const nlohmann::json j2 = nlohmann::json::parse(line2);
  EXPECT_TRUE(j2["ttfc_s"].is_null());
  EXPECT_TRUE(j2["finish_reason"].is_null());
  EXPECT_TRUE(j2["retry_offset_s"].is_null());
  EXPECT_EQ(j2["http_retries"], 0);
  auto back2 = ParseDetailsLine(line2);
  ASSERT_TRUE(back2.ok());
  EXPECT_EQ(back2->finish_reason(), "");
  EXPECT_EQ(back2->retry_sent_ns(), 0);
}

// Issue 11 items 2-4: short outputs, finish reasons, TTFC and retried
// requests are counted in the summary JSON, the CSV and the console.
TEST(SummaryTest, CountsShortOutputsFinishReasonsTtfcAndRetries) {
  std::vector<surge::v1::RequestRecord> records = {
      OkRecord(0, 0.0, 0.2, 0.7, 4), OkRecord(1, 0.1, 0.1, 0.5, 8), OkRecord(2, 0.2, 0.1, 0.5, 8)};
  records[0].set_ttfc_ns(600000000);  // reasoning first
  records[0].set_finish_reason("stop");
  records[0].set_short_output(true);
  records[1].set_ttfc_ns(100000000);
  records[1].set_finish_reason("length");
  records[1].set_http_retries(1);
  records[1].set_retry_reason("keepalive_closed: end of stream");
  records[2].set_ttfc_ns(0);  // reasoning only: no first content
  records[2].set_finish_reason("length");
  surge::v1::RequestRecord failed;
  failed.set_index(3);
  failed.set_status(surge::v1::FAILED);
  failed.set_error("timeout");
  failed.set_http_retries(1);
  failed.set_retry_reason("keepalive_closed_on_write: broken pipe");
  records.push_back(failed);
  const RunSummary s = Summarize(records);
  EXPECT_EQ(s.short_outputs, 1u);
  EXPECT_EQ(s.retried_requests, 2u);
  EXPECT_EQ(s.retry_reasons.at("keepalive_closed"), 1u);
  EXPECT_EQ(s.retry_reasons.at("keepalive_closed_on_write"), 1u);
  EXPECT_EQ(s.finish_reasons.at("length"), 2u);
  EXPECT_EQ(s.finish_reasons.at("stop"), 1u);
  ASSERT_EQ(s.ttfc_s.count, 2u);
  EXPECT_NEAR(s.ttfc_s.max, 0.6, 1e-9);
  EXPECT_NEAR(s.ttft_s.max, 0.2, 1e-9);

  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_EQ(j["short_outputs"]["requests"], 1);
  EXPECT_EQ(j["short_outputs"]["of_succeeded"], 3);
  EXPECT_EQ(j["http_retries"]["retried_requests"], 2);
  EXPECT_EQ(j["finish_reasons"]["length"], 2);
  EXPECT_EQ(j["common"]["Short Outputs (ignore_eos)"], 1);
  EXPECT_EQ(j["common"]["Retried Requests"], 2);
  EXPECT_NEAR(j["metrics"]["TTFC"]["Max"].get<double>(), 600, 1e-6);
  const std::string csv = SummaryToCsv(s);
  EXPECT_THAT(csv, HasSubstr("\nShort Outputs (ignore_eos),1\n"));
  EXPECT_THAT(csv, HasSubstr("\nRetried Requests,2\n"));
  EXPECT_THAT(csv, HasSubstr("\nTTFC (ms),350.0000,100.0000,600.0000,"));
  const std::string table = FormatSummaryTable(s);
  EXPECT_THAT(table, HasSubstr("  Short outputs: 1 of 3 requests stopped before max_tokens "
                               "although ignore_eos was asked\n"));
  EXPECT_THAT(table, HasSubstr("  Retried requests: 2 sent again on a fresh connection"));
  EXPECT_THAT(table, HasSubstr("TTFC (first content)"));
  // Nothing to report: no console lines, zero counts in the files.
  std::vector<surge::v1::RequestRecord> plain = {OkRecord(0, 0.0, 0.2, 0.7, 4)};
  plain[0].set_ttfc_ns(200000000);
  const RunSummary p = Summarize(plain);
  const std::string plain_table = FormatSummaryTable(p);
  EXPECT_THAT(plain_table, ::testing::Not(HasSubstr("Short outputs")));
  EXPECT_THAT(plain_table, ::testing::Not(HasSubstr("Retried requests")));
  EXPECT_THAT(plain_table, ::testing::Not(HasSubstr("TTFC")));
  EXPECT_THAT(SummaryToCsv(p), HasSubstr("\nRetried Requests,0\n"));
}

// Issue 10 item 4: the late-send policy's counts. Skipped records are their
// own status (not failed, not in "Failed Requests", not sent); late and
// delayed come from the records' flags; all three in the JSON, the CSV and
// the console; the details line carries late, catch_up_delay_s and status
// "skipped" and reads back.
TEST(SummaryTest, CountsLateSkippedAndDelayedRequests) {
  std::vector<surge::v1::RequestRecord> records = {
      OkRecord(0, 0.0, 0.1, 0.2, 2), OkRecord(1, 0.1, 0.1, 0.2, 2), OkRecord(2, 0.2, 0.1, 0.2, 2),
      OkRecord(3, 0.3, 0.1, 0.2, 2)};
  records[1].set_late(true);
  records[2].set_late(true);
  records[2].set_catch_up_delay_ns(5000000);
  surge::v1::RequestRecord skipped;
  skipped.set_index(4);
  skipped.set_planned_ns(400000000);
  skipped.set_status(surge::v1::SKIPPED);
  skipped.set_error(
      "skipped_late: reached 45.000 ms after its planned send, more than late_threshold_ms 20 "
      "(late_policy skip)");
  records.push_back(skipped);
  const RunSummary s = Summarize(records);
  EXPECT_EQ(s.total, 5u);
  EXPECT_EQ(s.succeeded, 4u);
  EXPECT_EQ(s.skipped, 1u);
  EXPECT_EQ(s.not_sent, 0u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.sent, 4u);
  EXPECT_EQ(s.late, 2u);
  EXPECT_EQ(s.delayed, 1u);
  EXPECT_EQ(s.reasons.at("skipped_late"), 1u);
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_EQ(j["requests"]["skipped"], 1);
  EXPECT_EQ(j["late_sends"]["late"], 2);
  EXPECT_EQ(j["late_sends"]["skipped"], 1);
  EXPECT_EQ(j["late_sends"]["delayed"], 1);
  EXPECT_EQ(j["common"]["Failed Requests"], 0);
  EXPECT_EQ(j["common"]["Skipped Requests (late)"], 1);
  const std::string csv = SummaryToCsv(s);
  EXPECT_THAT(csv, HasSubstr("\nLate Requests,2\n"));
  EXPECT_THAT(csv, HasSubstr("\nSkipped Requests (late),1\n"));
  EXPECT_THAT(csv, HasSubstr("\nDelayed Requests (catch-up),1\n"));
  const std::string table = FormatSummaryTable(s);
  EXPECT_THAT(table, HasSubstr("    skipped (late)                     1\n"));
  EXPECT_THAT(table, HasSubstr("  Late / skipped / delayed             2 / 1 / 1\n"));

  const fs::path path = FreshDir("details_late") / "d.jsonl";
  {
    auto w = DetailsWriter::Create(path);
    ASSERT_TRUE(w.ok());
    (*w)->Append(records[2]);
    (*w)->Append(skipped);
    ASSERT_TRUE((*w)->Flush().ok());
  }
  std::ifstream in(path);
  std::string line, line2;
  std::getline(in, line);
  std::getline(in, line2);
  const nlohmann::json d = nlohmann::json::parse(line);
  EXPECT_EQ(d["late"], true);
  EXPECT_EQ(d["catch_up_delay_s"].get<double>(), 0.005);
  const nlohmann::json d2 = nlohmann::json::parse(line2);
  EXPECT_EQ(d2["status"], "skipped");
  EXPECT_EQ(d2["late"], false);
  EXPECT_TRUE(d2["actual_offset_s"].is_null());
  EXPECT_TRUE(d2["released_offset_s"].is_null());
  auto back = ParseDetailsLine(line);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->late());
  EXPECT_EQ(back->catch_up_delay_ns(), 5000000);
  auto back2 = ParseDetailsLine(line2);
  ASSERT_TRUE(back2.ok());
  EXPECT_EQ(back2->status(), surge::v1::SKIPPED);
  EXPECT_EQ(back2->error(), skipped.error());
  EXPECT_EQ(StatusName(surge::v1::SKIPPED), "skipped");
}

}  // namespace
}  // namespace surge::coordinator
