// The details file's direct writer against the writer it
// replaced: the same bytes for the same records (R-OUT-1), numbers, strings
// and null/empty cases, and the writer thread's file equal to the direct
// one's; `surge report`'s reader still reads every line back.
#include "coordinator/results/details_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "common/failure_kind.h"
#include "common/time_units.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using surge::v1::RequestRecord;

// The details line as surge wrote it before the direct writer (a
// nlohmann::json object per record, then dump()): the reference.
nlohmann::json SecondsOrNull(bool reached, int64_t ns) {
  if (!reached) return nullptr;
  return NanosToSeconds(ns);
}

std::string ReferenceLine(const RequestRecord& r) {
  const bool sent = r.sent();
  nlohmann::json j;
  j["index"] = r.index();
  j["attempt"] = r.attempt();
  j["worker"] = r.worker();
  j["status"] = StatusName(r.status());
  j["planned_offset_s"] = NanosToSeconds(r.planned_ns());
  j["released_offset_s"] = SecondsOrNull(r.released(), r.released_ns());
  j["actual_offset_s"] = SecondsOrNull(sent, r.sent_ns());
  j["lateness_s"] = SecondsOrNull(sent, r.sent_ns() - r.planned_ns());
  j["blocked_s"] = NanosToSeconds(r.blocked_ns());
  j["late"] = r.late();
  j["catch_up_delay_s"] = NanosToSeconds(r.catch_up_delay_ns());
  j["http_status"] = r.http_status();
  j["ttft_s"] = SecondsOrNull(r.ttft_ns() != 0, r.ttft_ns());
  j["ttfc_s"] = SecondsOrNull(r.ttfc_ns() != 0, r.ttfc_ns());
  j["e2el_s"] = SecondsOrNull(r.e2el_ns() != 0, r.e2el_ns());
  j["ttft_from_planned_s"] = SecondsOrNull(sent && r.ttft_ns() != 0, FromPlannedNs(r, r.ttft_ns()));
  j["e2el_from_planned_s"] = SecondsOrNull(sent && r.e2el_ns() != 0, FromPlannedNs(r, r.e2el_ns()));
  j["interrupted_offset_s"] = SecondsOrNull(r.interrupted_ns() != 0, r.interrupted_ns());
  nlohmann::json itl = nlohmann::json::array();
  for (int64_t gap : r.itl_ns()) itl.push_back(NanosToSeconds(gap));
  j["itl_s"] = std::move(itl);
  j["input_tokens"] = r.input_tokens();
  j["asked_input_tokens"] = r.asked_input_tokens();
  j["input_tokens_estimated"] = r.input_tokens_estimated();
  j["token_counter"] = surge::coordinator::TokenCounterLabel(r.token_counter());
  j["output_tokens"] = r.output_tokens();
  j["output_tokens_estimated"] = r.output_tokens_estimated();
  j["max_tokens"] = r.max_tokens();
  j["finish_reason"] =
      r.finish_reason().empty() ? nlohmann::json() : nlohmann::json(r.finish_reason());
  j["short_output"] = r.short_output();
  j["http_retries"] = r.http_retries();
  j["retry_reason"] = r.retry_reason();
  j["retry_offset_s"] = SecondsOrNull(r.retry_sent_ns() != 0, r.retry_sent_ns());
  j["error"] = r.error();
  j["failure_kind"] = surge::FailureKindLabel(surge::FailureKindOf(r));
  return j.dump() + "\n";
}

std::string NewLine(const RequestRecord& r) {
  std::string out;
  AppendDetailsLine(r, &out);
  return out;
}

std::string OldSeconds(int64_t ns) { return nlohmann::json(NanosToSeconds(ns)).dump(); }
std::string NewSeconds(int64_t ns) {
  std::string out;
  AppendJsonSeconds(ns, &out);
  return out;
}

