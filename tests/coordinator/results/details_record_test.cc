// The details JSONL (R-OUT-1): every record field written and read back.
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

#include "absl/strings/str_cat.h"
#include "common/failure_kind.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"
#include "tests/coordinator/results/ok_record.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::FreshDir;
using ::testing::HasSubstr;

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

// The failure kind is written as a label and read back; a
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

// The record's new fields (first content, why the stream ended,
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
  const fs::path path = FreshDir("details_retry_fields") / "d.jsonl";
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

// Every line in order: records as written, and a line cut short by a
// crash as an error in its place; a missing file gives no line.
TEST(DetailsTest, ForEachDetailsLineGivesEveryLineInOrder) {
  const fs::path path = FreshDir("details_each") / "d.jsonl";
  {
    auto w = DetailsWriter::Create(path);
    ASSERT_TRUE(w.ok()) << w.status();
    for (uint64_t i : {4, 2}) {
      surge::v1::RequestRecord r;
      r.set_index(i);
      r.set_status(surge::v1::OK);
      (*w)->Append(r);
    }
    ASSERT_TRUE((*w)->Flush().ok());
  }
  std::ofstream(path, std::ios::app) << "{\"index\":9,\"sta";  // cut by a crash
  std::vector<std::string> seen;
  ForEachDetailsLine(path, [&seen](absl::StatusOr<surge::v1::RequestRecord> r) {
    seen.push_back(r.ok() ? absl::StrCat("record ", r->index()) : "error");
  });
  EXPECT_THAT(seen, ::testing::ElementsAre("record 4", "record 2", "error"));
  int lines = 0;
  ForEachDetailsLine(path.parent_path() / "none.jsonl",
                     [&lines](absl::StatusOr<surge::v1::RequestRecord>) { ++lines; });
  EXPECT_EQ(lines, 0);
}

}  // namespace
}  // namespace surge::coordinator
