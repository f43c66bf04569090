// BeastRequestSender against a scripted server on 127.0.0.1:0: the request
// it writes, the connections it keeps or retries, and how it counts tokens,
// finish reasons and first-token times of what the server sends.
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/prompt_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
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

TEST(BeastRequestSenderWireTest, RequestLineHeadersAndBody) {
  CannedServer server([](const std::string&) {
    return SseHeader() + Chunk("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n") +
           Chunk("data: [DONE]\n\n") + LastChunk();
  });
  ::setenv("OPENAI_API_KEY", "sk-test-123", 1);
  surge::v1::TargetConfig target;
  target.set_base_url(server.base_url() + "/prefix/");
  target.set_endpoint("/v1/chat/completions");
  target.set_model("my-model");
  target.set_stream(true);
  auto sender = NewSender(target);
  ::unsetenv("OPENAI_API_KEY");
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(5, 9, 16));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  // No usage: one content event counted, estimated.
  EXPECT_EQ(r.output_tokens(), 1u);
  EXPECT_TRUE(r.output_tokens_estimated());
  const std::string prompt = BuildPrompt(16, 5 * 7919);
  EXPECT_EQ(r.input_tokens(), EstimateTokens(prompt));

  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string& raw = requests[0];
  EXPECT_THAT(raw, StartsWith("POST /prefix/v1/chat/completions HTTP/1.1\r\n"));
  EXPECT_THAT(raw, HasSubstr("\r\nHost: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"));
  EXPECT_THAT(raw, HasSubstr("\r\nAuthorization: Bearer sk-test-123\r\n"));
  EXPECT_THAT(raw, HasSubstr("\r\nContent-Type: application/json\r\n"));
  // INDEX/ATTEMPT, so a server log can show a request that came twice.
  EXPECT_THAT(raw, HasSubstr("\r\nX-Surge-Request: 5/2\r\n"));
  const nlohmann::json body = nlohmann::json::parse(raw.substr(raw.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["model"], "my-model");
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"], prompt);
  EXPECT_EQ(body["max_tokens"], 9);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
}

TEST(BeastRequestSenderWireTest, NoAuthorizationWithoutKey) {
  CannedServer server([](const std::string&) {
    return HttpAnswer(200, "OK", R"({"choices":[{"text":"abcdefgh"}]})");
  });
  ::unsetenv("OPENAI_API_KEY");
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 2u);  // EstimateTokens("abcdefgh"), no usage
  EXPECT_TRUE(r.output_tokens_estimated());
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_THAT(server.requests()[0], ::testing::Not(HasSubstr("Authorization")));
  const std::string raw = server.requests()[0];
  const nlohmann::json body = nlohmann::json::parse(raw.substr(raw.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["stream"], false);
  EXPECT_FALSE(body.contains("stream_options"));
  EXPECT_TRUE(body.contains("prompt"));
}

TEST(BeastRequestSenderWireTest, KeepAliveRaceIsRetriedOnceOnAFreshConnection) {
  // 1st request: answered, connection kept. 2nd (on the reused connection):
  // the server closes without answering, as a server whose keep-alive
  // timeout fired would. The client sends it again on a new connection.
  std::atomic<int> calls{0};
  CannedServer server(
      [&calls](const std::string&) -> std::string {
        if (calls.fetch_add(1) == 1) return "";
        return HttpAnswer(200, "OK", R"({"choices":[{"text":"abcd"}]})");
      },
      /*close_after=*/false);
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  EXPECT_EQ(SendOne(*sender, MakeAssignment(0, 1)).status(), surge::v1::OK);
  const RequestRecord r = SendOne(*sender, MakeAssignment(1, 1));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(sender->connections_opened(), 2u);
  // Two requests sent; the retry is not a third.
  EXPECT_EQ(sender->sent_total(), 2u);
}

TEST(BeastRequestSenderWireTest, ConnectionsClosedByTheServerAreNotReused) {
  CannedServer server([](const std::string&) {
    return HttpAnswer(200, "OK", R"({"choices":[{"text":"abcd"}]})");
  });  // closes after every answer, without saying so
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  for (int i = 0; i < 5; ++i) {
    const RequestRecord r = SendOne(*sender, MakeAssignment(i, 1));
    EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  }
  EXPECT_EQ(sender->connections_opened(), 5u);
}

