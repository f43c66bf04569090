// ResponseReader fed body bytes with made-up arrival times: every timing is
// exact, no socket and no clock involved.
#include "worker/http/response_reader.h"

#include <cstdint>
#include <string>
#include <vector>

#include "common/failure_kind.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/http/gzip_pieces.h"

namespace surge::worker {
namespace {

using ::surge::v1::RequestRecord;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kSent = 1'000'000;  // the request's sent_ns
constexpr uint32_t kEstimatedInput = 11;

ReaderSetup AnswerOf(unsigned http_status = 200, bool stream = true,
                     ApiKind kind = ApiKind::kChat) {
  return ReaderSetup{.kind = kind,
                     .stream = stream,
                     .http_status = http_status,
                     .sent_ns = kSent,
                     .estimated_input = kEstimatedInput,
                     .api_key = "sk-secret-key"};
}

BodyEnd Whole(bool keep_alive = true) {
  BodyEnd end;
  end.how = BodyEnd::How::kWhole;
  end.keep_alive = keep_alive;
  return end;
}

BodyEnd Refused() {
  BodyEnd end;
  end.how = BodyEnd::How::kRefused;
  return end;
}

BodyEnd Cut() {
  BodyEnd end;
  end.how = BodyEnd::How::kCut;
  return end;
}

std::string Content(const std::string& text) {
  return "data: {\"choices\":[{\"delta\":{\"content\":\"" + text + "\"}}]}\n\n";
}
const std::string kRole = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
const std::string kFinish = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
const std::string kDone = "data: [DONE]\n\n";
const std::string kUsage =
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n";

TEST(ResponseReaderTest, StreamEventsAreStampedWithTheReadThatCompletedThem) {
  ResponseReader reader(AnswerOf());
  EXPECT_TRUE(reader.OnRead(kRole, kSent + 100, true));
  EXPECT_TRUE(reader.OnRead(Content("Hel"), kSent + 150, true));
  // Two events in one read: one arrival time, a gap of 0.
  EXPECT_TRUE(reader.OnRead(Content("lo") + Content("!"), kSent + 180, true));
  // Half an event: it counts when its end arrives.
  const std::string last = Content("end");
  EXPECT_TRUE(reader.OnRead(last.substr(0, 10), kSent + 200, true));
  EXPECT_TRUE(reader.OnRead(last.substr(10), kSent + 260, true));
  EXPECT_TRUE(reader.OnRead(kFinish + kUsage + kDone, kSent + 300, true));
  // A read of the chunked terminator only: no body bytes, a later last byte.
  EXPECT_TRUE(reader.OnRead("", kSent + 310, true));
  RequestRecord record;
  EXPECT_TRUE(reader.Finish(Whole(), record));

  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  EXPECT_EQ(record.error(), "");
  EXPECT_EQ(record.http_status(), 200u);
  EXPECT_EQ(record.sent_ns(), kSent);
  EXPECT_EQ(record.ttft_ns(), 150);
  EXPECT_EQ(record.ttfc_ns(), 150);
  EXPECT_THAT(record.itl_ns(), ElementsAre(30, 0, 80));
  EXPECT_EQ(record.e2el_ns(), 310);
  EXPECT_EQ(record.finish_reason(), "stop");
  EXPECT_EQ(record.output_tokens(), 3u);
  EXPECT_EQ(record.input_tokens(), 7u);
  EXPECT_FALSE(record.output_tokens_estimated());
}

TEST(ResponseReaderTest, CrlfCommentsAndAnUnterminatedLastEventAtAWholeEnd) {
  ResponseReader reader(AnswerOf());
  EXPECT_TRUE(
      reader.OnRead(": keep-alive\r\n\r\ndata: {\"choices\":[{\"delta\":", kSent + 40, true));
  EXPECT_TRUE(reader.OnRead("{\"content\":\"abcdefgh\"}}]}\r\n\r\n", kSent + 50, true));
  // "data: [DONE]" without its blank line, then the body ends cleanly.
  EXPECT_TRUE(reader.OnRead("data: [DONE]", kSent + 70, true));
  RequestRecord record;
  EXPECT_FALSE(reader.Finish(Whole(/*keep_alive=*/false), record));
  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  EXPECT_EQ(record.ttft_ns(), 50);
  EXPECT_THAT(record.itl_ns(), IsEmpty());
  EXPECT_EQ(record.e2el_ns(), 70);
  // No usage: ceil(8 bytes / 4).
  EXPECT_EQ(record.output_tokens(), 2u);
  EXPECT_TRUE(record.output_tokens_estimated());
  EXPECT_EQ(record.input_tokens(), kEstimatedInput);
}

TEST(ResponseReaderTest, ReasoningSetsTheFirstTokenAndContentTheFirstContent) {
  ResponseReader reader(AnswerOf());
  reader.OnRead("data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}\n\n",
                kSent + 200, true);
  reader.OnRead(Content("answer") + kFinish + kDone, kSent + 600, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.status(), surge::v1::OK);
  EXPECT_EQ(record.ttft_ns(), 200);
  EXPECT_EQ(record.ttfc_ns(), 600);
  EXPECT_THAT(record.itl_ns(), ElementsAre(400));
}

// A session turn's answer text (for the next turn's history): the answer
// proper, without the reasoning; only for an OK answer, only when asked.
TEST(ResponseReaderTest, KeepsTheAnswerTextWithoutReasoningWhenAsked) {
  ReaderSetup setup = AnswerOf();
  setup.keep_answer_text = true;
  ResponseReader reader(setup);
  reader.OnRead("data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}\n\n",
                kSent + 200, true);
  reader.OnRead(Content("an") + Content("swer") + kFinish + kDone, kSent + 600, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.answer_text(), "answer");

  ResponseReader plain(AnswerOf());
  plain.OnRead(Content("answer") + kFinish + kDone, kSent + 600, true);
  RequestRecord other;
  plain.Finish(Whole(), other);
  EXPECT_EQ(other.status(), surge::v1::OK);
  EXPECT_TRUE(other.answer_text().empty());

  ReaderSetup whole_setup = AnswerOf(200, /*stream=*/false, ApiKind::kCompletions);
  whole_setup.keep_answer_text = true;
  ResponseReader whole(whole_setup);
  whole.OnRead("{\"choices\":[{\"text\":\"all of it\",\"finish_reason\":\"length\"}]}", kSent + 9,
               true);
  RequestRecord completion;
  whole.Finish(Whole(), completion);
  EXPECT_EQ(completion.answer_text(), "all of it");
}

TEST(ResponseReaderTest, StreamCutMidAnswerKeepsWhatArrivedButNoE2el) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(kRole + Content("abcd"), kSent + 100, true);
  reader.OnRead(Content("efgh"), kSent + 120, true);
  // The read that met the close gave nothing.
  EXPECT_TRUE(reader.OnRead("", kSent + 500, false));
  RequestRecord record;
  EXPECT_FALSE(reader.Finish(Cut(), record));
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.error(), "closed_mid_stream");
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_CLOSED_MID_STREAM);
  EXPECT_EQ(record.ttft_ns(), 100);
  EXPECT_THAT(record.itl_ns(), ElementsAre(20));
  EXPECT_EQ(record.e2el_ns(), 0);
  EXPECT_EQ(record.output_tokens(), 2u);
  EXPECT_TRUE(record.output_tokens_estimated());
}

