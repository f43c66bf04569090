// The run summary (R-MET-1, R-MET-2): counts, rates, percentiles, goodput and
// their JSON, CSV and console forms.
#include "coordinator/results/summary.h"

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

#include "common/failure_kind.h"
#include "coordinator/results/run_files.h"
#include "tests/coordinator/results/ok_record.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::FreshDir;
using ::testing::HasSubstr;

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

// Interrupted requests were sent: they count in the sent
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

// At 20,000 RPS only part of the plan reached the socket and
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

// Fewer than two sends have no rate: "n/a" on the
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

// The intended rate is the plan's also when the run
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
  EXPECT_THAT(
      csv, ::testing::StartsWith("Performance Parameters,Average,Min,Max,Median,P75,P90,P99,N\n"));
  EXPECT_THAT(csv, HasSubstr("TPOT (ms),100.0000,100.0000,100.0000,100.0000,100.0000,100.0000,"
                             "100.0000,2\n"));
  EXPECT_THAT(csv, HasSubstr("Max Concurrency,2\n"));
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_NEAR(j["metrics"]["TTFT"]["Median"].get<double>(), 300, 1e-6);
  EXPECT_EQ(j["common"]["Success Requests"], 3);
}

// The streaming summary. With no limit it
// is Summarize bit for bit; with a small exact limit the counts, rates,
// min/max/mean and concurrency are still exact, the percentiles of the
// metrics past the limit are within the histogram's bound, and the JSON says
// which metrics are estimates.
TEST(SummaryTest, StreamingAccumulatorEqualsTheExactSummaryWithinItsBound) {
  std::vector<surge::v1::RequestRecord> records;
  for (uint64_t i = 0; i < 400; ++i) {
    std::vector<double> itl;
    for (int k = 0; k < 9; ++k)
      itl.push_back(0.002 + 0.0001 * static_cast<double>((i * 7 + k) % 13));
    records.push_back(OkRecord(i, 0.01 * static_cast<double>(i),
                               0.04 + 0.001 * static_cast<double>(i % 17),
                               0.3 + 0.001 * static_cast<double>(i % 29), 10, itl));
    records.back().set_sent_ns(records.back().planned_ns() + 20'000 +
                               static_cast<int64_t>(i % 5) * 1'000);
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
  for (auto [est, ex] : {std::pair{b.itl_s.p50, exact.itl_s.p50},
                         {b.itl_s.p90, exact.itl_s.p90},
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

// The edge rules docs/DESIGN.md "Metric edge rules" states.
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

// How many output token counts are estimates is said in
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

// Short outputs, finish reasons, TTFC and retried
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

// The late-send policy's counts. Skipped records are their
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

// --metric-percentiles 99.9,99.99 over 1,000,000 OK records with E2E
// latencies 1, 2, ..., 1,000,000 µs: numpy's linear rule puts p99.9 at rank
// position 0.999 × 999,999 = 998,999.001, i.e. 999,000.001 µs, and p99.99 at
// 999,899.0001, i.e. 999,900.0001 µs. A million values is within the
// accumulator's exact limit, so `surge run` computes these exactly too.
TEST(SummaryTest, MetricPercentilesOverAMillionRecordsAreExact) {
  auto percentiles = ParseMetricPercentiles("99.9,99.99");
  ASSERT_TRUE(percentiles.ok()) << percentiles.status();
  SummaryAccumulator summary;  // the default exact limit, as `surge run`
  summary.SetPercentiles(*percentiles);
  surge::v1::RequestRecord r = OkRecord(0, 0, 0, 0, 1);
  for (int64_t i = 1; i <= 1'000'000; ++i) {
    r.set_index(static_cast<uint64_t>(i - 1));
    r.set_e2el_ns(i * 1000);
    summary.Add(r);
  }
  const RunSummary s = summary.Finish();
  ASSERT_TRUE(s.e2el_s.exact);
  ASSERT_EQ(s.e2el_s.at.size(), 2u);
  EXPECT_EQ(s.e2el_s.at[0].first, 99.9);
  EXPECT_NEAR(s.e2el_s.at[0].second * 1e6, 999'000.001, 1e-6);
  EXPECT_EQ(s.e2el_s.at[1].first, 99.99);
  EXPECT_NEAR(s.e2el_s.at[1].second * 1e6, 999'900.0001, 1e-6);
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  EXPECT_NEAR(j["e2el_s"]["p99.9"].get<double>() * 1e6, 999'000.001, 1e-6);
  EXPECT_NEAR(j["e2el_s"]["p99.99"].get<double>() * 1e6, 999'900.0001, 1e-6);
  EXPECT_NEAR(j["metrics"]["E2EL"]["P99.9"].get<double>() * 1e3, 999'000.001, 1e-6);
  EXPECT_NEAR(j["metrics"]["E2EL"]["P99.99"].get<double>() * 1e3, 999'900.0001, 1e-6);
  // The old keys stay.
  EXPECT_NEAR(j["e2el_s"]["p99"].get<double>() * 1e6, 990'000.01, 1e-6);
  EXPECT_EQ(j["metric_percentiles"], nlohmann::json::parse("[99.9, 99.99]"));
  EXPECT_THAT(SummaryToCsv(s),
              HasSubstr("Performance Parameters,Average,Min,Max,P99.9,P99.99,N\n"));
  EXPECT_THAT(SummaryToCsv(s), HasSubstr("E2EL (ms),500.0005,0.0010,1000.0000,999.0000,999.9000,"
                                         "1000000\n"));
  EXPECT_THAT(FormatSummaryTable(s), HasSubstr("E2EL mean/p99.9/p99.99 (ms)"));
}

TEST(SummaryTest, MetricPercentilesParseAndName) {
  auto given = ParseMetricPercentiles(" 99.9, 50,90 ,99,50");
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_TRUE(given->given);
  EXPECT_EQ(given->values, (std::vector<double>{50, 90, 99, 99.9}));
  auto fallback = ParseMetricPercentiles("");
  ASSERT_TRUE(fallback.ok());
  EXPECT_FALSE(fallback->given);
  EXPECT_EQ(fallback->values, (std::vector<double>{50, 75, 90, 99, 99.9}));
  for (const char* bad : {"0", "100", "50,,90", "abc", "nan", "-1", "99.9,101", "inf"}) {
    auto parsed = ParseMetricPercentiles(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("a number in (0, 100)")) << bad;
  }
  EXPECT_EQ(PercentileName(50), "50");
  EXPECT_EQ(PercentileName(99.9), "99.9");
  EXPECT_EQ(PercentileName(99.99), "99.99");
  EXPECT_EQ(PercentileName(0.1), "0.1");
}

// Without --metric-percentiles the console and the CSV show what they
// always did; the JSON adds p99.9 beside its old keys.
TEST(SummaryTest, DefaultPercentilesKeepTheOldOutputsAndAddP999ToTheJson) {
  std::vector<surge::v1::RequestRecord> records;
  for (int i = 0; i < 10; ++i) records.push_back(OkRecord(i, i, 0.1, 0.001 * (i + 1), 5));
  const RunSummary s = Summarize(records);
  const nlohmann::json j = SummaryToJson(s, nlohmann::json::object());
  // 1..10 ms: p99.9 at position 8.991 → 9.991 ms.
  EXPECT_NEAR(j["e2el_s"]["p99.9"].get<double>(), 0.009991, 1e-12);
  EXPECT_NEAR(j["metrics"]["E2EL"]["P99.9"].get<double>(), 9.991, 1e-9);
  EXPECT_NEAR(j["metrics"]["E2EL"]["Median"].get<double>(), 5.5, 1e-9);
  EXPECT_FALSE(j["metrics"]["E2EL"].contains("P50"));
  for (const char* key : {"p50", "p75", "p90", "p99", "mean", "min", "max", "count", "exact"}) {
    EXPECT_TRUE(j["e2el_s"].contains(key)) << key;
  }
  EXPECT_THAT(SummaryToCsv(s),
              HasSubstr("Performance Parameters,Average,Min,Max,Median,P75,P90,P99,N\n"));
  EXPECT_THAT(FormatSummaryTable(s), HasSubstr("E2EL mean/p50/p99 (ms)"));
  EXPECT_THAT(FormatSummaryTable(s), HasSubstr("Send lateness p50/p99/max (ms)"));
}

TEST(SummaryTest, GivenPercentilesAreWhatTheConsoleAndCsvShow) {
  std::vector<surge::v1::RequestRecord> records;
  for (int i = 0; i < 10; ++i) records.push_back(OkRecord(i, i, 0.1, 0.001 * (i + 1), 5));
  SummaryAccumulator summary(nullptr, StreamingStats::kUnlimited);
  summary.SetPercentiles(*ParseMetricPercentiles("50,90,99,99.9"));
  for (const auto& r : records) summary.Add(r);
  const RunSummary s = summary.Finish();
  const std::string csv = SummaryToCsv(s);
  EXPECT_THAT(csv, HasSubstr("Performance Parameters,Average,Min,Max,Median,P90,P99,P99.9,N\n"));
  EXPECT_THAT(csv, HasSubstr("E2EL (ms),5.5000,1.0000,10.0000,5.5000,9.1000,9.9100,9.9910,10\n"));
  const std::string table = FormatSummaryTable(s);
  EXPECT_THAT(table, HasSubstr("E2EL mean/p50/p90/p99/p99.9 (ms)"));
  EXPECT_THAT(table, HasSubstr("Send lateness p50/p90/p99/p99.9/max (ms)"));
}

}  // namespace
}  // namespace surge::coordinator