// No usage from the server, 4,096 characters of content
// in 82 events of 50 (the last one 46). Output tokens are estimated from the
// text (ceil(4096 / 4) = 1024), not counted as one per event (82), and the
// non-streamed answer with the same text gives the same count.
TEST(BeastRequestSenderWireTest, OutputTokensAreEstimatedFromTextNotCountedPerEvent) {
  std::string content;
  std::string events;
  for (int i = 0; i < 82; ++i) {
    const std::string piece(i < 81 ? 50 : 46, static_cast<char>('a' + i % 26));
    content += piece;
    events += Chunk("data: {\"choices\":[{\"delta\":{\"content\":\"" + piece + "\"}}]}\n\n");
  }
  ASSERT_EQ(content.size(), 4096u);
  CannedServer streaming([&](const std::string&) {
    return SseHeader() + events + Chunk(kFinish) + Chunk("data: [DONE]\n\n") + LastChunk();
  });
  auto sender = NewSender(PlainTarget(streaming.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 1024u);
  EXPECT_TRUE(r.output_tokens_estimated());

  CannedServer whole([&](const std::string&) {
    return HttpAnswer(200, "OK", R"({"choices":[{"message":{"content":")" + content + R"("}}]})");
  });
  auto sender2 = NewSender(PlainTarget(whole.port(), "/v1/chat/completions", false));
  ASSERT_NE(sender2, nullptr);
  const RequestRecord r2 = SendOne(*sender2, MakeAssignment(1, 4));
  EXPECT_EQ(r2.status(), surge::v1::OK) << r2.error();
  EXPECT_EQ(r2.output_tokens(), 1024u);
  EXPECT_TRUE(r2.output_tokens_estimated());
}

// Server usage, when sent, wins over the estimate.
TEST(BeastRequestSenderWireTest, ServerUsageWinsOverTheEstimate) {
  CannedServer server([&](const std::string&) {
    return SseHeader() + Chunk(kToken) + Chunk(kFinish) +
           Chunk(
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":"
               "9}}\n\n") +
           Chunk("data: [DONE]\n\n") + LastChunk();
  });
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 9u);
  EXPECT_EQ(r.input_tokens(), 7u);
  EXPECT_FALSE(r.output_tokens_estimated());
}

// R-MET-1: with n = 2 the server interleaves choice 0 ("A"
// at 300 ms, "C" at 500 ms) and choice 1 ("B" at 350 ms, "D" at 600 ms).
// surge refuses n != 1 at start (ParseExtraBody); a server that streams
// several choices anyway fails the request instead of merging the gaps of
// different choices into one ITL list ([50, 150, 100] ms before).
TEST(BeastRequestSenderWireTest, SeveralChoicesInOneStreamAreRefusedNotMerged) {
  CannedServer server(
      [](const std::string&) {
        return std::vector<CannedServer::Piece>{
            {0, SseHeader()},
            {300, ChoiceEvent(0, R"({"content":"A"})")},
            {50, ChoiceEvent(1, R"({"content":"B"})")},
            {150, ChoiceEvent(0, R"({"content":"C"})") + ChoiceEvent(0, "{}", "\"stop\"")},
            {100, ChoiceEvent(1, R"({"content":"D"})") + ChoiceEvent(1, "{}", "\"stop\"") +
                      UsageEvent(4) + Chunk("data: [DONE]\n\n") + LastChunk()}};
      },
      /*close_after=*/true);
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 8));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_THAT(r.error(), StartsWith("multiple_choices: an event of choice 1"));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_MULTIPLE_CHOICES);
  EXPECT_EQ(r.itl_ns_size(), 0);  // no gap between choice 0's "A" and choice 1's "B"
  EXPECT_GE(r.ttft_ns(), 295 * kMs);

  // And the sender will not be built for such a body at all.
  surge::v1::TargetConfig n2 = PlainTarget(server.port(), "/v1/chat/completions", true);
  n2.set_extra_body_json(R"({"n":2})");
  auto refused = BeastRequestSender::Create(RealClock(), n2);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("extra_body_json: sets \"n\": 2; surge measures one answer per request"));
}