// Every layout nlohmann uses (whole numbers with ".0", 0.000ddd, ddd.ddd,
// exponents both ways, two- and three-digit), the ends of the fast path
// (1e15 ns) and int64's ends, and the values where Grisu2 prints more
// digits than the shortest (-99970 ns: -9.997000000000001e-05).
TEST(DetailsJsonTest, SecondsAreNlohmannsNumbersAtTheEdges) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  for (int64_t ns : {int64_t{0},
                     int64_t{1},
                     int64_t{-1},
                     int64_t{10},
                     int64_t{99970},
                     int64_t{-99970},
                     int64_t{-90804},
                     int64_t{100000},
                     int64_t{123456},
                     int64_t{1000000},
                     int64_t{1939714},
                     int64_t{2000000},
                     int64_t{999999999},
                     int64_t{1000000000},
                     int64_t{5000000000},
                     int64_t{1500020000},
                     int64_t{123456789012345},
                     int64_t{999999999999999},
                     int64_t{1000000000000000},
                     int64_t{1000000000000001},
                     int64_t{1234567890123456789},
                     kMax,
                     kMin,
                     kMax - 1,
                     kMin + 1,
                     int64_t{1} << 52,
                     int64_t{1} << 53,
                     int64_t{1} << 40}) {
    EXPECT_EQ(NewSeconds(ns), OldSeconds(ns)) << ns;
  }
  EXPECT_EQ(NewSeconds(0), "0.0");
  EXPECT_EQ(NewSeconds(10000), "1e-05");
  EXPECT_EQ(NewSeconds(5000000000), "5.0");
  EXPECT_EQ(NewSeconds(1939714), "0.001939714");
  EXPECT_EQ(NewSeconds(-99970), "-9.997000000000001e-05");  // Grisu2's, not the shortest
}

