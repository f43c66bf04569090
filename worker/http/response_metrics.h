// Per-request latency and token metrics from response timestamps
// (R-MET-1): TTFT, ITL, E2EL and token counts. Pure: the caller passes the
// times it read from its Clock.
#ifndef SURGE_WORKER_HTTP_RESPONSE_METRICS_H_
#define SURGE_WORKER_HTTP_RESPONSE_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "surge/v1/record.pb.h"
#include "worker/http/openai_request.h"

namespace surge::worker {

// Accumulates the timeline of one response. All times are absolute local
// steady-clock nanoseconds (ToNanos(clock.Now())). Not thread-safe.
class ResponseMetrics {
 public:
  // `sent_ns`: when the request's first byte was handed to the socket (R-ACT-2).
  explicit ResponseMetrics(int64_t sent_ns) : sent_ns_(sent_ns) {}

  // A streamed event with `content_bytes` > 0 bytes of generated text (any
  // channel: reasoning, answer content or tool calls) arrived at `now_ns`. The first one sets
  // TTFT; each later one adds an ITL sample (the gap to the previous such
  // event). The bytes add up for the output-token estimate. `has_answer`:
  // some of the bytes are the answer itself (content, not reasoning); the
  // first such event sets TTFC.
  void OnContentEvent(int64_t now_ns, size_t content_bytes, bool has_answer = true);
  // A whole (non-streamed) answer with `content_bytes` > 0 bytes of
  // generated text arrived at `now_ns`: TTFT (and TTFC when `has_answer`)
  // is the time to the whole answer, no ITL samples.
  void OnWholeAnswer(int64_t now_ns, size_t content_bytes, bool has_answer = true);
  // The server said why the answer ended (choices[0].finish_reason); the
  // last one wins.
  void OnFinishReason(std::string reason) { finish_reason_ = std::move(reason); }
  // The server reported usage (the last report wins).
  void OnUsage(const Usage& usage) { usage_ = usage; }
  // The last byte of the response arrived at `now_ns` (E2EL).
  void OnLastByte(int64_t now_ns) { last_byte_ns_ = now_ns; }

  int64_t sent_ns() const { return sent_ns_; }
  // Time of the last byte so far; 0 before any.
  int64_t last_byte_ns() const { return last_byte_ns_; }
  // Number of content events (or 1 for a whole answer with content).
  uint32_t content_events() const { return content_events_; }
  // Bytes of generated content so far (all events together).
  uint64_t content_bytes() const { return content_bytes_; }
  bool has_usage() const { return usage_.has_value(); }
  // The server's usage.completion_tokens; 0 without usage.
  uint32_t usage_output_tokens() const { return usage_ ? usage_->completion_tokens : 0; }

  // Writes sent_ns, ttft_ns, ttfc_ns, itl_ns, e2el_ns, finish_reason,
  // input_tokens, output_tokens and output_tokens_estimated, and cached_tokens with
  // cached_tokens_reported (usage.prompt_tokens_details.cached_tokens, when the usage has it).
  // Token counts come from the server's usage when it sent one; otherwise input_tokens = `estimated_input_tokens` and output_tokens =
  // EstimateTokensForBytes(content_bytes()) with output_tokens_estimated = true: the same ~4
  // bytes/token rule for a streamed answer (over the concatenated content of all its events) as for
  // a whole one. Counting SSE events instead would be wrong whenever a server puts several tokens
  // into one event.
  void FillRecord(uint32_t estimated_input_tokens, surge::v1::RequestRecord& record) const;

 private:
  int64_t sent_ns_;
  int64_t first_content_ns_ = 0;
  int64_t first_answer_ns_ = 0;
  bool has_answer_ = false;  // first_answer_ns_ is valid
  int64_t last_content_ns_ = 0;
  int64_t last_byte_ns_ = 0;
  uint32_t content_events_ = 0;
  uint64_t content_bytes_ = 0;
  std::vector<int64_t> itl_ns_;
  std::optional<Usage> usage_;
  std::string finish_reason_;
};

// The short-output rule (record.short_output): true when `record` is OK,
// the request asked for `ignore_eos`, record.max_tokens() > 0 and the answer
// stopped early: the server's usage (not an estimate) counts fewer than
// max_tokens output tokens, or its finish_reason is set and is not "length".
bool IsShortOutput(const surge::v1::RequestRecord& record, bool ignore_eos);

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_RESPONSE_METRICS_H_