TEST(ResponseReaderTest, CutAfterDoneIsOkWithE2elToTheLastCleanRead) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(Content("t"), kSent + 100, true);
  reader.OnRead(kDone, kSent + 130, true);
  reader.OnRead("", kSent + 900, false);
  RequestRecord record;
  EXPECT_FALSE(reader.Finish(Cut(), record));
  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  EXPECT_EQ(record.e2el_ns(), 130);
}

TEST(ResponseReaderTest, CutAfterDoneWithoutContentIsClosedMidStream) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(kRole + kDone, kSent + 100, true);
  RequestRecord record;
  reader.Finish(Cut(), record);
  EXPECT_EQ(record.error(), "closed_mid_stream");
}

TEST(ResponseReaderTest, BrokenEndTakesTheCallersFailure) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(Content("abcd"), kSent + 100, true);
  BodyEnd end;
  end.how = BodyEnd::How::kBroken;
  end.failure = {surge::v1::INTERRUPTED, surge::v1::FAILURE_KIND_INTERRUPTED,
                 "interrupted: cut_off_at_stop"};
  RequestRecord record;
  EXPECT_FALSE(reader.Finish(end, record));
  EXPECT_EQ(record.status(), surge::v1::INTERRUPTED);
  EXPECT_EQ(record.error(), "interrupted: cut_off_at_stop");
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_INTERRUPTED);
  EXPECT_EQ(record.ttft_ns(), 100);
  EXPECT_EQ(record.e2el_ns(), 0);
  EXPECT_EQ(record.output_tokens(), 1u);
}

