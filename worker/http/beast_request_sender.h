// HTTP/1.1 client that sends OpenAI-compatible requests for the worker's
// pacer (R-REQ-1, R-ACT-2, R-MET-1).
// Boost.Beast stays behind a pimpl: this header can be included anywhere.
#ifndef SURGE_WORKER_HTTP_BEAST_REQUEST_SENDER_H_
#define SURGE_WORKER_HTTP_BEAST_REQUEST_SENDER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "surge/v1/config.pb.h"
#include "worker/http/warm_pool.h"
#include "worker/request_sender.h"

namespace surge::worker {

// Sends each Assignment as one POST to target.base_url + target.endpoint and
// turns the answer into a RequestRecord.
//
// https: TLS 1.2+ over each connection (OpenSSL), SNI set for host names;
// the server's certificate is verified against target.ca_cert_path, or the
// system store when that is empty, and must name the URL's host (or IP);
// target.insecure_skip_verify turns verification off. TLS connections are
// pooled like plain ones (one handshake per connection, before sent_ns).
//
// Request headers: Host, User-Agent: surge, Content-Type, Accept,
// Authorization: Bearer <key> when LoadApiKey(target) gives a key (from
// target.api_key_file or $OPENAI_API_KEY; the key is never logged), then
// target.headers (a header named there replaces User-Agent, Content-Type or
// Accept). target.extra_body_json is merged into every body.
//
// Connections: a keep-alive pool (kept warm ahead of the takes when Create
// gets a WarmPoolOptions and the takes come at min_rate_rps or faster). A request (or its Prepare)
// takes an idle connection (after checking that the server has not closed it) or opens a new one;
// there is no cap (the caller caps concurrency, R-REQ-2); with Prepare the pool also holds the
// reservations (about rate × lead more connections). A connection that errors, times out or is not
// keep-alive is discarded. If a *reused* connection turns out to be closed by the server before any
// byte of the answer arrives (the keep-alive race every HTTP client has), the request is sent once
// more on a fresh connection. The record says so: http_retries 1, retry_reason
// ("keepalive_closed: <msg>", or "keepalive_closed_on_write: <msg>" when the
// write itself failed), retry_sent_ns the second write; sent_ns stays the
// first write and every latency counts from it.
//
// Timestamps, all from the injected Clock (absolute local steady ns):
//  - sent_ns: just before the write of the request's first bytes on a
//    connected socket (connect time comes before it, R-ACT-2), whether that
//    write is made by Send's caller (prepared http requests) or by the I/O
//    thread;
//  - ttft_ns: sent → first SSE event with generated text on any channel
//    (content, reasoning_content or reasoning; role-only deltas and
//    usage-only chunks do not count); for non-streamed answers, sent → the
//    whole answer;
//  - ttfc_ns: sent → first event with answer content (content, or text for
//    completions); 0 for a reasoning-only answer;
//  - itl_ns: gaps between successive events with generated text;
//  - e2el_ns: sent → last byte of the response.
// Token counts come from the server's usage when present
// (output_tokens_estimated = false), else output_tokens = EstimateTokens of
// the generated text (streamed: the content of all events together; one
// rule for both paths, never one token per event) and input_tokens =
// EstimateTokens(prompt). Every record also carries max_tokens (what the
// body asked for, RequestedMaxTokens), the server's finish_reason and
// short_output (IsShortOutput: ignore_eos asked in extra_body_json and the
// answer stopped before max_tokens).
//
// Outcomes: OK on HTTP 200 with a complete response: a stream is complete
// when "data: [DONE]" arrived, or a finish_reason arrived and the body then
// ended cleanly by its framing; it must carry at least one content event.
// Otherwise FAILED with `error` one of
// "http_<code>: <first 200 chars of body>", "connect: <msg>",
// "tls: <msg>" (handshake failed, e.g. "tls: certificate verify failed
// (SSL routines): self-signed certificate"), "send: <msg>",
// "connection_closed: <msg>" (closed before any answer byte),
// "closed_mid_stream" (closed inside the body's HTTP framing),
// "incomplete_stream" (a stream whose body ended cleanly without [DONE] or a
// finish_reason; TTFT, ITL and tokens so far kept, e2el_ns 0),
// "incomplete_body" (a non-streamed 200 answer cut before its Content-Length
// or last chunk), "bad_chunk: <msg>" (an SSE event whose data is not a
// JSON object), "multiple_choices: <msg>" (an event of a choice other than
// 0: several choices interleaved in one stream), "stream_error: <msg>" (an {"error": ...} event:
// "stream_error: server error: <message>"; malformed HTTP or chunking),
// "bad_response: <msg>" (bad non-streamed JSON),
// "no_content", "timeout" (target.request_timeout_s elapsed, counted from
// the start of the request, connect included). Requests
// cut off by Shutdown after its drain window are INTERRUPTED with
// "interrupted: cut_off_at_stop" when their first byte was sent (sent_ns,
// ttft_ns, itl_ns and the output tokens so far kept; interrupted_ns = the
// cut), else NOT_SENT "not_sent: stopped_before_first_byte". http_status is set
// whenever a status line arrived. `error` is always valid UTF-8 (server text
// is quoted through ToValidUtf8). Nothing is ever thrown to the caller.
//
// Thread-safety: all methods are thread-safe. Callbacks run on one of the
// I/O threads; they must not call Shutdown() or destroy the sender.
class BeastRequestSender final : public RequestSender {
 public:
  // Validates `target`, reads the API key (LoadApiKey: target.api_key_file,
  // else $OPENAI_API_KEY at Create time), loads the TLS trust for https,
  // resolves the host once (blocking DNS), and starts `io_threads` I/O
  // threads. `clock` must outlive the sender.
  // Errors: INVALID_ARGUMENT for a bad base_url ("base_url: ..."), an
  // endpoint that does not start with "/" ("endpoint: ..."), a bad header
  // ("headers[i]: ..."), bad extra_body_json ("extra_body_json: ..."), an
  // unreadable CA file ("ca_cert_path: ...") or key file ("api_key_file:
  // ..."), io_threads < 1, an unknown address_policy ("address_policy:
  // ..."); UNAVAILABLE when the host cannot be resolved.
  // An empty endpoint means "/v1/chat/completions".
  //
  // Addresses: every address the host resolves to is logged in one line at
  // `api_key`, when given, is sent instead of reading target.api_key_file
  // or OPENAI_API_KEY (the coordinator handed it over, docs/SECURITY.md).
  //
  // start; new connections spread over them by target.address_policy
  // (round-robin, default; or first), and the host is resolved again when
  // every known address refuses a connection (Connector). `resolver`, when
  // given, replaces the system's resolver (tests): host → addresses as text
  // ("127.0.0.2", "::1"), the base_url's port added.
  using AddressResolver =
      std::function<absl::StatusOr<std::vector<std::string>>(const std::string& host)>;
  //
  // `warm_pool`, when given, keeps connections open and idle ahead of the
  // schedule (WarmPool, docs/PERFORMANCE.md "Warm connections"): each take
  // and return is told to it, and the refills it asks for connect on the
  // I/O thread. Without it a take that finds no idle connection opens its
  // own, and nothing else is opened.
  static absl::StatusOr<std::unique_ptr<BeastRequestSender>> Create(
      Clock& clock, const surge::v1::TargetConfig& target, int io_threads = 1,
      AddressResolver resolver = {}, std::optional<std::string> api_key = std::nullopt,
      std::optional<WarmPoolOptions> warm_pool = std::nullopt);

