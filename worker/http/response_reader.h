// The reading of one HTTP answer's body into a RequestRecord: SSE events or
// a whole JSON answer, their arrival times, usage, finish reason, and the
// failure the answer amounts to. Pure: the caller reads the socket, stamps
// each read with its Clock and feeds the body bytes here (the HTTP framing,
// Content-Length or chunking, is the caller's HTTP parser's).
#ifndef SURGE_WORKER_HTTP_RESPONSE_READER_H_
#define SURGE_WORKER_HTTP_RESPONSE_READER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "surge/v1/record.pb.h"
#include "worker/http/body_decoder.h"
#include "worker/http/openai_request.h"
#include "worker/http/response_metrics.h"
#include "worker/http/sse_parser.h"

namespace surge::worker {

// A failure decided outside the reader (by whoever knows about timeouts,
// stops and socket errors), written into the record as it is.
struct ReadFailure {
  surge::v1::RequestStatus status = surge::v1::FAILED;
  surge::v1::FailureKind kind = surge::v1::FAILURE_KIND_OTHER;
  std::string error;
};

// How the reading of a body stopped.
struct BodyEnd {
  enum class How {
    // The body's framing said it is whole (Content-Length reached, the
    // last chunk read, or a clean close of a close-delimited body).
    kWhole,
    // The peer closed the connection inside the body's framing.
    kCut,
    // Any other end: a socket error, a timeout, a stop, malformed
    // chunking; `failure` says what it means.
    kBroken,
    // The reader refused the body (OnRead returned false); no more was
    // read.
    kRefused,
  };
  How how = How::kWhole;
  // kWhole: the answer lets the connection carry another request.
  bool keep_alive = false;
  // kBroken: what the record says (unless the reader refused the body
  // first).
  ReadFailure failure;
};

// What the reader needs to know about the request and its answer's header.
struct ReaderSetup {
  ApiKind kind = ApiKind::kChat;
  // The request asked for a streamed answer.
  bool stream = true;
  // The status line's code.
  unsigned http_status = 0;
  // When the request's first byte was handed to the socket (absolute local
  // steady ns); every latency counts from it.
  int64_t sent_ns = 0;
  // EstimateTokens(prompt): the input tokens when the server sends no usage.
  uint32_t estimated_input = 0;
  // Keep the answer's text (the answer proper: chat content and tool calls,
  // or completion text; no reasoning) for RequestRecord.answer_text, which
  // Finish sets for an OK answer: a session's next turn sends it back.
  bool keep_answer_text = false;
  // Redacted from the quoted error body (never quote the key back).
  std::string_view api_key;
  // The answer's Content-Encoding header ("" when none): the body is
  // decoded (BodyDecoder) before anything reads it.
  std::string_view content_encoding = {};
  // The answer's Location header ("" when none): quoted for a 3xx.
  std::string_view location = {};
};

// Reads one answer. A gzip or deflate body is decoded as it arrives (the
// decoded bytes of a read count at that read's time). A 200 answer to a
// streamed request is read as Server-Sent Events: every event with
// generated text (content, reasoning or tool calls: ParsedAnswer.content)
// is stamped with the time of the read that completed it (TTFT, TTFC,
// ITL); "data: [DONE]" and a finish_reason mark the stream's end; a bad
// event refuses the body. Any other answer is kept (whole for a 200, its
// first 4096 bytes otherwise) and parsed at the end. Not thread-safe: one
// reader per answer.
//
// Outcomes (Finish), in this order:
//  - a refused body: FAILED "unsupported_content_encoding: <name>" (a 200
//    answer in a coding BodyDecoder does not decode, refused at the first
//    read), "bad_chunk: <msg>" (data not a JSON object, or a stream whose
//    gzip/deflate does not decode), "bad_response: <msg>" (a whole answer
//    whose gzip/deflate does not decode), "stream_error: <msg>" (an
//    {"error": ...} event), "multiple_choices: ..." (an event of a choice
//    other than 0); e2el_ns 0;
//  - kCut after [DONE] and some content: OK (only the chunked terminator
//    is missing), E2EL to the last clean read;
//  - kCut otherwise: "incomplete_body" (a non-streamed 200 answer),
//    else "closed_mid_stream"; e2el_ns 0;
//  - kBroken: the end's own failure; e2el_ns 0;
//  - a non-200 status: "http_<code>: <first 200 chars of the body>"; a 3xx
//    with a Location: "http_<code>: redirect to <location> (not followed)";
//  - a stream: "incomplete_stream" when neither [DONE] nor a finish_reason
//    came (e2el_ns 0); when no event had text, "no_streamed_tokens: ..."
//    if its usage counts output tokens, else "no_content"; else OK;
//  - a whole answer: "bad_response: <msg>" for bad JSON, "no_content"
//    when it has neither text nor output tokens, else OK.
// Timings, tokens (usage, else estimated) and the finish reason so far are
// written in every case.
class ResponseReader {
 public:
  explicit ResponseReader(const ReaderSetup& setup);

  // One read of the connection ended at `now_ns` and gave `body_bytes` (may
  // be empty: a read of framing only). `read_ok`: the read ended without an
  // error, so it is the answer's latest byte so far (E2EL). Returns false
  // once the body is refused (a bad event): stop reading and Finish with
  // kRefused.
  bool OnRead(std::string_view body_bytes, int64_t now_ns, bool read_ok);

  // Writes the outcome of the answer into `record` (http_status, timings,
  // tokens, finish_reason, status and error, as listed above). Returns
  // whether the connection may carry another request: the body was read
  // whole and `end.keep_alive`. Call once.
  bool Finish(const BodyEnd& end, surge::v1::RequestRecord& record);

 private:
  // An SSE event's data: [DONE], or a JSON chunk; false (and refusal_ set)
  // for a bad one.
  bool OnEvent(const std::string& event, int64_t now_ns);
  // The body bytes of one read as the answer's text: `body_bytes` itself,
  // or decoded into decoded_. Refuses a 200 body that does not decode.
  std::string_view DecodedBytes(std::string_view body_bytes);
  void Refuse(surge::v1::FailureKind kind, std::string error);
  void FinishCut(surge::v1::RequestRecord& record) const;
  void FinishErrorStatus(surge::v1::RequestRecord& record) const;
  void FinishStream(surge::v1::RequestRecord& record) const;
  void FinishWholeAnswer(surge::v1::RequestRecord& record);
  // Appends the answer proper of one event or whole answer to answer_text_
  // (with keep_answer_text_).
  void KeepAnswerText(const ParsedAnswer& answer);

  const ApiKind kind_;
  const unsigned http_status_;
  const bool ok_status_;
  const bool sse_;
  const uint32_t estimated_input_;
  const bool keep_answer_text_;
  std::string answer_text_;  // with keep_answer_text_
  const std::string api_key_;
  const std::string location_;
  BodyDecoder decoder_;
  std::string decoded_;  // the current read's bytes, decoded (unless identity)
  ResponseMetrics metrics_;
  SseParser sse_parser_;
  std::string body_;  // non-SSE body (kept whole for 200, a prefix otherwise)
  // Set when a bad event refused the body.
  std::string refusal_;
  surge::v1::FailureKind refusal_kind_ = surge::v1::FAILURE_KIND_STREAM_ERROR;
  // The stream's own end marks: "data: [DONE]", a choice's finish_reason.
  bool saw_done_ = false;
  bool saw_finish_ = false;
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_RESPONSE_READER_H_
