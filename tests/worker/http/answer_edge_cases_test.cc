// BeastRequestSender against a scripted server on 127.0.0.1:0 that writes
// its answer's bytes at given times: a tool-call stream, compressed
// answers and a redirect. Real time, so timings are checked within
// generous bounds (the exact values are response_reader_test's).
#include <string>
#include <vector>

#include "common/failure_kind.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/http/canned_server.h"
#include "tests/worker/http/gzip_pieces.h"
#include "tests/worker/http/sender_test_util.h"
#include "worker/http/beast_request_sender.h"

namespace surge::worker {
namespace {

using ::surge::testing::CannedServer;
using ::surge::testing::Chunk;
using ::surge::testing::CompressPieces;
using ::surge::testing::HttpAnswer;
using ::surge::testing::kMs;
using ::surge::testing::kRole;
using ::surge::testing::kSlackNs;
using ::surge::testing::LastChunk;
using ::surge::testing::MakeAssignment;
using ::surge::testing::NewSender;
using ::surge::testing::PlainTarget;
using ::surge::testing::SendOne;
using ::surge::v1::RequestRecord;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using Piece = CannedServer::Piece;

// `actual_ns` is `expected_ms` late by at most the slack, and not early
// (the server starts its delays after reading the request, which is after
// the send).
void ExpectAbout(int64_t actual_ns, int64_t expected_ms, const char* what) {
  EXPECT_GE(actual_ns, expected_ms * kMs - 5 * kMs) << what;
  EXPECT_LE(actual_ns, expected_ms * kMs + kSlackNs) << what;
}

// A gap between two events written `expected_ms` apart: either may be
// late by the slack.
void ExpectGap(int64_t gap_ns, int64_t expected_ms) {
  EXPECT_GE(gap_ns, expected_ms * kMs - kSlackNs);
  EXPECT_LE(gap_ns, expected_ms * kMs + kSlackNs);
}

std::string ChatEvent(const std::string& delta, const std::string& finish = "null") {
  return "data: {\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"finish_reason\":" + finish +
         "}]}\n\n";
}

const char kTools[] =
    R"({"tools":[{"type":"function","function":{"name":"get_weather",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]})";

TEST(AnswerEdgeCasesTest, ToolCallStreamIsMeasuredLikeContent) {
  const std::string name = ChatEvent(R"({"tool_calls":[{"index":0,"id":"call_1","type":"function",)"
                                     R"("function":{"name":"get_weather","arguments":""}}]})");
  const std::string args1 =
      ChatEvent(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]})");
  const std::string args2 =
      ChatEvent(R"({"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]})");
  const std::string end =
      ChatEvent("{}", "\"tool_calls\"") +
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":9}}\n\n" +
      "data: [DONE]\n\n";
  CannedServer server(
      [&](const std::string&) {
        return std::vector<Piece>{{0, surge::testing::SseHeader() + Chunk(kRole)},
                                  {400, Chunk(name)},
                                  {100, Chunk(args1)},
                                  {100, Chunk(args2)},
                                  {0, Chunk(end) + LastChunk()}};
      },
      /*close_after=*/true);
  surge::v1::TargetConfig target = PlainTarget(server.port(), "/v1/chat/completions", true);
  target.set_extra_body_json(kTools);
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 16));
  ASSERT_THAT(server.requests(), SizeIs(1));
  EXPECT_THAT(server.requests()[0], HasSubstr("\"tools\":[{"));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  ExpectAbout(r.ttft_ns(), 400, "TTFT");
  ASSERT_THAT(r.itl_ns(), SizeIs(2));
  ExpectGap(r.itl_ns(0), 100);
  ExpectGap(r.itl_ns(1), 100);
  ExpectAbout(r.e2el_ns(), 600, "E2EL");
  EXPECT_EQ(r.output_tokens(), 9u);
  EXPECT_FALSE(r.output_tokens_estimated());
  EXPECT_EQ(r.finish_reason(), "tool_calls");
}

TEST(AnswerEdgeCasesTest, GzipStreamIsDecodedAsItArrives) {
  const std::vector<std::string> gz =
      CompressPieces({kRole + ChatEvent(R"({"content":"a"})"), ChatEvent(R"({"content":"b"})"),
                      ChatEvent(R"({"content":"c"})", "\"stop\"") + "data: [DONE]\n\n"});
  CannedServer server(
      [&](const std::string&) {
        const std::string header =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n";
        return std::vector<Piece>{
            {200, header + Chunk(gz[0])}, {200, Chunk(gz[1])}, {200, Chunk(gz[2]) + LastChunk()}};
      },
      /*close_after=*/true);
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 16));
  // surge asked for no compression; the server compressed anyway.
  ASSERT_THAT(server.requests(), SizeIs(1));
  EXPECT_THAT(server.requests()[0], HasSubstr("\r\nAccept-Encoding: identity\r\n"));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  ExpectAbout(r.ttft_ns(), 200, "TTFT");
  ASSERT_THAT(r.itl_ns(), SizeIs(2));
  ExpectGap(r.itl_ns(0), 200);
  ExpectGap(r.itl_ns(1), 200);
  EXPECT_EQ(r.finish_reason(), "stop");
}

TEST(AnswerEdgeCasesTest, GzipJsonAnswerParses) {
  const std::string body = surge::testing::Compress(
      R"({"choices":[{"index":0,"text":"abcdefgh","finish_reason":"length"}],)"
      R"("usage":{"prompt_tokens":8,"completion_tokens":5}})");
  CannedServer server([&](const std::string&) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 5));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 5u);
  EXPECT_EQ(r.finish_reason(), "length");
}

TEST(AnswerEdgeCasesTest, BrotliIsUnsupportedByName) {
  CannedServer server([](const std::string&) {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: br\r\n"
           "Content-Length: 3\r\n\r\nabc";
  });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "unsupported_content_encoding: br");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_UNSUPPORTED_CONTENT_ENCODING);
}

TEST(AnswerEdgeCasesTest, RedirectIsNotFollowedAndNamesItsLocation) {
  CannedServer server([](const std::string&) {
    return "HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/completions\r\n"
           "Content-Length: 0\r\n\r\n";
  });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.http_status(), 307u);
  EXPECT_EQ(r.error(), "http_307: redirect to /v2/completions (not followed)");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_HTTP_OTHER);
  // Only the one request: nothing went to the Location.
  EXPECT_THAT(server.requests(), SizeIs(1));
}

}  // namespace
}  // namespace surge::worker