  // Calls Shutdown(0ms).
  ~BeastRequestSender() override;

  BeastRequestSender(const BeastRequestSender&) = delete;
  BeastRequestSender& operator=(const BeastRequestSender&) = delete;

  // Starts the request without blocking: the prompt is
  // BuildPrompt(input_tokens, prompt_seed), max_tokens from the assignment,
  // the body as BuildRequestBody() makes it ("model" left out when
  // target.model is empty: resolve it first with FetchFirstModel).
  // index and attempt of the record come from `assignment`. After Shutdown
  // started, on_done runs at once on the caller's thread with NOT_SENT,
  // error "sender_shut_down".
  void Send(const surge::v1::Assignment& assignment, SendCallback on_done) override;

  // Gets `assignment` ready for its Send, without blocking: on the I/O
  // thread, builds the serialized HTTP request (prompt, JSON body, headers)
  // and reserves a connection for it: an idle pooled one, else a new one
  // that it connects (and, for https, handshakes; a failed connect is left
  // for Send to retry and record). Then Send of the same (index, attempt):
  //  - http: writes the first bytes itself, on the caller's thread, with one
  //    non-blocking send(2) stamped just before (sent_ns), and hands the
  //    connection with whatever is left to write to the I/O thread, which
  //    reads the answer. The reservation makes the connection the caller's
  //    alone until then: no operation is pending on it and the I/O thread
  //    cannot reach it.
  //  - https: posts to the I/O thread, which writes at once. Asio's TLS
  //    stream encrypts into a memory BIO that only its own operations move
  //    to the socket, on the connection's strand; writing from another
  //    thread would mean driving its engine outside Asio.
  // A Send that comes while the preparation is still running waits for it
  // (its timeout counts from the Send). Nothing is written before Send.
  // Repeated Prepare of the same (index, attempt) does nothing.
  void Prepare(const surge::v1::Assignment& assignment) override;

  // Gives back what Prepare reserved for an assignment that will not be
  // sent: its connection returns to the pool (once connected). Shutdown
  // releases every reservation left.
  void CancelPrepared(const surge::v1::Assignment& assignment) override;

  // Requests started whose outcome is not known yet (a request leaves the
  // count just before its callback runs).
  size_t inflight() const override;

  // Waits up to `drain` for in-flight requests, then cuts off the rest
  // (INTERRUPTED, or NOT_SENT when nothing was written; see above), closes
  // every connection and joins the I/O threads.
  // Idempotent; blocks until done.
  void Shutdown(std::chrono::milliseconds drain) override;

  // With a warm pool: opens WarmPool::StartConnections connections (less those
  // open) on the I/O thread, counted as refills and as at_start.
  void WarmConnections(double rate_rps, size_t prepared_at_once) override;

  // TCP connections opened successfully so far (for tests and stats: with
  // reuse it stays at the peak concurrency).
  uint64_t connections_opened() const;
  // What the warm pool did (all 0 without one): takes, cold takes (no idle
  // connection), refills started and connected, the connects before t0.
  WarmPoolCounts warm_pool_counts() const;
  // Those connections and their total set-up time (TCP connect + TLS
  // handshake), for the worker's SendHealth report.
  ConnectTotals connect_totals() const override;
  // Requests whose first byte was written (counted once, at the first
  // write; a keep-alive retry does not count again).
  uint64_t sent_total() const override;
  // The I/O threads' queue of ready completions (a request's next step,
  // an answer's bytes): a pacer waiting for its deadline may run one
  // (io_context::poll_one: never blocks; a completion that throws is logged).
  bool TakesHelp() const override { return true; }
  bool RunReadyWork() override;
  // Connections opened, the warm pool's counts and the I/O threads' CPU
  // (each thread adds its own as it ends, in Shutdown).
  SenderStats stats() const override;

 private:
  class Impl;
  explicit BeastRequestSender(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_BEAST_REQUEST_SENDER_H_