// --random-output-len 8 with ignore_eos; the server sends 3
// tokens and finish_reason "stop", usage 3. The record keeps why the stream
// ended and what was asked: finish_reason "stop", max_tokens 8, short_output.
TEST(BeastRequestSenderWireTest, IgnoreEosAnswerThatStopsEarlyIsAShortOutput) {
  auto answer = [](int tokens, const std::string& finish) {
    std::string body = SseHeader();
    for (int i = 0; i < tokens; ++i) body += ChoiceEvent(0, R"({"content":"x"})");
    return body + ChoiceEvent(0, "{}", "\"" + finish + "\"") + UsageEvent(tokens) +
           Chunk("data: [DONE]\n\n") + LastChunk();
  };
  CannedServer stops_early([&](const std::string&) { return answer(3, "stop"); });
  CannedServer full_length([&](const std::string&) { return answer(8, "length"); });
  for (const bool ignore_eos : {true, false}) {
    surge::v1::TargetConfig t = PlainTarget(stops_early.port(), "/v1/chat/completions", true);
    if (ignore_eos) t.set_extra_body_json(R"({"ignore_eos":true})");
    auto sender = NewSender(t);
    ASSERT_NE(sender, nullptr);
    const RequestRecord r = SendOne(*sender, MakeAssignment(0, 8));
    EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
    EXPECT_EQ(r.output_tokens(), 3u);
    EXPECT_EQ(r.finish_reason(), "stop");
    EXPECT_EQ(r.max_tokens(), 8u);
    // Without ignore_eos, stopping at an end-of-sequence token is normal.
    EXPECT_EQ(r.short_output(), ignore_eos);
  }
  surge::v1::TargetConfig t = PlainTarget(full_length.port(), "/v1/chat/completions", true);
  t.set_extra_body_json(R"({"ignore_eos":true})");
  auto sender = NewSender(t);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(1, 8));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.finish_reason(), "length");
  EXPECT_EQ(r.output_tokens(), 8u);
  EXPECT_FALSE(r.short_output());
  // The extra body's max_tokens is what was asked for.
  t.set_extra_body_json(R"({"ignore_eos":true,"max_tokens":16})");
  auto sender16 = NewSender(t);
  ASSERT_NE(sender16, nullptr);
  const RequestRecord r16 = SendOne(*sender16, MakeAssignment(2, 8));
  EXPECT_EQ(r16.max_tokens(), 16u);
  EXPECT_TRUE(r16.short_output());  // 8 of 16
}

