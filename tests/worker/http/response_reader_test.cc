// ResponseReader fed body bytes with made-up arrival times: every timing is
// exact, no socket and no clock involved.
#include "worker/http/response_reader.h"

#include <cstdint>
#include <string>
#include <vector>

#include "common/failure_kind.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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
  for (const char* body : {"data: {oops\n\n", "data: [DONE]\n\n", "data: {}\n\n"}) {
    ResponseReader reader(AnswerOf());
    reader.OnRead(body, kSent + 1, true);
    records.emplace_back();
    reader.Finish(Whole(), records.back());
  }
  for (const RequestRecord& r : records) {
    EXPECT_EQ(r.failure_kind(), FailureKindFromError(r.error())) << r.error();
  }
}

}  // namespace
}  // namespace surge::worker
