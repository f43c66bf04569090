// Planned and measured prefix reuse in the summary: the measured share over
// the records that reported cached tokens, "not reported" otherwise, the
// warning past 10 points, and the details line carrying cached_tokens.
#include "coordinator/results/prefix_reuse_summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/results/details_json.h"
#include "coordinator/results/run_files.h"
#include "tests/coordinator/results/ok_record.h"

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// n OK records of 100 input tokens, `cached` each, reported or not.
RunSummary SummaryOf(int n, uint32_t cached, bool reported) {
  std::vector<surge::v1::RequestRecord> records;
  for (int i = 0; i < n; ++i) {
    surge::v1::RequestRecord r = OkRecord(i, 0.1 * i, 0.01, 0.02, 4);
    if (reported) {
      r.set_cached_tokens(cached);
      r.set_cached_tokens_reported(true);
    }
    records.push_back(r);
  }
  return Summarize(records);
}

surge::v1::RunFacts PlannedFacts(uint64_t shared, uint64_t prompt) {
  surge::v1::RunFacts f;
  *f.mutable_prefix_reuse() = PrefixReuseFactOf(16, shared, prompt);
  return f;
}

TEST(PrefixReuseSummaryTest, NothingWhenOff) {
  const RunSummary s = SummaryOf(3, 0, false);
  const surge::v1::RunFacts f;
  EXPECT_FALSE(HasPrefixReuse(s, f));
  nlohmann::json j = nlohmann::json::object();
  AddPrefixReuseJson(s, f, &j);
  EXPECT_FALSE(j.contains("prefix_reuse"));
  EXPECT_EQ(PrefixReuseCsvRows(s, f), "");
  EXPECT_EQ(PrefixReuseLines(s, f), "");
}

TEST(PrefixReuseSummaryTest, MeasuredCloseToPlannedHasNoWarning) {
  const RunSummary s = SummaryOf(4, 70, true);  // 280 of 400 = 70 %
  ASSERT_TRUE(MeasuredReuse(s).has_value());
  EXPECT_DOUBLE_EQ(*MeasuredReuse(s), 0.7);
  const surge::v1::RunFacts f = PlannedFacts(75, 100);  // 75 %: 5 points
  EXPECT_EQ(ReuseShortfallWarning(s, f), "");
  EXPECT_EQ(PrefixReuseLines(s, f),
            "prefix reuse: planned 75.0% (blocks of 16 tokens), measured 70.0% (cached_tokens "
            "280 of 400 input tokens, 4 of 4 requests reported it)\n");
  EXPECT_EQ(PrefixReuseCsvRows(s, f),
            "Planned Prefix Reuse (%),75.0000\nMeasured Prefix Reuse (%),70.0000\n"
            "Cached Prompt Tokens,280\n");
  nlohmann::json j = nlohmann::json::object();
  AddPrefixReuseJson(s, f, &j);
  EXPECT_DOUBLE_EQ(j["prefix_reuse"]["planned_reuse"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["prefix_reuse"]["measured_reuse"].get<double>(), 0.7);
  EXPECT_EQ(j["prefix_reuse"]["measured"], "reported");
  EXPECT_FALSE(j["prefix_reuse"].contains("warning"));
}

TEST(PrefixReuseSummaryTest, AShortfallOfMoreThanTenPointsWarns) {
  const RunSummary s = SummaryOf(2, 30, true);  // 30 %
  const surge::v1::RunFacts f = PlannedFacts(75, 100);
  const std::string w = ReuseShortfallWarning(s, f);
  EXPECT_EQ(w,
            "measured prefix reuse 30.0% is 45.0 points below the planned 75.0%: the server's "
            "cache held less than the plan reuses: cache too small, eviction, or routing across "
            "replicas");
  EXPECT_THAT(PrefixReuseLines(s, f), HasSubstr("\nWARNING: " + w + "\n"));
  nlohmann::json j = nlohmann::json::object();
  AddPrefixReuseJson(s, f, &j);
  EXPECT_EQ(j["prefix_reuse"]["warning"], w);
  // Exactly 10 points is not "more than 10".
  EXPECT_EQ(ReuseShortfallWarning(SummaryOf(2, 65, true), f), "");
}

TEST(PrefixReuseSummaryTest, NotReportedSaysSo) {
  const RunSummary s = SummaryOf(2, 0, false);
  const surge::v1::RunFacts f = PlannedFacts(50, 100);
  EXPECT_FALSE(MeasuredReuse(s).has_value());
  EXPECT_EQ(ReuseShortfallWarning(s, f), "");
  EXPECT_THAT(PrefixReuseLines(s, f), HasSubstr("measured not reported"));
  EXPECT_THAT(PrefixReuseCsvRows(s, f), HasSubstr("Measured Prefix Reuse (%),not reported\n"));
  nlohmann::json j = nlohmann::json::object();
  AddPrefixReuseJson(s, f, &j);
  EXPECT_TRUE(j["prefix_reuse"]["measured_reuse"].is_null());
  EXPECT_EQ(j["prefix_reuse"]["measured"], "not reported");
}

TEST(PrefixReuseSummaryTest, DetailsLinesCarryCachedTokensBothWays) {
  surge::v1::RequestRecord r = OkRecord(3, 1.0, 0.01, 0.02, 4);
  std::string plain;
  AppendDetailsLine(r, &plain);
  EXPECT_THAT(plain, Not(HasSubstr("cached_tokens")));
  auto plain_back = ParseDetailsLine(plain);
  ASSERT_TRUE(plain_back.ok());
  EXPECT_FALSE(plain_back->cached_tokens_reported());
  r.set_cached_tokens(64);
  r.set_cached_tokens_reported(true);
  std::string line;
  AppendDetailsLine(r, &line);
  EXPECT_THAT(line, HasSubstr("\"blocked_s\":0.0,\"cached_tokens\":64,\"catch_up_delay_s\""));
  auto back = ParseDetailsLine(line);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->cached_tokens_reported());
  EXPECT_EQ(back->cached_tokens(), 64u);
}

}  // namespace
}  // namespace surge::coordinator
