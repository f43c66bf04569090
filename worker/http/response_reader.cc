#include "worker/http/response_reader.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/api_key.h"
#include "common/failure_kind.h"
#include "common/utf8.h"

namespace surge::worker {
namespace {

using surge::v1::RequestRecord;

// Characters of an error answer's body quoted in the record's error.
constexpr size_t kErrorBodyChars = 200;
// Bytes of a non-200 body kept (the rest is read and dropped so that the
// connection can be reused).
constexpr size_t kErrorBodyKeep = 4096;

}  // namespace

ResponseReader::ResponseReader(const ReaderSetup& setup)
    : kind_(setup.kind),
      http_status_(setup.http_status),
      ok_status_(setup.http_status == 200),
      sse_(ok_status_ && setup.stream),
      estimated_input_(setup.estimated_input),
      keep_answer_text_(setup.keep_answer_text),
      api_key_(setup.api_key),
      location_(setup.location),
      decoder_(setup.content_encoding),
      metrics_(setup.sent_ns) {
  if (ok_status_ && !decoder_.supported()) {
    // Nothing of it can be read: refused before its first byte.
    Refuse(surge::v1::FAILURE_KIND_UNSUPPORTED_CONTENT_ENCODING,
           absl::StrCat("unsupported_content_encoding: ",
                        ToValidUtf8(decoder_.name(), kErrorBodyChars)));
  }
}

bool ResponseReader::OnRead(std::string_view body_bytes, int64_t now_ns, bool read_ok) {
  if (!body_bytes.empty() && refusal_.empty()) {
    const std::string_view text = DecodedBytes(body_bytes);
    if (sse_) {
      for (std::string& event : sse_parser_.Feed(text)) {
        if (!OnEvent(event, now_ns)) break;
      }
    } else if (ok_status_ || body_.size() < kErrorBodyKeep) {
      body_.append(text);
    }
  }
  if (read_ok) metrics_.OnLastByte(now_ns);
  return refusal_.empty();
}

std::string_view ResponseReader::DecodedBytes(std::string_view body_bytes) {
  if (decoder_.identity()) return body_bytes;
  decoded_.clear();
  // An error answer in a coding surge does not decode: its body is not quoted.
  if (!decoder_.supported()) return {};
  absl::Status decoded = decoder_.Decode(body_bytes, decoded_);
  if (!decoded.ok() && ok_status_) {
    const char* prefix = sse_ ? "bad_chunk: " : "bad_response: ";
    Refuse(sse_ ? surge::v1::FAILURE_KIND_BAD_CHUNK : surge::v1::FAILURE_KIND_BAD_RESPONSE,
           absl::StrCat(prefix, ToValidUtf8(std::string(decoded.message()), kErrorBodyChars)));
    return {};
  }
  // An error answer keeps what decoded before any error.
  return decoded_;
}

void ResponseReader::Refuse(surge::v1::FailureKind kind, std::string error) {
  refusal_kind_ = kind;
  refusal_ = std::move(error);
}

bool ResponseReader::OnEvent(const std::string& event, int64_t now_ns) {
  if (event == "[DONE]") {
    saw_done_ = true;
    return true;
  }
  absl::StatusOr<ParsedAnswer> parsed = ParseStreamEvent(kind_, event);
  if (!parsed.ok()) {
    // Not JSON: a bad chunk; an {"error": ...} event: the server's.
    const bool bad_chunk = parsed.status().code() == absl::StatusCode::kInvalidArgument;
    Refuse(bad_chunk ? surge::v1::FAILURE_KIND_BAD_CHUNK : surge::v1::FAILURE_KIND_STREAM_ERROR,
           absl::StrCat(bad_chunk ? "bad_chunk: " : "stream_error: ",
                        std::string(parsed.status().message())));
    return false;
  }
  if (parsed->choice_index != 0) {
    // n > 1 (or best_of): the choices' chunks interleave, and their gaps
    // are not inter-token latencies. Refused at start; a server that sends
    // them anyway fails the request rather than mixing them.
    Refuse(surge::v1::FAILURE_KIND_MULTIPLE_CHOICES,
           absl::StrCat("multiple_choices: an event of choice ", parsed->choice_index,
                        "; surge measures one choice per request (n = 1)"));
    return false;
  }
  if (!parsed->content.empty()) {
    metrics_.OnContentEvent(now_ns, parsed->content.size(), parsed->answer_bytes > 0);
    KeepAnswerText(*parsed);
  }
  if (parsed->usage.has_value()) metrics_.OnUsage(*parsed->usage);
  if (parsed->finished) metrics_.OnFinishReason(parsed->finish_reason);
  saw_finish_ = saw_finish_ || parsed->finished;
  return true;
}

bool ResponseReader::Finish(const BodyEnd& end, RequestRecord& record) {
  record.set_http_status(http_status_);
  if (end.how == BodyEnd::How::kWhole && sse_ && refusal_.empty()) {
    // The body ended cleanly: an event left unterminated by the last blank
    // line (e.g. "data: [DONE]\n" then the end) still counts.
    for (const std::string& event : sse_parser_.Finish()) {
      if (!OnEvent(event, metrics_.last_byte_ns())) break;
    }
  }
  if (!refusal_.empty()) {
    metrics_.FillRecord(estimated_input_, record);
    record.set_e2el_ns(0);
    SetFailure(record, surge::v1::FAILED, refusal_kind_, refusal_);
    return false;
  }
  switch (end.how) {
    case BodyEnd::How::kCut:
      FinishCut(record);
      return false;
    case BodyEnd::How::kBroken:
    case BodyEnd::How::kRefused:  // not reached: a refusal is handled above
      metrics_.FillRecord(estimated_input_, record);
      record.set_e2el_ns(0);
      SetFailure(record, end.failure.status, end.failure.kind, end.failure.error);
      return false;
    case BodyEnd::How::kWhole:
      break;
  }
  if (!ok_status_) {
    FinishErrorStatus(record);
  } else if (sse_) {
    FinishStream(record);
  } else {
    FinishWholeAnswer(record);
  }
  if (keep_answer_text_ && record.status() == surge::v1::OK) {
    record.set_answer_text(std::move(answer_text_));
  }
  return end.keep_alive;
}

void ResponseReader::KeepAnswerText(const ParsedAnswer& answer) {
  if (!keep_answer_text_) return;
  // The answer proper is the content's tail: reasoning comes first.
  const size_t n = std::min(answer.answer_bytes, answer.content.size());
  answer_text_.append(answer.content, answer.content.size() - n, n);
}

void ResponseReader::FinishCut(RequestRecord& record) const {
  metrics_.FillRecord(estimated_input_, record);
  if (sse_ && saw_done_ && metrics_.content_events() > 0) {
    // [DONE] arrived; only the chunked terminator is missing.
    record.set_status(surge::v1::OK);
    return;
  }
  record.set_e2el_ns(0);
  // A whole answer cut before its Content-Length or its last chunk:
  // incomplete_body (it would otherwise surface as bad JSON, or even parse
  // when the cut falls after a complete JSON value).
  if (ok_status_ && !sse_) {
    SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_INCOMPLETE_BODY,
               "incomplete_body");
  } else {
    SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_CLOSED_MID_STREAM,
               "closed_mid_stream");
  }
}

