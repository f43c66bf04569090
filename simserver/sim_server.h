// The built-in simulated OpenAI-compatible server (SPEC R-UI-1): what
// `surge run` sends to when no target is given, and what the HTTP client's
// tests talk to. Boost.Beast stays behind a pimpl.
#ifndef SURGE_SIMSERVER_SIM_SERVER_H_
#define SURGE_SIMSERVER_SIM_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace surge::simserver {

// Options of a SimServer. Times are milliseconds (doubles; fractions allowed).
struct SimServerOptions {
  std::string address = "127.0.0.1";  // bind address (IPv4 or IPv6 literal)
  uint16_t port = 0;                  // 0 = pick a free port
  double ttft_ms = 20;                // delay before the first token, >= 0
  double itl_ms = 2;                  // delay between tokens, >= 0
  std::string model = "surge-sim";    // the one model listed at /v1/models
  int threads = 1;                    // I/O threads, >= 1
};

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