TEST(ResponseReaderTest, WholeStreamWithoutEndMarkIsIncompleteStream) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(Content("Hello"), kSent + 100, true);
  RequestRecord record;
  // The answer's own framing ended it: the connection stays usable.
  EXPECT_TRUE(reader.Finish(Whole(), record));
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.error(), "incomplete_stream");
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_INCOMPLETE_STREAM);
  EXPECT_EQ(record.ttft_ns(), 100);
  EXPECT_EQ(record.output_tokens(), 2u);
  EXPECT_EQ(record.e2el_ns(), 0);
}

TEST(ResponseReaderTest, FinishReasonWithoutDoneIsComplete) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(Content("t") + kFinish, kSent + 100, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  EXPECT_EQ(record.finish_reason(), "stop");
}

TEST(ResponseReaderTest, StreamWithoutTextIsNoContent) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(kRole + kDone, kSent + 100, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.error(), "no_content");
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_NO_CONTENT);
  EXPECT_EQ(record.ttft_ns(), 0);
}

TEST(ResponseReaderTest, BadEventRefusesTheBodyWhateverFollows) {
  ResponseReader reader(AnswerOf());
  EXPECT_TRUE(reader.OnRead(Content("ab"), kSent + 100, true));
  // The bad event refuses the body; the good one after it in the same read
  // is not counted.
  EXPECT_FALSE(reader.OnRead("data: {oops\n\n" + Content("cd"), kSent + 120, true));
  RequestRecord record;
  EXPECT_FALSE(reader.Finish(Whole(), record));
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.error(), "bad_chunk: bad JSON in event: {oops");
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_BAD_CHUNK);
  EXPECT_EQ(record.ttft_ns(), 100);
  EXPECT_THAT(record.itl_ns(), IsEmpty());
  EXPECT_EQ(record.e2el_ns(), 0);
  EXPECT_EQ(record.output_tokens(), 1u);
}

TEST(ResponseReaderTest, RefusalOutranksACutInTheSameRead) {
  ResponseReader reader(AnswerOf());
  EXPECT_FALSE(
      reader.OnRead("data: {\"error\":{\"message\":\"engine died\"}}\n\n", kSent + 100, false));
  RequestRecord record;
  reader.Finish(Cut(), record);
  EXPECT_EQ(record.error(), "stream_error: server error: engine died");
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_STREAM_ERROR);
}

TEST(ResponseReaderTest, UnterminatedBadEventAtTheEndIsRefused) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(Content("ab") + "data: {oops", kSent + 100, true);
  RequestRecord record;
  EXPECT_FALSE(reader.Finish(Whole(), record));
  EXPECT_EQ(record.error(), "bad_chunk: bad JSON in event: {oops");
}

