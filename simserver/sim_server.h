// The built-in simulated OpenAI-compatible server (SPEC R-UI-1): what
// `surge run` sends to when no target is given, and what the HTTP client's
// tests talk to. Boost.Beast stays behind a pimpl.
#ifndef SURGE_SIMSERVER_SIM_SERVER_H_
#define SURGE_SIMSERVER_SIM_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::simserver {

// Options of a SimServer. Times are milliseconds (doubles; fractions allowed).
struct SimServerOptions {
  std::string address = "127.0.0.1";  // bind address (IPv4 or IPv6 literal)
  uint16_t port = 0;                  // 0 = pick a free port
  double ttft_ms = 20;                // delay before the first token, >= 0
  double itl_ms = 2;                  // delay between tokens, >= 0
  std::string model = "surge-sim";    // the one model listed at /v1/models
  int threads = 1;                    // I/O threads, >= 1

  // https when both are set: PEM files of the certificate (chain) and of
  // its private key. Default empty = plain http.
  std::string tls_cert_file;
  std::string tls_key_file;

  // Fault injection (issue 4): the fraction of completion requests that get
  // each fault kind, each in [0, 1], their sum <= 1. Default 0 = none.
  double fault_429 = 0;          // answered HTTP 429 (rate limited)
  double fault_500 = 0;          // answered HTTP 500
  double fault_503 = 0;          // answered HTTP 503 (overloaded)
  double fault_reset = 0;        // connection closed after fault_after_tokens tokens
  double fault_malformed = 0;    // a non-JSON "data:" line after fault_after_tokens tokens
  double fault_stall = 0;        // nothing sent for fault_stall_ms after fault_after_tokens tokens
  double fault_split = 0;        // every event written in small pieces (tiny pauses between)
  double fault_error_event = 0;  // an {"error": ...} event after fault_after_tokens tokens
  uint32_t fault_after_tokens = 1;  // tokens sent before a mid-stream fault
  double fault_stall_ms = 1000;     // length of a stall, >= 0
  uint64_t fault_seed = 0;          // seed of the fault draws

  // When set, a file (created or truncated by Create) that gets one JSON
  // line per request read, written as it is read (flushed each line):
  // {"t_ns": wall-clock ns since the epoch, "peer": client IP address,
  //  "method": "POST", "path": "/v1/...", "surge_request": "INDEX/ATTEMPT"
  //  from the request's X-Surge-Request header, or null without one,
  //  "body_bytes": the body's length, "body_fnv1a64": FNV-1a 64 of the body,
  //  16 hex digits}.
  // Tests read it to prove no request reached the server twice (issue 7)
  // and that an exact replay sent the very same bodies (docs/REPLAY.md).
  // Default empty = no log.
  std::string request_log_file;
};

// The options of `surge run`'s built-in server from its configuration:
// ttft_ms, itl_ms and every fault_* field (the rest keep their defaults).
SimServerOptions SimServerOptionsFromConfig(const surge::v1::SimServerConfig& config);

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
//    contents); completion_tokens = n.
//  - bad JSON or fields → 400, unknown path → 404, wrong method → 405, all
//    with an OpenAI-style {"error":{"message":...}} body.
// Deadlines are absolute (start + offset), so delays do not accumulate.
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
  // Validates `options` and binds the listening socket (it does not accept
  // until Start()). Errors: INVALID_ARGUMENT for a bad address, negative
  // delays or threads < 1; UNAVAILABLE when the address cannot be bound
  // (e.g. the port is in use).
  static absl::StatusOr<std::unique_ptr<SimServer>> Create(const SimServerOptions& options);

  // Calls Stop().
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  // The bound port (the chosen one when options.port was 0).
  uint16_t port() const;

  // Starts accepting and runs options.threads I/O threads in the background.
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
