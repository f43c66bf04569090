// BeastRequestSender against a scripted server on 127.0.0.1:0 that answers
// badly: each broken, cut or erroneous answer maps to its status, failure
// kind and error text (always valid UTF-8).
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/failure_kind.h"
#include "common/utf8.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/http/canned_server.h"
#include "tests/worker/http/sender_test_util.h"
#include "worker/http/beast_request_sender.h"

namespace surge::worker {
namespace {

using ::surge::testing::CannedServer;
using ::surge::testing::ChoiceEvent;
using ::surge::testing::Chunk;
using ::surge::testing::HttpAnswer;
using ::surge::testing::kCloseDelimitedSse;
using ::surge::testing::kFinish;
using ::surge::testing::kMs;
using ::surge::testing::kRole;
using ::surge::testing::kSlackNs;
using ::surge::testing::kToken;
using ::surge::testing::LastChunk;
using ::surge::testing::MakeAssignment;
using ::surge::testing::NewSender;
using ::surge::testing::PlainTarget;
using ::surge::testing::SendOne;
using ::surge::testing::SseHeader;
using ::surge::testing::UsageEvent;
using ::surge::v1::RequestRecord;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct FailureCase {
  const char* name;
  std::string answer;
  surge::v1::RequestStatus status;
  std::string error_prefix;
  uint32_t http_status;
};

class BeastRequestSenderFailureTest : public ::testing::TestWithParam<FailureCase> {};

TEST_P(BeastRequestSenderFailureTest, MapsToRecord) {
  const FailureCase& c = GetParam();
  CannedServer server([&c](const std::string&) { return c.answer; });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), c.status) << r.error();
  EXPECT_THAT(r.error(), StartsWith(c.error_prefix));
  // The kind set by the sender is the one its text names.
  EXPECT_EQ(r.failure_kind(), FailureKindFromError(r.error())) << r.error();
  EXPECT_EQ(r.http_status(), c.http_status);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BeastRequestSenderFailureTest,
    ::testing::Values(
        FailureCase{"Http503", HttpAnswer(503, "Service Unavailable", std::string(300, 'z')),
                    surge::v1::FAILED, "http_503: " + std::string(200, 'z'), 503},
        FailureCase{"BadJsonEvent",
                    SseHeader() + Chunk(kRole) + Chunk("data: {oops\n\n") + LastChunk(),
                    surge::v1::FAILED, "bad_chunk: bad JSON in event", 200},
        FailureCase{"ServerErrorEvent",
                    SseHeader() + Chunk(kToken) +
                        Chunk("data: {\"error\":{\"message\":\"engine died\"}}\n\n") + LastChunk(),
                    surge::v1::FAILED, "stream_error: server error: engine died", 200},
        FailureCase{"ClosedMidStream", SseHeader() + Chunk(kRole) + Chunk(kToken),
                    surge::v1::FAILED, "closed_mid_stream", 200},
        FailureCase{"NoContent",
                    SseHeader() + Chunk(kRole) + Chunk("data: [DONE]\n\n") + LastChunk(),
                    surge::v1::FAILED, "no_content", 200},
        FailureCase{"DoneThenCloseWithoutTerminator",
                    SseHeader() + Chunk(kToken) + Chunk("data: [DONE]\n\n"), surge::v1::OK, "",
                    200},
        FailureCase{"GarbageStatusLine", "SPDY/9 what\r\n\r\n", surge::v1::FAILED,
                    "stream_error: ", 0},
        FailureCase{"ClosedBeforeAnswer", "", surge::v1::FAILED, "connection_closed: ", 0},
        // The body ends cleanly by its framing, but the
        // stream never said it was over (no [DONE], no finish_reason).
        FailureCase{"LastChunkWithoutDoneOrFinishReason", SseHeader() + Chunk(kToken) + LastChunk(),
                    surge::v1::FAILED, "incomplete_stream", 200},
        FailureCase{"CloseDelimitedWithoutDone", kCloseDelimitedSse + kToken, surge::v1::FAILED,
                    "incomplete_stream", 200},
        FailureCase{"CloseDelimitedWithDone", kCloseDelimitedSse + kToken + "data: [DONE]\n\n",
                    surge::v1::OK, "", 200},
        FailureCase{"ContentLengthWithoutDone", HttpAnswer(200, "OK", kToken, "text/event-stream"),
                    surge::v1::FAILED, "incomplete_stream", 200},
        // A finish_reason followed by a clean end of the body is complete
        // even without [DONE] (servers that omit it).
        FailureCase{"FinishReasonThenLastChunk",
                    SseHeader() + Chunk(kToken) + Chunk(kFinish) + LastChunk(), surge::v1::OK, "",
                    200},
        // The last event without its closing blank line still counts at a
        // clean end of the body.
        FailureCase{"DoneWithoutBlankLineThenLastChunk",
                    SseHeader() + Chunk(kToken) + Chunk("data: [DONE]\n") + LastChunk(),
                    surge::v1::OK, "", 200},
        FailureCase{"CloseDelimitedDoneWithoutLineEnd",
                    kCloseDelimitedSse + kToken + "data: [DONE]", surge::v1::OK, "", 200},
        // A finish_reason is no excuse for a body cut inside its framing.
        FailureCase{"FinishReasonThenCutChunking", SseHeader() + Chunk(kToken) + Chunk(kFinish),
                    surge::v1::FAILED, "closed_mid_stream", 200}),
    [](const ::testing::TestParamInfo<FailureCase>& info) { return info.param.name; });