TEST(ResponseReaderTest, AnEventOfAnotherChoiceIsRefused) {
  ResponseReader reader(AnswerOf());
  reader.OnRead("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"}}]}\n\n",
                kSent + 300, true);
  EXPECT_FALSE(reader.OnRead(
      "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B\"}}]}\n\n", kSent + 350, true));
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.error(),
            "multiple_choices: an event of choice 1; surge measures one choice per request (n = "
            "1)");
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_MULTIPLE_CHOICES);
  EXPECT_EQ(record.ttft_ns(), 300);
  EXPECT_THAT(record.itl_ns(), IsEmpty());
}

TEST(ResponseReaderTest, WholeJsonAnswerTimesToItsLastByte) {
  ResponseReader reader(AnswerOf(200, /*stream=*/false, ApiKind::kCompletions));
  const std::string body = R"({"choices":[{"text":"abcdefgh","finish_reason":"length"}],)"
                           R"("usage":{"prompt_tokens":5,"completion_tokens":4}})";
  reader.OnRead(body.substr(0, 20), kSent + 100, true);
  reader.OnRead(body.substr(20), kSent + 140, true);
  RequestRecord record;
  EXPECT_TRUE(reader.Finish(Whole(), record));
  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  EXPECT_EQ(record.ttft_ns(), 140);
  EXPECT_EQ(record.ttfc_ns(), 140);
  EXPECT_EQ(record.e2el_ns(), 140);
  EXPECT_THAT(record.itl_ns(), IsEmpty());
  EXPECT_EQ(record.output_tokens(), 4u);
  EXPECT_EQ(record.input_tokens(), 5u);
  EXPECT_EQ(record.finish_reason(), "length");
}

TEST(ResponseReaderTest, WholeJsonAnswerWithoutUsageIsEstimated) {
  ResponseReader reader(AnswerOf(200, false, ApiKind::kChat));
  reader.OnRead(R"({"choices":[{"message":{"content":"abcdefghi"}}]})", kSent + 80, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.status(), surge::v1::OK);
  EXPECT_EQ(record.output_tokens(), 3u);  // ceil(9 / 4)
  EXPECT_TRUE(record.output_tokens_estimated());
  EXPECT_EQ(record.input_tokens(), kEstimatedInput);
}

TEST(ResponseReaderTest, BadOrEmptyJsonAnswers) {
  {
    ResponseReader reader(AnswerOf(200, false));
    reader.OnRead("{nope", kSent + 10, true);
    RequestRecord record;
    EXPECT_TRUE(reader.Finish(Whole(), record));
    EXPECT_EQ(record.status(), surge::v1::FAILED);
    EXPECT_THAT(record.error(), ::testing::StartsWith("bad_response: bad JSON"));
    EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_BAD_RESPONSE);
  }
  {
    ResponseReader reader(AnswerOf(200, false));
    reader.OnRead(R"({"choices":[{"message":{"content":""}}]})", kSent + 10, true);
    RequestRecord record;
    reader.Finish(Whole(), record);
    EXPECT_EQ(record.error(), "no_content");
    EXPECT_EQ(record.ttft_ns(), 0);
  }
}

TEST(ResponseReaderTest, JsonAnswerCutBeforeItsEndIsIncompleteBody) {
  ResponseReader reader(AnswerOf(200, false, ApiKind::kCompletions));
  // A complete JSON value, but its framing promised more.
  reader.OnRead(R"({"choices":[{"text":"abcdefgh"}]})", kSent + 10, true);
  RequestRecord record;
  EXPECT_FALSE(reader.Finish(Cut(), record));
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.error(), "incomplete_body");
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_INCOMPLETE_BODY);
  EXPECT_EQ(record.http_status(), 200u);
}

