// TTFT and E2EL counted from the planned send (the coordinated-omission view)
// in the summary and the details file.
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
#include <string>
#include <utility>
#include <vector>

#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::FreshDir;
using ::testing::HasSubstr;

// The coordinated-omission view: TTFT and E2EL counted from
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

}  // namespace
}  // namespace surge::coordinator