TEST(BeastRequestSenderWireTest, BadNonStreamingJsonIsBadResponse) {
  CannedServer server([](const std::string&) { return HttpAnswer(200, "OK", "{nope"); });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_THAT(r.error(), StartsWith("bad_response: "));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_BAD_RESPONSE);
}

// A chunk whose content holds a raw 0xFF
// byte, then [DONE]. JSON text must be UTF-8, so the event is a bad chunk;
// the error quotes it with U+FFFD in place of the byte, so the record can
// travel in a proto string.
TEST(BeastRequestSenderWireTest, RawByteInAChunkIsBadChunkWithValidUtf8Error) {
  const std::string event =
      "data: {\"choices\":[{\"delta\":{\"content\":\"A\xff"
      "B\"}}]}\n\n";
  CannedServer server([&](const std::string&) {
    return SseHeader() + Chunk(event) + Chunk("data: [DONE]\n\n") + LastChunk();
  });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(),
            "bad_chunk: bad JSON in event: {\"choices\":[{\"delta\":{\"content\":\"A\xEF\xBF\xBD"
            "B\"}}]}");
  EXPECT_TRUE(IsValidUtf8(r.error()));
  // And protobuf takes it: serialize and parse back.
  RequestRecord back;
  ASSERT_TRUE(back.ParseFromString(r.SerializeAsString()));
  EXPECT_EQ(back.error(), r.error());
}

// The same kind for an error body: raw bytes and a multi-byte character
// right at the 200-byte cut.
TEST(BeastRequestSenderWireTest, ErrorBodyIsQuotedAsValidUtf8CutAtACharacter) {
  // 199 'z' then "é" (2 bytes): the cut at 200 bytes would split it.
  const std::string body = std::string(199, 'z') + "\xC3\xA9" + "\xff\xfe tail";
  CannedServer server([&](const std::string&) { return HttpAnswer(500, "Oops", body); });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "http_500: " + std::string(199, 'z'));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_HTTP_5XX);
  EXPECT_TRUE(IsValidUtf8(r.error()));
  CannedServer raw([&](const std::string&) {
    return HttpAnswer(502, "Bad",
                      "a\xff"
                      "b");
  });
  auto sender2 = NewSender(PlainTarget(raw.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender2, nullptr);
  const RequestRecord r2 = SendOne(*sender2, MakeAssignment(1, 4));
  EXPECT_EQ(r2.error(),
            "http_502: a\xEF\xBF\xBD"
            "b");
}

// HTTP/1.1 200, text/event-stream,
// Connection: close, no length, no chunking; one content chunk at 0.1 s,
// then a clean close without [DONE] or finish_reason. Failed
// incomplete_stream, with TTFT and the tokens that did arrive kept.
TEST(BeastRequestSenderWireTest, StreamClosedCleanlyWithoutEndMarkIsIncompleteStream) {
  const std::string event = "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\n\n";
  CannedServer server(
      [&](const std::string&) {
        return std::vector<CannedServer::Piece>{{0, kCloseDelimitedSse}, {100, event}};
      },
      /*close_after=*/true);
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "incomplete_stream");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_INCOMPLETE_STREAM);
  EXPECT_EQ(r.http_status(), 200u);
  EXPECT_GE(r.ttft_ns(), 95 * kMs);
  EXPECT_LT(r.ttft_ns(), 100 * kMs + kSlackNs);
  EXPECT_EQ(r.output_tokens(), 2u);  // ceil(5 bytes "Hello" / 4), no usage
  EXPECT_TRUE(r.output_tokens_estimated());
  EXPECT_EQ(r.e2el_ns(), 0);  // not a whole answer
}

// Non-streamed answers shorter than their framing says: incomplete_body.
TEST(BeastRequestSenderWireTest, ShortContentLengthBodyIsIncompleteBody) {
  // A complete JSON value, but the header promised 100 more bytes.
  const std::string body = R"({"choices":[{"text":"abcdefgh"}]})";
  CannedServer server([&](const std::string&) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size() + 100) + "\r\n\r\n" + body;
  });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "incomplete_body");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_INCOMPLETE_BODY);
  EXPECT_EQ(r.http_status(), 200u);
}

TEST(BeastRequestSenderWireTest, ChunkedBodyCutBeforeLastChunkIsIncompleteBody) {
  CannedServer server([](const std::string&) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           "Transfer-Encoding: chunked\r\n\r\n" +
           Chunk(R"({"choices":[{"text":"abcdefgh"}]})");
  });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "incomplete_body");
}

}  // namespace
}  // namespace surge::worker