TEST(ResponseReaderTest, ErrorAnswerQuotesItsBodyCutAndRedacted) {
  // Streamed request, error status: the body is not read as events.
  ResponseReader reader(AnswerOf(401, /*stream=*/true));
  reader.OnRead("bad key sk-secret-key " + std::string(300, 'z'), kSent + 10, true);
  RequestRecord record;
  EXPECT_TRUE(reader.Finish(Whole(), record));
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.http_status(), 401u);
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_HTTP_4XX);
  const std::string expected = "bad key [API key redacted] " + std::string(300, 'z');
  EXPECT_EQ(record.error(), "http_401: " + expected.substr(0, 200));
  EXPECT_EQ(record.ttft_ns(), 0);
  EXPECT_EQ(record.e2el_ns(), 10);
}

TEST(ResponseReaderTest, ErrorAnswerKeepsOnlyTheStartOfALongBody) {
  ResponseReader reader(AnswerOf(503));
  // Kept while under 4096 bytes: the first read whole, later ones dropped.
  reader.OnRead(std::string(5000, 'a'), kSent + 10, true);
  reader.OnRead("tail", kSent + 20, true);
  RequestRecord record;
  EXPECT_FALSE(reader.Finish(Whole(/*keep_alive=*/false), record));
  EXPECT_EQ(record.error(), "http_503: " + std::string(200, 'a'));
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_HTTP_5XX);
  EXPECT_EQ(record.e2el_ns(), 20);
}

TEST(ResponseReaderTest, EveryFailureKindMatchesItsText) {
  std::vector<RequestRecord> records;
  for (const char* body : {"data: {oops\n\n", "data: [DONE]\n\n", "data: {}\n\n",
                           "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n"
                           "data: [DONE]\n\n"}) {
    ResponseReader reader(AnswerOf());
    reader.OnRead(body, kSent + 1, true);
    records.emplace_back();
    reader.Finish(Whole(), records.back());
  }
  for (const RequestRecord& r : records) {
    EXPECT_EQ(r.failure_kind(), FailureKindFromError(r.error())) << r.error();
  }
}

constexpr int64_t kMsNs = 1'000'000;

// A chat stream that calls a tool: a role delta, the function's name at
// 0.40 s, its arguments in two pieces at 0.50 and 0.60 s, finish_reason
// tool_calls and usage with 9 completion tokens. No delta has content.
const std::string kToolName =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\","
    "\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},"
    "\"finish_reason\":null}]}\n\n";
const std::string kToolArgs1 =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
    "{\"arguments\":\"{\\\"city\\\":\"}}]},\"finish_reason\":null}]}\n\n";
const std::string kToolArgs2 =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
    "{\"arguments\":\"\\\"Paris\\\"}\"}}]},\"finish_reason\":null}]}\n\n";
const std::string kToolFinish =
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
const std::string kUsage9 =
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":9}}\n\n";

TEST(ResponseReaderTest, ToolCallDeltasAreGeneratedOutput) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(kRole, kSent + 20 * kMsNs, true);
  reader.OnRead(kToolName, kSent + 400 * kMsNs, true);
  reader.OnRead(kToolArgs1, kSent + 500 * kMsNs, true);
  reader.OnRead(kToolArgs2, kSent + 600 * kMsNs, true);
  reader.OnRead(kToolFinish + kUsage9 + kDone, kSent + 610 * kMsNs, true);
  RequestRecord record;
  EXPECT_TRUE(reader.Finish(Whole(), record));
  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  EXPECT_EQ(record.ttft_ns(), 400 * kMsNs);
  // A tool call is the answer itself, not reasoning: TTFC too.
  EXPECT_EQ(record.ttfc_ns(), 400 * kMsNs);
  EXPECT_THAT(record.itl_ns(), ElementsAre(100 * kMsNs, 100 * kMsNs));
  EXPECT_EQ(record.e2el_ns(), 610 * kMsNs);
  EXPECT_EQ(record.output_tokens(), 9u);
  EXPECT_FALSE(record.output_tokens_estimated());
  EXPECT_EQ(record.finish_reason(), "tool_calls");
}