void ResponseReader::FinishErrorStatus(RequestRecord& record) const {
  metrics_.FillRecord(estimated_input_, record);
  // Redacted before it is cut short, so no piece of the key survives.
  if (http_status_ >= 300 && http_status_ < 400 && !location_.empty()) {
    // surge does not follow redirects: say where the server points.
    std::string location = location_;
    client::RedactApiKey(&location, api_key_);
    SetFailure(record, surge::v1::FAILED, HttpFailureKind(http_status_),
               RedirectError(http_status_, ToValidUtf8(location, kErrorBodyChars)));
    return;
  }
  std::string quoted =
      decoder_.supported() ? body_ : absl::StrCat("(body in ", decoder_.name(), ", not decoded)");
  client::RedactApiKey(&quoted, api_key_);
  SetFailure(record, surge::v1::FAILED, HttpFailureKind(http_status_),
             absl::StrCat("http_", http_status_, ": ", ToValidUtf8(quoted, kErrorBodyChars)));
}

void ResponseReader::FinishStream(RequestRecord& record) const {
  metrics_.FillRecord(estimated_input_, record);
  if (!saw_done_ && !saw_finish_) {
    // The body ended by its framing (a close for a close-delimited body, the
    // last chunk, Content-Length reached), but the stream never said it was
    // over: neither [DONE] nor a finish_reason. The answer may be cut; keep
    // what arrived (TTFT, ITL, tokens) but do not call it a success, and no
    // E2EL for an answer not known whole.
    record.set_e2el_ns(0);
    SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_INCOMPLETE_STREAM,
               "incomplete_stream");
  } else if (metrics_.content_events() == 0 && metrics_.usage_output_tokens() > 0) {
    // The server generated tokens but streamed none of them (e.g. a kind of
    // delta surge does not read): no TTFT or ITL to measure.
    SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_NO_STREAMED_TOKENS,
               absl::StrCat("no_streamed_tokens: usage counts ", metrics_.usage_output_tokens(),
                            " output tokens, but no event carried generated text"));
  } else if (metrics_.content_events() == 0) {
    SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_NO_CONTENT, "no_content");
  } else {
    record.set_status(surge::v1::OK);
  }
}

void ResponseReader::FinishWholeAnswer(RequestRecord& record) {
  absl::StatusOr<ParsedAnswer> answer = ParseCompletionBody(kind_, body_);
  if (!answer.ok()) {
    metrics_.FillRecord(estimated_input_, record);
    SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_BAD_RESPONSE,
               absl::StrCat("bad_response: ", std::string(answer.status().message())));
    return;
  }
  if (!answer->content.empty()) {
    metrics_.OnWholeAnswer(metrics_.last_byte_ns(), answer->content.size(),
                           answer->answer_bytes > 0);
    KeepAnswerText(*answer);
  }
  if (answer->usage.has_value()) metrics_.OnUsage(*answer->usage);
  if (answer->finished) metrics_.OnFinishReason(answer->finish_reason);
  metrics_.FillRecord(estimated_input_, record);
  if (answer->content.empty() && record.output_tokens() == 0) {
    SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_NO_CONTENT, "no_content");
  } else {
    record.set_status(surge::v1::OK);
  }
}

}  // namespace surge::worker
