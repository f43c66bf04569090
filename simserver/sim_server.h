// The built-in simulated OpenAI-compatible server (R-UI-1): what `surge run`
// sends to when no target is given, and what the HTTP client's tests talk
// to. Its options are a SimServerConfig (config.proto). Boost.Beast stays
// behind a pimpl; the answers themselves are simserver/answer_model.h.
#ifndef SURGE_SIMSERVER_SIM_SERVER_H_
#define SURGE_SIMSERVER_SIM_SERVER_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::simserver {

// An HTTP/1.1 server (keep-alive, any number of concurrent connections)
// that answers like an OpenAI-compatible inference server:
//  - GET /v1/models → {"object":"list","data":[{"id":<model>,...}]};
//  - POST /v1/chat/completions (body with "messages") and
//    POST /v1/completions (body with "prompt"): max_tokens (or
//    max_completion_tokens; default 16) tokens, each the text " tok".
//    With "stream": true the answer is SSE over chunked encoding: for chat a
//    role-only first event ({"role":"assistant"}) at once, then token k
//    (k = 0..n-1) at start + ttft_ms + k·itl_ms, where start is when the
//    request was read; with stream_options.include_usage a last chunk with
//    "choices": [] and usage; then "data: [DONE]". Without streaming, one
//    JSON answer at start + ttft_ms + (n-1)·itl_ms, with usage.
//    prompt_tokens = EstimateTokens(prompt, or the concatenated message
//    contents); completion_tokens = n. A chat request with a non-empty
//    "tools" array (and "tool_choice" not "none") is answered with one tool
//    call instead of text, on the same timing: token 0's event carries the
//    function's name, the others the arguments' pieces, finish_reason
//    "tool_calls" (AnswerWriter, answer_model.h).
//  - GET /metrics → the server's metrics in the Prometheus text format
//    under vLLM's names (simserver/server_metrics.h);
//  - bad JSON or fields → 400, unknown path → 404, wrong method → 405, all
//    with an OpenAI-style {"error":{"message":...}} body.
// Deadlines are absolute (start + offset), so delays do not accumulate.
// With max_num_seqs > 0 the tokens are timed by the queueing model instead
// (simserver/batch_model.h, docs/DESIGN.md "Queueing model of the simulated
// server"): token k is due when the engine step that generates it ends;
// ttft_ms and itl_ms are not used.
// With tls_cert_file and tls_key_file it speaks https (TLS 1.2+) only.
//
// Fault injection: the n-th valid completion request the server reads
// (n = 0, 1, ...) gets the fault kind chosen by u_n, a uniform [0, 1) number
// that depends only on (fault_seed, n): the kinds take consecutive slices of
// [0, 1) of their fractions' sizes in the order 429, 500, 503, reset,
// malformed, stall, split, error_event, and u_n beyond them means no fault.
// Requests that arrive one after another thus meet the same faults on every
// run with the same seed. What each kind does (k = min(fault_after_tokens,
// max_tokens); a mid-stream fault comes after the role event and k tokens,
// so with k = max_tokens just before usage and [DONE]):
//  - 429/500/503: at once, an OpenAI-style error answer with that status
//    (keep-alive kept);
//  - reset: the connection is closed (streams: after k tokens; non-streamed:
//    after the header and half of the body);
//  - malformed: "data: surge-sim malformed chunk" (not JSON) after k tokens,
//    then the rest of the stream; non-streamed: a 200 body that is not JSON;
//  - stall: no byte for fault_stall_ms after k tokens (later tokens shift by
//    as much); non-streamed: the answer comes fault_stall_ms later;
//  - split: every HTTP chunk (or the whole non-streamed answer) is written
//    in pieces of 1..11 bytes with a 100 µs pause between them;
//  - error_event: data: {"error":{"message":"simulated engine failure",...}}
//    after k tokens, then [DONE]; non-streamed: that object as a 200 body.
// Thread-safety: all methods are thread-safe.
class SimServer {
 public:
  // Validates `config` (CheckSimServerConfig), loads the TLS files, opens
  // the request log and binds the listening socket (it does not accept
  // until Start()). Every field counts as given: a config at its declared
  // defaults is coordinator::WithDefaults<SimServerConfig>(). Errors:
  // INVALID_ARGUMENT for a bad address, negative delays, threads < 1, bad
  // fault fractions, unreadable TLS files or an unwritable request log;
  // UNAVAILABLE when the address cannot be bound (e.g. the port is in use).
  static absl::StatusOr<std::unique_ptr<SimServer>> Create(
      const surge::v1::SimServerConfig& config);

  // Calls Stop().
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  // The bound port (the chosen one when config.port was 0).
  uint16_t port() const;

  // Starts accepting and runs config.threads I/O threads in the background.
  // Calls after the first (and after Stop) do nothing.
  void Start();

  // Closes the listener and every connection (streams end abruptly) and
  // joins the I/O threads. Idempotent.
  void Stop();

  // Responses (of any status) written completely so far.
  uint64_t requests_served() const;

 private:
  class Impl;
  explicit SimServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace surge::simserver

#endif  // SURGE_SIMSERVER_SIM_SERVER_H_