TEST(ResponseReaderTest, ToolCallTextIsEstimatedWithoutUsage) {
  ResponseReader reader(AnswerOf());
  reader.OnRead(kToolName + kToolArgs1 + kToolArgs2 + kToolFinish + kDone, kSent + 10, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  // "get_weather" + "{\"city\":" + "\"Paris\"}": 11 + 8 + 8 bytes, ceil(27 / 4).
  EXPECT_EQ(record.output_tokens(), 7u);
  EXPECT_TRUE(record.output_tokens_estimated());
}

TEST(ResponseReaderTest, WholeAnswerWithToolCallsIsGeneratedOutput) {
  ResponseReader reader(AnswerOf(200, /*stream=*/false));
  reader.OnRead(
      R"({"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[)"
      R"({"id":"call_1","type":"function","function":{"name":"get_weather",)"
      R"("arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]})",
      kSent + 600 * kMsNs, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  EXPECT_EQ(record.ttft_ns(), 600 * kMsNs);
  EXPECT_EQ(record.ttfc_ns(), 600 * kMsNs);
  EXPECT_EQ(record.finish_reason(), "tool_calls");
  // No usage: ceil(("get_weather" + "{\"city\":\"Paris\"}") 27 bytes / 4).
  EXPECT_EQ(record.output_tokens(), 7u);
}

TEST(ResponseReaderTest, UsageWithoutAnyStreamedTokenIsNoStreamedTokens) {
  // Tool-call-like deltas of a shape surge does not read (no function):
  // the usage says 9 tokens came, none was streamed as a token event.
  ResponseReader reader(AnswerOf());
  reader.OnRead(kRole + "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}\n\n",
                kSent + 400 * kMsNs, true);
  reader.OnRead(kToolFinish + kUsage9 + kDone, kSent + 600 * kMsNs, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_NO_STREAMED_TOKENS);
  EXPECT_EQ(record.error(),
            "no_streamed_tokens: usage counts 9 output tokens, but no event carried generated "
            "text");
  EXPECT_EQ(record.ttft_ns(), 0);
  EXPECT_EQ(record.output_tokens(), 9u);
  EXPECT_EQ(record.finish_reason(), "tool_calls");

  // [DONE] alone (or a usage of 0 tokens): nothing generated, no_content.
  for (const std::string& body :
       {kDone,
        std::string("data: {\"choices\":[],\"usage\":{\"completion_tokens\":0}}\n\n") + kDone}) {
    ResponseReader empty(AnswerOf());
    empty.OnRead(body, kSent + 10, true);
    RequestRecord r;
    empty.Finish(Whole(), r);
    EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_NO_CONTENT) << body;
    EXPECT_EQ(r.error(), "no_content");
  }
}

ReaderSetup Encoded(const char* content_encoding, bool stream = true, unsigned http_status = 200) {
  ReaderSetup setup = AnswerOf(http_status, stream);
  setup.content_encoding = content_encoding;
  return setup;
}

TEST(ResponseReaderTest, GzipStreamIsDecodedAndTimedByItsEvents) {
  const std::vector<std::string> gz = surge::testing::CompressPieces(
      {kRole + Content("a"), Content("b"), Content("c"), kFinish + kUsage + kDone});
  ResponseReader reader(Encoded("gzip"));
  reader.OnRead(gz[0], kSent + 200 * kMsNs, true);
  reader.OnRead(gz[1], kSent + 400 * kMsNs, true);
  reader.OnRead(gz[2], kSent + 600 * kMsNs, true);
  reader.OnRead(gz[3], kSent + 610 * kMsNs, true);
  RequestRecord record;
  EXPECT_TRUE(reader.Finish(Whole(), record));
  EXPECT_EQ(record.status(), surge::v1::OK) << record.error();
  EXPECT_EQ(record.ttft_ns(), 200 * kMsNs);
  EXPECT_THAT(record.itl_ns(), ElementsAre(200 * kMsNs, 200 * kMsNs));
  EXPECT_EQ(record.e2el_ns(), 610 * kMsNs);
  EXPECT_EQ(record.output_tokens(), 3u);
}