// Every ns in [-200,000, 2,000,000) and 2,000,000 spread over every
// magnitude up to int64's, both signs: the same text as nlohmann's dump.
TEST(DetailsJsonTest, SecondsMatchNlohmannOverMillionsOfValues) {
  int64_t mismatches = 0;
  auto check = [&](int64_t ns) {
    if (NewSeconds(ns) != OldSeconds(ns) && ++mismatches <= 10) {
      ADD_FAILURE() << ns << ": " << NewSeconds(ns) << " vs " << OldSeconds(ns);
    }
  };
  for (int64_t ns = -200000; ns < 2000000; ++ns) check(ns);
  std::mt19937_64 rng(9);
  for (int i = 0; i < 1000000; ++i) {
    const int64_t ns = static_cast<int64_t>(rng() >> (1 + rng() % 62));
    check(ns);
    check(-ns);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(DetailsJsonTest, StringsAreEscapedAsNlohmannDoes) {
  for (const std::string& s :
       {std::string(), std::string("plain"), std::string("quote \" backslash \\ slash /"),
        std::string("\b\f\n\r\t"), std::string("\x01\x1f\x7f", 3), std::string("nul\0byte", 8),
        std::string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),  // é € 😀
        std::string("http_error: 500 {\"error\":{\"message\":\"x\"}}\r\n")}) {
    std::string out;
    AppendJsonString(s, &out);
    EXPECT_EQ(out, nlohmann::json(s).dump()) << s;
  }
  // Not UTF-8 (the old writer threw here): U+FFFD for the bad bytes.
  std::string out;
  AppendJsonString("bad \xff byte", &out);
  EXPECT_EQ(out, "\"bad \xef\xbf\xbd byte\"");
}

RequestRecord RandomRecord(std::mt19937_64& rng, uint64_t index) {
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  auto some_ns = [&]() -> int64_t {
    switch (pick(4)) {
      case 0:
        return 0;
      case 1:
        return static_cast<int64_t>(rng() % 100000);
      case 2:
        return static_cast<int64_t>(rng() % 100000000000);
      default:
        return static_cast<int64_t>(rng() >> pick(63));
    }
  };
  static const char* kStrings[] = {"",
                                   "length",
                                   "stop",
                                   "http_error: 503 \"overloaded\"",
                                   "connect: Connection refused\n\tat 127.0.0.1:1",
                                   "caf\xc3\xa9 \xe2\x82\xac",
                                   "ctl \x01\x02\x1b",
                                   "back\\slash"};
  RequestRecord r;
  r.set_index(index);
  r.set_attempt(pick(3));
  r.set_worker(static_cast<int32_t>(pick(5)) - 1);
  r.set_status(static_cast<surge::v1::RequestStatus>(pick(7)));
  r.set_planned_ns(some_ns());
  r.set_released(pick(2) == 1);
  r.set_released_ns(r.planned_ns() + some_ns());
  r.set_sent(pick(3) != 0);
  r.set_sent_ns(r.planned_ns() + static_cast<int64_t>(rng() % 200000) - 50000);
  r.set_blocked_ns(pick(2) ? some_ns() : 0);
  r.set_late(pick(2) == 1);
  r.set_catch_up_delay_ns(pick(2) ? some_ns() : 0);
  r.set_http_status(pick(2) ? 200 : pick(600));
  r.set_ttft_ns(some_ns());
  r.set_ttfc_ns(some_ns());
  r.set_e2el_ns(some_ns());
  r.set_interrupted_ns(pick(4) == 0 ? some_ns() : 0);
  const uint32_t tokens = pick(4) == 0 ? 0 : pick(300);
  for (uint32_t k = 0; k + 1 < tokens; ++k) r.add_itl_ns(some_ns());
  r.set_input_tokens(pick(100000));
  r.set_asked_input_tokens(pick(100000));
  r.set_input_tokens_estimated(pick(2) == 1);
  r.set_token_counter(static_cast<surge::v1::TokenCounter>(pick(5)));
  r.set_output_tokens(tokens);
  r.set_output_tokens_estimated(pick(2) == 1);
  r.set_max_tokens(pick(4096));
  r.set_finish_reason(kStrings[pick(8)]);
  r.set_short_output(pick(2) == 1);
  r.set_http_retries(pick(3));
  r.set_retry_reason(kStrings[pick(8)]);
  r.set_retry_sent_ns(pick(3) == 0 ? some_ns() : 0);
  r.set_error(kStrings[pick(8)]);
  return r;
}

// R-OUT-1: the same bytes as the writer it replaced, for records with and
// without each time, empty and long ITL lists, every status, strings that
// need escaping and non-ASCII text; and ParseDetailsLine (`surge report`)
// reads each back.
TEST(DetailsJsonTest, LinesAreByteIdenticalToTheOldWriter) {
  std::mt19937_64 rng(42);
  RequestRecord empty;  // every field at its default
  EXPECT_EQ(NewLine(empty), ReferenceLine(empty));
  EXPECT_THAT(NewLine(empty), ::testing::HasSubstr("\"itl_s\":[],"));
  for (uint64_t i = 0; i < 3000; ++i) {
    const RequestRecord r = RandomRecord(rng, i * 7919);
    const std::string line = NewLine(r);
    ASSERT_EQ(line, ReferenceLine(r)) << r.ShortDebugString();
    auto back = ParseDetailsLine(line.substr(0, line.size() - 1));
    ASSERT_TRUE(back.ok()) << line;
    EXPECT_EQ(back->index(), r.index());
    EXPECT_EQ(back->itl_ns_size(), r.itl_ns_size());
    EXPECT_EQ(back->error(), r.error());
    // Seconds as doubles hold every ns exactly below 1e15 ns (11.6 days).
    if (r.itl_ns_size() > 0 && std::llabs(r.itl_ns(0)) < 1000000000000000) {
      EXPECT_EQ(back->itl_ns(0), r.itl_ns(0));
    }
  }
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The writer thread writes the very file the direct writer does, in Add
// order, with a queue bound far below the record count (Add waits for the
// thread), and Flush returns with everything on disk.
TEST(DetailsWriterTest, WriterThreadWritesTheSameFileInOrder) {
  const fs::path dir = ::surge::testing::FreshDir("details_writer_thread");
  std::mt19937_64 rng(7);
  std::vector<RequestRecord> records;
  for (uint64_t i = 0; i < 2000; ++i) records.push_back(RandomRecord(rng, i));
  std::string expected;
  for (const auto& r : records) expected += ReferenceLine(r);
  {
    auto direct = DetailsWriter::Create(dir / "direct.jsonl");
    ASSERT_TRUE(direct.ok());
    for (const auto& r : records) (*direct)->Add(r);
    EXPECT_EQ(ReadAll(dir / "direct.jsonl"), expected);  // flushed per record
  }
  DetailsWriterOptions options;
  options.writer_thread = true;
  options.max_queued = 7;
  auto threaded = DetailsWriter::Create(dir / "thread.jsonl", options);
  ASSERT_TRUE(threaded.ok());
  for (size_t i = 0; i < records.size(); ++i) {
    (*threaded)->Add(records[i]);
    if (i == 999) {
      ASSERT_TRUE((*threaded)->Flush().ok());
      std::string first_half;
      for (size_t k = 0; k < 1000; ++k) first_half += ReferenceLine(records[k]);
      EXPECT_EQ(ReadAll(dir / "thread.jsonl"), first_half);
    }
  }
  ASSERT_TRUE((*threaded)->Flush().ok());
  EXPECT_EQ(ReadAll(dir / "thread.jsonl"), expected);
  threaded->reset();  // the destructor has nothing left to write
  EXPECT_EQ(ReadAll(dir / "thread.jsonl"), expected);
}

// A full disk: Flush says so, and Add logs it once (not per record).
TEST(DetailsWriterTest, WriteFailureIsReported) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  for (bool thread : {false, true}) {
    DetailsWriterOptions options;
    options.writer_thread = thread;
    auto w = DetailsWriter::Create("/dev/full", options);
    ASSERT_TRUE(w.ok());
    RequestRecord r;
    r.set_index(3);
    (*w)->Add(r);
    EXPECT_FALSE((*w)->Flush().ok()) << "writer_thread " << thread;
  }
}

}  // namespace
}  // namespace surge::coordinator