// Reasoning at 200 and 300 ms, content at 600 and 700 ms.
// TTFT is the first token on any channel (200 ms, as vLLM's benchmark
// counts it); TTFC the first content token (600 ms). ITL covers all four.
TEST(BeastRequestSenderWireTest, ReasoningBeforeContentKeepsFirstTokenAndFirstContent) {
  CannedServer server(
      [](const std::string&) {
        return std::vector<CannedServer::Piece>{
            {0, SseHeader()},
            {200, ChoiceEvent(0, R"({"reasoning_content":"think"})")},
            {100, ChoiceEvent(0, R"({"reasoning_content":"more"})")},
            {300, ChoiceEvent(0, R"({"content":"ans"})")},
            {100, ChoiceEvent(0, R"({"content":"wer"})") + ChoiceEvent(0, "{}", "\"stop\"") +
                      UsageEvent(4) + Chunk("data: [DONE]\n\n") + LastChunk()}};
      },
      /*close_after=*/true);
  auto sender = NewSender(PlainTarget(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 8));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_GE(r.ttft_ns(), 195 * kMs);
  EXPECT_LT(r.ttft_ns(), 200 * kMs + kSlackNs);
  EXPECT_GE(r.ttfc_ns(), 595 * kMs);
  EXPECT_LT(r.ttfc_ns(), 600 * kMs + kSlackNs);
  EXPECT_EQ(r.itl_ns_size(), 3);
  EXPECT_EQ(r.finish_reason(), "stop");

  // Reasoning only: a TTFT, no first-content time.
  CannedServer reasoning_only([](const std::string&) {
    return SseHeader() + ChoiceEvent(0, R"({"reasoning_content":"think"})") +
           ChoiceEvent(0, R"({"reasoning":"more"})", "\"length\"") + UsageEvent(2) +
           Chunk("data: [DONE]\n\n") + LastChunk();
  });
  auto sender2 = NewSender(PlainTarget(reasoning_only.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender2, nullptr);
  const RequestRecord r2 = SendOne(*sender2, MakeAssignment(1, 2));
  EXPECT_EQ(r2.status(), surge::v1::OK) << r2.error();
  EXPECT_GT(r2.ttft_ns(), 0);
  EXPECT_EQ(r2.ttfc_ns(), 0);
  EXPECT_EQ(r2.finish_reason(), "length");

  // A whole (non-streamed) answer: both are the time to the answer when it
  // has content, and no TTFC when it has only reasoning.
  CannedServer whole([](const std::string&) {
    return HttpAnswer(
        200, "OK",
        R"({"choices":[{"message":{"reasoning_content":"r"},"finish_reason":"length"}]})");
  });
  auto sender3 = NewSender(PlainTarget(whole.port(), "/v1/chat/completions", false));
  ASSERT_NE(sender3, nullptr);
  const RequestRecord r3 = SendOne(*sender3, MakeAssignment(2, 2));
  EXPECT_EQ(r3.status(), surge::v1::OK) << r3.error();
  EXPECT_GT(r3.ttft_ns(), 0);
  EXPECT_EQ(r3.ttfc_ns(), 0);
  EXPECT_EQ(r3.finish_reason(), "length");
}

// A keep-alive server closes, without a byte, the
// connection on which a second request arrives, 100 ms after it arrived.
// The client sends it again on a fresh connection; the record counts that
// retry and its cause, sent_ns stays the first write (so lateness does not
// grow by the reconnect) and E2EL counts from it (the wait is latency).
// `attempt` (the coordinator's reassignment count) is untouched.
TEST(BeastRequestSenderWireTest, KeepAliveRetryIsInTheRecordAndTimesCountFromTheFirstWrite) {
  std::atomic<int> calls{0};
  CannedServer server(
      [&calls](const std::string&) -> std::vector<CannedServer::Piece> {
        if (calls.fetch_add(1) == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          return {};  // close without a byte, 100 ms after the request arrived
        }
        return {{0, HttpAnswer(200, "OK", R"({"choices":[{"text":"abcd"}]})")}};
      },
      /*close_after=*/false);
  auto sender = NewSender(PlainTarget(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord first = SendOne(*sender, MakeAssignment(0, 1));
  EXPECT_EQ(first.status(), surge::v1::OK);
  EXPECT_EQ(first.http_retries(), 0u);
  EXPECT_EQ(first.retry_reason(), "");
  EXPECT_EQ(first.retry_sent_ns(), 0);

  const int64_t before = ToNanos(RealClock().Now());
  const RequestRecord r = SendOne(*sender, MakeAssignment(1, 1));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(r.attempt(), 2u);  // MakeAssignment's; not the HTTP retry
  EXPECT_EQ(r.http_retries(), 1u);
  EXPECT_THAT(r.retry_reason(), StartsWith("keepalive_closed: "));
  EXPECT_GE(r.sent_ns(), before);
  EXPECT_LT(r.sent_ns(), before + kSlackNs);  // the first write, not the retry's
  EXPECT_GE(r.retry_sent_ns() - r.sent_ns(), 95 * kMs);
  EXPECT_GE(r.e2el_ns(), r.retry_sent_ns() - r.sent_ns());
  EXPECT_GE(r.ttft_ns(), r.retry_sent_ns() - r.sent_ns());
}

}  // namespace
}  // namespace surge::worker