TEST(ResponseReaderTest, GzipAndDeflateWholeAnswersParse) {
  const std::string body =
      R"({"choices":[{"message":{"content":"abcdefgh"},"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":5,"completion_tokens":2}})";
  for (const auto& [coding, wrapper] : std::vector<std::pair<const char*, surge::testing::Wrapper>>{
           {"gzip", surge::testing::Wrapper::kGzip},
           {"deflate", surge::testing::Wrapper::kZlib},
           {"deflate", surge::testing::Wrapper::kRaw}}) {
    ResponseReader reader(Encoded(coding, /*stream=*/false));
    const std::string compressed = surge::testing::Compress(body, wrapper);
    reader.OnRead(compressed.substr(0, 5), kSent + 10, true);
    reader.OnRead(compressed.substr(5), kSent + 20, true);
    RequestRecord record;
    reader.Finish(Whole(), record);
    EXPECT_EQ(record.status(), surge::v1::OK) << coding << ": " << record.error();
    EXPECT_EQ(record.output_tokens(), 2u);
    EXPECT_EQ(record.finish_reason(), "stop");
    EXPECT_EQ(record.ttft_ns(), 20);
  }
}

TEST(ResponseReaderTest, UndecodableCodingsFailByName) {
  ResponseReader br(Encoded("br"));
  EXPECT_FALSE(br.OnRead("abc", kSent + 10, true));
  RequestRecord record;
  EXPECT_FALSE(br.Finish(Refused(), record));
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_UNSUPPORTED_CONTENT_ENCODING);
  EXPECT_EQ(record.error(), "unsupported_content_encoding: br");

  // gzip named, something else sent: the stream is a bad chunk, not bad JSON.
  ResponseReader corrupt(Encoded("gzip"));
  EXPECT_FALSE(corrupt.OnRead(kRole + Content("a"), kSent + 10, true));
  RequestRecord bad;
  corrupt.Finish(Refused(), bad);
  EXPECT_EQ(bad.failure_kind(), surge::v1::FAILURE_KIND_BAD_CHUNK);
  EXPECT_THAT(bad.error(), ::testing::StartsWith("bad_chunk: gzip body does not decode: "));

  // An error answer in br keeps its status; its body is not quoted.
  ResponseReader error(Encoded("br", true, 503));
  EXPECT_TRUE(error.OnRead("abc", kSent + 10, true));
  RequestRecord failed;
  error.Finish(Whole(), failed);
  EXPECT_EQ(failed.failure_kind(), surge::v1::FAILURE_KIND_HTTP_5XX);
  EXPECT_EQ(failed.error(), "http_503: (body in br, not decoded)");
}

TEST(ResponseReaderTest, RedirectNamesItsLocation) {
  ReaderSetup setup = AnswerOf(307);
  setup.location = "/v2/completions";
  ResponseReader reader(setup);
  reader.OnRead("<html>moved</html>", kSent + 10, true);
  RequestRecord record;
  reader.Finish(Whole(), record);
  EXPECT_EQ(record.status(), surge::v1::FAILED);
  EXPECT_EQ(record.http_status(), 307u);
  EXPECT_EQ(record.failure_kind(), surge::v1::FAILURE_KIND_HTTP_OTHER);
  EXPECT_EQ(record.error(), "http_307: redirect to /v2/completions (not followed)");
  EXPECT_EQ(RedirectLocation(record.error()), "/v2/completions");

  // Without a Location, the body as for any other status.
  ResponseReader bare(AnswerOf(302));
  bare.OnRead("moved", kSent + 10, true);
  RequestRecord plain;
  bare.Finish(Whole(), plain);
  EXPECT_EQ(plain.error(), "http_302: moved");
  EXPECT_EQ(RedirectLocation(plain.error()), "");
}

}  // namespace
}  // namespace surge::worker
