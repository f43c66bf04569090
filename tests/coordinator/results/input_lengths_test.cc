// Asked against server-reported prompt lengths: which records count, when
// the summary shows the comparison and when it warns.
#include "coordinator/results/input_lengths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

surge::v1::RequestRecord Record(surge::v1::TokenCounter counter, uint32_t asked,
                                uint32_t reported) {
  surge::v1::RequestRecord r;
  r.set_status(surge::v1::OK);
  r.set_token_counter(counter);
  r.set_asked_input_tokens(asked);
  r.set_input_tokens(reported);
  return r;
}

TEST(InputLengthsTest, TheEstimateIsComparedAndShownWithoutAWarning) {
  InputLengthSummary s;
  AddInputLength(Record(surge::v1::TOKEN_COUNTER_ESTIMATE, 300, 220), &s);
  AddInputLength(Record(surge::v1::TOKEN_COUNTER_ESTIMATE, 100, 100), &s);
  EXPECT_TRUE(s.shown());
  EXPECT_EQ(s.fitted, 0u);
  EXPECT_EQ(s.compared, 2u);
  EXPECT_EQ(s.mismatches, 1u);
  EXPECT_EQ(s.max_abs_diff, 80u);
  EXPECT_DOUBLE_EQ(s.mean_asked(), 200.0);
  EXPECT_DOUBLE_EQ(s.mean_reported(), 160.0);
  EXPECT_TRUE(s.off_by_more_than_1_percent());
  const std::string lines = InputLengthLines(s);
  EXPECT_THAT(lines, HasSubstr("200.00 / 160.00 mean over 2 requests (--tokenizer estimate)"));
  EXPECT_THAT(lines, HasSubstr("mean 40.00, max 80, 1 mismatching requests"));
  EXPECT_THAT(lines, Not(HasSubstr("WARNING")));
  EXPECT_EQ(InputLengthsToJson(s)["counter"], "estimate");
}

TEST(InputLengthsTest, AFittedRunMoreThanOnePercentOffWarns) {
  InputLengthSummary s;
  AddInputLength(Record(surge::v1::TOKEN_COUNTER_SERVER, 100, 102), &s);
  EXPECT_TRUE(s.shown());
  EXPECT_EQ(s.fitted, 1u);
  EXPECT_THAT(InputLengthLines(s), HasSubstr("WARNING: the server counted prompts 2.0 % off"));
  InputLengthSummary exact;
  AddInputLength(Record(surge::v1::TOKEN_COUNTER_SENTENCEPIECE, 100, 100), &exact);
  EXPECT_EQ(exact.mismatches, 0u);
  EXPECT_THAT(InputLengthLines(exact), Not(HasSubstr("WARNING")));
}

TEST(InputLengthsTest, DatasetTextFailuresAndEstimatedCountsAreNotCompared) {
  InputLengthSummary s;
  AddInputLength(Record(surge::v1::TOKEN_COUNTER_DATASET, 100, 90), &s);
  AddInputLength(Record(surge::v1::TOKEN_COUNTER_UNSPECIFIED, 100, 90), &s);
  EXPECT_FALSE(s.shown());
  surge::v1::RequestRecord failed = Record(surge::v1::TOKEN_COUNTER_ESTIMATE, 100, 0);
  failed.set_status(surge::v1::FAILED);
  AddInputLength(failed, &s);
  surge::v1::RequestRecord estimated = Record(surge::v1::TOKEN_COUNTER_ESTIMATE, 100, 100);
  estimated.set_input_tokens_estimated(true);
  AddInputLength(estimated, &s);
  EXPECT_EQ(s.compared, 0u);
  EXPECT_FALSE(s.shown());
}

}  // namespace
}  // namespace surge::coordinator
