// The sender's per-request state (internal to worker/http: includes Asio):
// one request from Send to its callback, and what Prepare got ready for one.
#ifndef SURGE_WORKER_HTTP_REQUEST_STATE_H_
#define SURGE_WORKER_HTTP_REQUEST_STATE_H_

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "surge/v1/wire.pb.h"
#include "worker/http/http_connection.h"
#include "worker/request_sender.h"

namespace surge::worker {

// One request from Send() to its callback.
struct RequestState {
  uint64_t id = 0;
  uint64_t index = 0;
  uint32_t attempt = 0;
  uint32_t input_tokens = 0;
  uint32_t max_tokens = 0;
  uint64_t prompt_seed = 0;
  // The payload reference, turned into text by BuildAssignmentPrompt (only
  // when nothing was prepared: then `built` is false).
  surge::v1::Assignment assignment;
  SendCallback on_done;
  std::optional<Strand> strand;
  // The serialized HTTP request and EstimateTokens(prompt): from the
  // preparation, or built when the request runs.
  bool built = false;
  std::string request_bytes;
  uint32_t estimated_input = 0;
  // A session turn (Assignment.in_session): its record carries the prompt
  // it sent and the answer's text (RequestRecord.sent_prompt_text,
  // .answer_text) for the next turn's history.
  bool keep_text = false;
  std::string session_prompt;
  // A prepared plain connection on which Send wrote the first bytes from the
  // caller's thread; the request's coroutine moves it into `conn`. Until
  // then only Send touches it, and nothing else in the sender can reach it.
  std::shared_ptr<Connection> direct_conn;
  size_t direct_written = 0;   // bytes of request_bytes that Send wrote
  int64_t direct_sent_ns = 0;  // clock time just before that write
  // The keep-alive retry (touched on `strand` only): the first write's
  // stamp (the record's sent_ns, also after a retry), and the retry's.
  int64_t first_sent_ns = 0;
  uint32_t http_retries = 0;
  std::string retry_reason;
  int64_t retry_sent_ns = 0;
  // Fields below are touched on `strand` only, except the atomics.
  std::shared_ptr<Connection> conn;
  std::optional<boost::asio::steady_timer> watchdog;
  bool timed_out = false;
  std::atomic<bool> aborted{false};
  std::atomic<bool> finished{false};

  // What a connect made for this request gives up for.
  OpenCancel open_cancel() const {
    return OpenCancel{.aborted = &aborted, .timed_out = &timed_out, .abandoned = nullptr};
  }
  // Stopped by Shutdown or timed out.
  bool stopped() const { return aborted.load() || timed_out; }
};

// What Prepare got ready for one (index, attempt): the request bytes and a
// reserved connection, connected (and handshaken) by a coroutine on the
// connection's strand. While it sits in the sender's reservation map nobody
// else uses the connection; whoever takes it out of that map (Send,
// CancelPrepared, Shutdown) owns what it holds once `done`, or leaves a note
// (`waiting`, `abandoned`) for the coroutine when not.
struct Preparation {
  surge::v1::Assignment assignment;  // the payload; cleared once built
  std::shared_ptr<Connection> conn;
  std::string request_bytes;  // written by the coroutine before `done`
  uint32_t estimated_input = 0;
  std::string session_prompt;  // BuiltRequest.session_prompt
  // Guarded by the sender's mutex. `done`: bytes built and the connect over
  // (the coroutine has let go); `failed`: the connection could not be
  // opened (Send opens another); `waiting`: a Send that came before `done`;
  // `abandoned`: cancelled or shut down before `done`.
  bool done = false;
  bool failed = false;
  std::shared_ptr<RequestState> waiting;
  std::atomic<bool> abandoned{false};
};

// The key of a preparation: (index, attempt).
using PrepKey = std::pair<uint64_t, uint32_t>;
inline PrepKey KeyOf(const surge::v1::Assignment& a) { return {a.index(), a.attempt()}; }

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_REQUEST_STATE_H_
