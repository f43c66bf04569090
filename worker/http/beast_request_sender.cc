#include "worker/http/beast_request_sender.h"

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/api_key.h"
#include "client/target_checks.h"
#include "client/tls_client.h"
#include "client/url.h"
#include "common/failure_kind.h"
#include "common/log.h"
#include "common/prompt_builder.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"
#include "worker/http/openai_request.h"
#include "worker/http/response_metrics.h"
#include "worker/http/response_reader.h"

namespace surge::worker {

// The client pieces shared with the coordinator (client/).
using client::HeaderLine;
using client::LoadApiKey;
using client::MakeClientTlsContext;
using client::ParseBaseUrl;
using client::ParsedUrl;
using client::ParseExtraBody;
using client::ParseHeaderLine;
using client::PrepareTlsClient;
using client::RedactApiKey;
using client::TlsErrorMessage;

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Strand = net::strand<net::io_context::executor_type>;
using boost::system::error_code;
using surge::v1::RequestRecord;

// Body bytes taken per read: large enough for many SSE events at once,
// small enough to timestamp events as they arrive.
constexpr size_t kReadChunk = 16 * 1024;
// Answers are streamed through a fixed buffer, so this only guards against
// a runaway server.
constexpr uint64_t kBodyLimitBytes = 1ull << 40;
// After the drain deadline, how long Shutdown waits for aborted requests to
// unwind before it reports them itself.
constexpr std::chrono::seconds kAbortGrace{5};
constexpr char kDefaultEndpoint[] = "/v1/chat/completions";
// Errors of requests cut off by Shutdown after the drain window.
constexpr char kInterruptedError[] = "interrupted: cut_off_at_stop";
constexpr char kNotSentInterruptedError[] = "not_sent: stopped_before_first_byte";

// The failure kind of an I/O error met in `phase` (FailIo's phases).
surge::v1::FailureKind PhaseKind(std::string_view phase) {
  if (phase == "connect") return surge::v1::FAILURE_KIND_CONNECT;
  if (phase == "tls") return surge::v1::FAILURE_KIND_TLS;
  if (phase == "send") return surge::v1::FAILURE_KIND_SEND;
  if (phase == "connection_closed") return surge::v1::FAILURE_KIND_CONNECTION_CLOSED;
  if (phase == "stream_error") return surge::v1::FAILURE_KIND_STREAM_ERROR;
  return surge::v1::FAILURE_KIND_OTHER;
}

// One connection of the pool: TCP, or TLS over TCP when `tls_context` is
// given. Only the coroutine of the request that holds it touches it, on
// `strand` (the socket's executor).
struct Connection {
  Connection(Strand s, net::ssl::context* tls_context) : strand(s) {
    if (tls_context != nullptr) {
      tls.emplace(s, *tls_context);
    } else {
      plain.emplace(s);
    }
  }
  // The TCP socket (under the TLS layer for https).
  tcp::socket& socket() { return tls.has_value() ? tls->next_layer() : *plain; }

  Strand strand;
  std::optional<tcp::socket> plain;                   // http
  std::optional<beast::ssl_stream<tcp::socket>> tls;  // https
  beast::flat_buffer buffer;
  bool connected = false;  // TCP connected and, for https, handshake done
  bool reused = false;     // has answered a request before
};

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
  // preparation, or built by Execute.
  bool built = false;
  std::string request_bytes;
  uint32_t estimated_input = 0;
  // A prepared plain connection on which Send wrote the first bytes from the
  // caller's thread; Run moves it into `conn`. Until then only Send touches
  // it, and nothing else in the sender can reach it.
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
  std::optional<net::steady_timer> watchdog;
  bool timed_out = false;
  std::atomic<bool> aborted{false};
  std::atomic<bool> finished{false};
};

// What Prepare got ready for one (index, attempt): the request bytes and a
// reserved connection, connected (and handshaken) by a coroutine on the
// connection's strand. While it sits in Impl::prepared_ nobody else uses the
// connection; whoever takes it out of that map (Send, CancelPrepared,
// Shutdown) owns what it holds once `done`, or leaves a note (`waiting`,
// `abandoned`) for the coroutine when not.
struct Preparation {
  surge::v1::Assignment assignment;  // the payload; cleared once built
  std::shared_ptr<Connection> conn;
  std::string request_bytes;  // written by the coroutine before `done`
  uint32_t estimated_input = 0;
  // Guarded by Impl::mu_. `done`: bytes built and the connect over (the
  // coroutine has let go); `failed`: the connection could not be opened
  // (Send opens another); `waiting`: a Send that came before `done`;
  // `abandoned`: cancelled or shut down before `done`.
  bool done = false;
  bool failed = false;
  std::shared_ptr<RequestState> waiting;
  std::atomic<bool> abandoned{false};
};

using PrepKey = std::pair<uint64_t, uint32_t>;  // (index, attempt)
PrepKey KeyOf(const surge::v1::Assignment& a) { return {a.index(), a.attempt()}; }

// How opening a connection failed: `phase` "connect" or "tls" with the
// error; or an empty phase and a whole `message` (TLS setup).
struct OpenError {
  std::string phase;
  error_code ec;
  std::string message;
};

// True when the server has closed an idle connection (or sent bytes nobody
// asked for): such a connection must not be reused.
bool IdleConnectionIsStale(Connection& conn) {
  if (!conn.connected || !conn.socket().is_open() || conn.buffer.size() != 0) return true;
  // Decrypted bytes nobody asked for.
  if (conn.tls.has_value() && SSL_pending(conn.tls->native_handle()) > 0) return true;
  char byte;
  // For TLS any raw byte here is a record after the answer: close_notify.
  const ssize_t n = ::recv(conn.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || n > 0) return true;  // 0: orderly close; > 0: unexpected bytes
  return !(errno == EAGAIN || errno == EWOULDBLOCK);
}

bool IsClosedByPeer(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == net::ssl::error::stream_truncated;
}

// The headers of every request but Content-Length, each ending in CRLF:
// Host, User-Agent, Content-Type and Accept (unless `extra` sets them),
// Authorization when there is a key, then `extra`.
std::string HeaderBlock(const ParsedUrl& url, bool stream, const std::string& api_key,
                        const std::vector<HeaderLine>& extra) {
  auto overridden = [&extra](const char* name) {
    for (const HeaderLine& h : extra) {
      if (absl::EqualsIgnoreCase(h.name, name)) return true;
    }
    return false;
  };
  std::string block = absl::StrCat("Host: ", url.HostHeader(), "\r\n");
  if (!overridden("User-Agent")) absl::StrAppend(&block, "User-Agent: surge\r\n");
  if (!overridden("Content-Type")) absl::StrAppend(&block, "Content-Type: application/json\r\n");
  if (!overridden("Accept")) {
    absl::StrAppend(&block, "Accept: ", stream ? "text/event-stream" : "application/json", "\r\n");
  }
  if (!api_key.empty()) absl::StrAppend(&block, "Authorization: Bearer ", api_key, "\r\n");
  for (const HeaderLine& h : extra) absl::StrAppend(&block, h.name, ": ", h.value, "\r\n");
  return block;
}

}  // namespace

class BeastRequestSender::Impl {
 public:
  Impl(Clock& clock, ParsedUrl url, std::string target_path, ApiKind kind, std::string model,
       bool stream, double timeout_s, std::string header_block, std::string api_key,
       nlohmann::json extra_body, std::shared_ptr<net::ssl::context> tls_context, bool verify_peer,
       tcp::resolver::results_type eps, int io_threads)
      : clock_(clock),
        url_(std::move(url)),
        target_path_(std::move(target_path)),
        kind_(kind),
        model_(std::move(model)),
        stream_(stream),
        timeout_s_(timeout_s),
        header_block_(std::move(header_block)),
        api_key_(std::move(api_key)),
        extra_body_(std::move(extra_body)),
        ignore_eos_(AsksIgnoreEos(extra_body_.is_null() ? nullptr : &extra_body_)),
        tls_context_(std::move(tls_context)),
        verify_peer_(verify_peer),
        endpoints_(std::move(eps)),
        ioc_(io_threads),
        work_(net::make_work_guard(ioc_)) {
    for (int i = 0; i < io_threads; ++i) {
      threads_.emplace_back([this] { RunIo(); });
    }
  }

  ~Impl() { Shutdown(std::chrono::milliseconds(0)); }

  void Prepare(const surge::v1::Assignment& assignment) {
    auto prep = std::make_shared<Preparation>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutting_down_) return;
      auto [it, inserted] = prepared_.try_emplace(KeyOf(assignment));
      if (!inserted) return;  // prepared already
      std::shared_ptr<Connection> conn = TakeIdleLocked();
      if (conn == nullptr) {
        conn = std::make_shared<Connection>(net::make_strand(ioc_), tls_context_.get());
      }
      prep->conn = std::move(conn);
      it->second = prep;
    }
    // Only the coroutine reads the payload, and it starts after this (post).
    prep->assignment = assignment;
    const Strand strand = prep->conn->strand;
    net::co_spawn(strand, PrepareRun(std::move(prep)), [](std::exception_ptr e) {
      if (e) LogError("beast_request_sender: preparation coroutine ended with an exception");
    });
  }

  void CancelPrepared(const surge::v1::Assignment& assignment) {
    std::shared_ptr<Preparation> prep;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = prepared_.find(KeyOf(assignment));
      if (it == prepared_.end()) return;
      prep = std::move(it->second);
      prepared_.erase(it);
      if (!prep->done) {
        // The coroutine gives the connection back when its connect is over.
        prep->abandoned = true;
        return;
      }
    }
    if (!prep->failed) ReturnToPool(std::move(prep->conn), /*answered=*/false);
  }

  void Send(const surge::v1::Assignment& assignment, SendCallback on_done) {
    auto st = std::make_shared<RequestState>();
    st->index = assignment.index();
    st->attempt = assignment.attempt();
    st->input_tokens = assignment.input_tokens();
    st->max_tokens = assignment.max_tokens();
    st->prompt_seed = assignment.prompt_seed();
    st->on_done = std::move(on_done);
    // A prepared, connected plain connection: this thread writes first.
    std::shared_ptr<Connection> direct;
    // The preparation is still running and will start the request.
    bool attached = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!shutting_down_) {
        std::shared_ptr<Connection> conn;
        auto it = prepared_.find(KeyOf(assignment));
        if (it != prepared_.end()) {
          std::shared_ptr<Preparation> prep = std::move(it->second);
          prepared_.erase(it);
          if (prep->done) {
            st->built = true;
            st->request_bytes = std::move(prep->request_bytes);
            st->estimated_input = prep->estimated_input;
            conn = prep->failed
                       ? std::make_shared<Connection>(prep->conn->strand, tls_context_.get())
                       : prep->conn;
            if (!conn->tls.has_value() && conn->connected) direct = conn;
          } else {
            prep->waiting = st;
            conn = prep->conn;
            attached = true;
          }
        } else {
          conn = TakeIdleLocked();
          if (conn == nullptr) {
            conn = std::make_shared<Connection>(net::make_strand(ioc_), tls_context_.get());
          }
        }
        st->strand = conn->strand;
        if (direct == nullptr) st->conn = std::move(conn);
        st->id = next_id_++;
        active_.emplace(st->id, st);
        ++inflight_;
      }
    }
    if (!st->strand.has_value()) {
      RequestRecord record = BaseRecord(*st);
      SetFailure(record, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT, "sender_shut_down");
      if (st->on_done) st->on_done(std::move(record));
      return;
    }
    if (attached) {
      // The preparation runs the request when its connect is over (and may
      // already be doing so: `st` is not ours any more). The timeout counts
      // from now, as for any request.
      net::post(*st->strand, [this, st] { StartWatchdog(st); });
      return;
    }
    if (direct != nullptr) {
      WriteFirstBytes(*st, std::move(direct));
    } else if (!st->built) {
      st->assignment = assignment;
    }
    // co_spawn posts: the rest of the request runs on the I/O thread.
    net::co_spawn(*st->strand, Run(st), [](std::exception_ptr e) {
      if (e) LogError("beast_request_sender: request coroutine ended with an exception");
    });
  }

  size_t inflight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return inflight_;
  }

  uint64_t connections_opened() const { return connections_opened_.load(); }
  uint64_t sent_total() const { return sent_total_.load(); }
  int64_t connect_ns_total() const { return connect_ns_total_.load(); }

  void Shutdown(std::chrono::milliseconds drain) {
    std::lock_guard<std::mutex> shutdown_lock(shutdown_mu_);
    if (shut_down_) return;
    std::vector<std::shared_ptr<RequestState>> leftovers;
    std::vector<std::shared_ptr<Preparation>> unsent;
    {
      std::unique_lock<std::mutex> lock(mu_);
      shutting_down_ = true;
      // Prepared and never sent: nothing will claim them any more. A
      // preparation still connecting is told so and its socket closed.
      for (auto& [key, prep] : prepared_) {
        if (!prep->done) {
          prep->abandoned = true;
          net::post(prep->conn->strand, [conn = prep->conn] {
            error_code ignored;
            conn->socket().close(ignored);
          });
        }
        unsent.push_back(std::move(prep));
      }
      prepared_.clear();
      cv_.wait_for(lock, drain, [this] { return inflight_ == 0; });
      // Past the drain deadline: close the sockets of what is still running;
      // each coroutine then sees `aborted` and reports INTERRUPTED with what
      // it knows so far (NOT_SENT when nothing had been written).
      for (auto& [id, st] : active_) {
        st->aborted = true;
        net::post(*st->strand, [st = st] {
          if (st->finished.load()) return;
          error_code ignored;
          if (st->conn != nullptr) st->conn->socket().close(ignored);
          if (st->watchdog.has_value()) st->watchdog->cancel();
        });
      }
      cv_.wait_for(lock, kAbortGrace, [this] { return inflight_ == 0; });
      for (auto& [id, st] : active_) leftovers.push_back(st);
    }
    // Should not happen (closed sockets complete at once), but every Send
    // must get exactly one callback even if a coroutine is stuck.
    for (auto& st : leftovers) {
      RequestRecord record = BaseRecord(*st);
      SetFailure(record, surge::v1::INTERRUPTED, surge::v1::FAILURE_KIND_INTERRUPTED,
                 "interrupted: no_record");
      record.set_interrupted_ns(ToNanos(clock_.Now()));
      Finish(st, std::move(record));
    }
    work_.reset();
    ioc_.stop();
    for (auto& t : threads_) {
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();  // Shutdown from a callback: cannot join ourselves
      } else if (t.joinable()) {
        t.join();
      }
    }
    unsent.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle_.clear();
    }
    shut_down_ = true;
  }

 private:
  void RunIo() {
    for (;;) {
      try {
        ioc_.run();
        return;
      } catch (const std::exception& e) {
        LogError(absl::StrCat("beast_request_sender: I/O thread: ", e.what()));
      }
    }
  }

  std::shared_ptr<Connection> TakeIdleLocked() {
    while (!idle_.empty()) {
      // Most recently used first: least likely to have hit the server's
      // keep-alive timeout.
      std::shared_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      if (!IdleConnectionIsStale(*conn)) return conn;
    }
    return nullptr;
  }

  // `answered`: the connection has carried a request and its answer (a
  // server may then close it between requests: the keep-alive race).
  void ReturnToPool(std::shared_ptr<Connection> conn, bool answered = true) {
    if (answered) conn->reused = true;
    std::lock_guard<std::mutex> lock(mu_);
    if (!shutting_down_) idle_.push_back(std::move(conn));
  }

  RequestRecord BaseRecord(const RequestState& st) const {
    RequestRecord record;
    record.set_index(st.index);
    record.set_attempt(st.attempt);
    record.set_worker(-1);
    record.set_max_tokens(
        RequestedMaxTokens(st.max_tokens, extra_body_.is_null() ? nullptr : &extra_body_));
    return record;
  }

  // Runs the callback exactly once and retires the request.
  void Finish(const std::shared_ptr<RequestState>& st, RequestRecord record) {
    if (st->finished.exchange(true)) return;
    // Every error text quotes something from outside (a body, a TLS or
    // system message): it must be valid UTF-8 to travel in a proto string.
    MakeValidUtf8(record.mutable_error());
    // ... and never the API key, which servers quote back when they reject
    // it (R-REQ-1).
    RedactApiKey(record.mutable_error(), api_key_);
    SendCallback callback = std::move(st->on_done);
    // Retire first, so inflight() already excludes this request inside and
    // after its callback. Shutdown still waits for a running callback: it
    // joins the I/O threads.
    {
      std::lock_guard<std::mutex> lock(mu_);
      active_.erase(st->id);
      --inflight_;
    }
    cv_.notify_all();
    if (callback) {
      try {
        callback(std::move(record));
      } catch (const std::exception& e) {
        LogError(absl::StrCat("beast_request_sender: on_done threw: ", e.what()));
      } catch (...) {
        LogError("beast_request_sender: on_done threw");
      }
    }
  }

  // The request bytes; every request names itself in an
  // "X-Surge-Request: INDEX/ATTEMPT" header, so a server's log can tell
  // whether one request arrived twice (issue 7: no request sent twice).
  std::string BuildHttpRequest(const std::string& prompt, uint32_t max_tokens, uint64_t index,
                               uint32_t attempt) const {
    const std::string body = BuildRequestBody(kind_, model_, prompt, max_tokens, stream_,
                                              extra_body_.is_null() ? nullptr : &extra_body_);
    return absl::StrCat("POST ", target_path_, " HTTP/1.1\r\n", header_block_,
                        "X-Surge-Request: ", index, "/", attempt, "\r\n",
                        "Content-Length: ", body.size(), "\r\n\r\n", body);
  }

  // Counts a keep-alive retry of `st` and its cause ("<cause>: <ec>").
  static void NoteRetry(RequestState& st, const char* cause, const error_code& ec) {
    ++st.http_retries;
    st.retry_reason = absl::StrCat(cause, ": ", ec.message());
  }

  // The failure an I/O error `ec` met in `phase` amounts to; `message`
  // replaces ec.message() when not empty.
  static ReadFailure IoFailure(const RequestState& st, const char* phase, const error_code& ec,
                               const std::string& message = "") {
    if (st.aborted.load()) {
      // Cut off by Shutdown; Run() makes it NOT_SENT when nothing went out.
      return {surge::v1::INTERRUPTED, surge::v1::FAILURE_KIND_INTERRUPTED, kInterruptedError};
    }
    if (st.timed_out) return {surge::v1::FAILED, surge::v1::FAILURE_KIND_TIMEOUT, "timeout"};
    return {surge::v1::FAILED, PhaseKind(phase),
            absl::StrCat(phase, ": ", message.empty() ? ec.message() : message)};
  }

  // Sets status and error for an I/O error `ec` met in `phase` (IoFailure).
  static void FailIo(const RequestState& st, const char* phase, const error_code& ec,
                     RequestRecord& record, const std::string& message = "") {
    ReadFailure failure = IoFailure(st, phase, ec, message);
    SetFailure(record, failure.status, failure.kind, std::move(failure.error));
  }

  // Writes the first bytes of a prepared request on a prepared plain
  // connection from the caller's (the pacer's) thread: one non-blocking
  // send(2), stamped just before, so that the request does not wait for the
  // I/O thread. The connection is this thread's alone: it left the
  // reservation map under mu_, no operation is pending on it, the request is
  // not spawned yet, and Shutdown only ever closes `st.conn` (still empty).
  // Run takes over what is left to write and the answer.
  void WriteFirstBytes(RequestState& st, std::shared_ptr<Connection> conn) {
    if (IdleConnectionIsStale(*conn)) {
      // Closed by the server while reserved: Execute opens a fresh one and
      // writes there (sent_ns is that write).
      error_code ignored;
      conn->socket().close(ignored);
      st.direct_conn = std::make_shared<Connection>(conn->strand, nullptr);
      return;
    }
    const int fd = conn->socket().native_handle();
    // R-ACT-2: the first byte is handed to the socket right after this.
    const int64_t sent_ns = ToNanos(clock_.Now());
    const ssize_t n =
        ::send(fd, st.request_bytes.data(), st.request_bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      st.direct_written = static_cast<size_t>(n);
      st.direct_sent_ns = sent_ns;
    }
    // n <= 0 (EAGAIN, or an error such as a reset): nothing went out; the
    // I/O thread writes the whole request and meets the error itself.
    st.direct_conn = std::move(conn);
  }

  // Builds a prepared request's bytes and opens its reserved connection (if
  // it is not an idle one already), then leaves them for Send, or hands
  // them to a Send that came first, or gives the connection back.
  net::awaitable<void> PrepareRun(std::shared_ptr<Preparation> prep) {
    {
      const std::string prompt = BuildAssignmentPrompt(prep->assignment);
      prep->estimated_input = EstimateTokens(prompt);
      prep->request_bytes = BuildHttpRequest(prompt, prep->assignment.max_tokens(),
                                             prep->assignment.index(), prep->assignment.attempt());
      prep->assignment = surge::v1::Assignment();
    }
    std::shared_ptr<Connection> conn = prep->conn;
    bool ok = conn->connected;
    if (!ok && !prep->abandoned.load()) {
      // The request timeout bounds the connect, as it would for a request.
      auto over = std::make_shared<bool>(false);  // touched on the strand only
      std::optional<net::steady_timer> timer;
      if (timeout_s_ > 0) {
        timer.emplace(conn->strand);
        timer->expires_after(std::chrono::nanoseconds(static_cast<int64_t>(timeout_s_ * 1e9)));
        timer->async_wait([conn, over](const error_code& ec) {
          if (ec || *over) return;
          error_code ignored;
          conn->socket().close(ignored);
        });
      }
      OpenError error;
      ok = co_await Connect(*conn, nullptr, prep.get(), error);
      *over = true;
      if (timer.has_value()) timer->cancel();
    }
    if (!ok) {
      error_code ignored;
      conn->socket().close(ignored);
    }
    std::shared_ptr<RequestState> waiting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      prep->done = true;
      prep->failed = !ok;
      waiting = std::move(prep->waiting);
    }
    if (waiting != nullptr) {
      // Send came first and is waiting: run it here, on the same strand.
      waiting->built = true;
      waiting->request_bytes = std::move(prep->request_bytes);
      waiting->estimated_input = prep->estimated_input;
      if (!ok) waiting->conn = std::make_shared<Connection>(conn->strand, tls_context_.get());
      co_await Run(waiting);
    } else if (prep->abandoned.load() && ok) {
      ReturnToPool(std::move(conn), /*answered=*/false);
    }
    // Otherwise it stays in prepared_ for Send or CancelPrepared (or it was
    // abandoned and failed: the closed connection just goes away).
  }

  net::awaitable<void> Run(std::shared_ptr<RequestState> st) {
    if (st->direct_conn != nullptr) st->conn = std::move(st->direct_conn);
    RequestRecord record = BaseRecord(*st);
    bool reusable = false;
    try {
      reusable = co_await Execute(st, record);
    } catch (const std::exception& e) {
      SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_INTERNAL,
                 absl::StrCat("internal: ", e.what()));
    }
    if (st->watchdog.has_value()) st->watchdog->cancel();
    if (record.status() == surge::v1::INTERRUPTED) {
      // Cut off by Shutdown: sent → keeps sent_ns, TTFT, ITL and tokens so
      // far; never written → provably not sent.
      if (record.sent_ns() == 0) {
        SetFailure(record, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                   kNotSentInterruptedError);
      } else {
        record.set_interrupted_ns(ToNanos(clock_.Now()));
      }
    }
    record.set_http_retries(st->http_retries);
    record.set_retry_reason(st->retry_reason);
    record.set_retry_sent_ns(st->retry_sent_ns);
    record.set_short_output(IsShortOutput(record, ignore_eos_));
    std::shared_ptr<Connection> conn = std::move(st->conn);
    if (reusable && !st->aborted.load() && !st->timed_out) {
      // Back to the pool before the callback, so a Send from the callback
      // can reuse it.
      ReturnToPool(std::move(conn));
    } else if (conn != nullptr) {
      error_code ignored;
      conn->socket().close(ignored);
    }
    Finish(st, std::move(record));
  }

  void StartWatchdog(const std::shared_ptr<RequestState>& st) {
    if (timeout_s_ <= 0 || st->watchdog.has_value() || st->finished.load()) return;
    st->watchdog.emplace(*st->strand);
    st->watchdog->expires_after(std::chrono::nanoseconds(static_cast<int64_t>(timeout_s_ * 1e9)));
    st->watchdog->async_wait([st](const error_code& ec) {
      if (ec || st->finished.load()) return;
      st->timed_out = true;
      error_code ignored;
      if (st->conn != nullptr) st->conn->socket().close(ignored);
    });
  }

  // How one attempt of a request on one connection ended.
  enum class Outcome {
    kDone,      // record filled; close the connection
    kReusable,  // record filled; the connection may go back to the pool
    kRetry,     // keep-alive race: send again on a fresh connection
  };

  // Sends the request and reads the answer into `record`. Returns whether
  // the connection may go back to the pool.
  net::awaitable<bool> Execute(std::shared_ptr<RequestState> st, RequestRecord& record) {
    if (!st->built) {
      const std::string prompt = BuildAssignmentPrompt(st->assignment);
      st->estimated_input = EstimateTokens(prompt);
      st->request_bytes = BuildHttpRequest(prompt, st->max_tokens, st->index, st->attempt);
      st->assignment = surge::v1::Assignment();
      st->built = true;
    }
    const uint32_t estimated_input = st->estimated_input;
    const std::string& request_bytes = st->request_bytes;
    record.set_input_tokens(estimated_input);
    // Bytes written by Send are out, whatever happens next.
    if (st->direct_written > 0) record.set_sent_ns(st->direct_sent_ns);
    StartWatchdog(st);
    bool retried = false;
    for (;;) {
      if (st->aborted.load() || st->timed_out) {
        FailIo(*st, "send", net::error::operation_aborted, record);
        co_return false;
      }
      std::shared_ptr<Connection> conn = st->conn;
      if (!conn->connected) {
        const bool opened = co_await Open(st, *conn, record);
        if (!opened) co_return false;
      }
      const bool can_retry = conn->reused && !retried;
      Outcome outcome = Outcome::kDone;
      if (conn->tls.has_value()) {
        outcome = co_await Attempt(st, *conn, *conn->tls, request_bytes, estimated_input, can_retry,
                                   record);
      } else {
        outcome = co_await Attempt(st, *conn, *conn->plain, request_bytes, estimated_input,
                                   can_retry, record);
      }
      if (outcome != Outcome::kRetry) co_return outcome == Outcome::kReusable;
      retried = true;
      st->conn = std::make_shared<Connection>(conn->strand, tls_context_.get());
    }
  }

  // Connects `conn` and, for https, runs the TLS handshake: connect time and
  // handshake come before sent_ns (R-ACT-2). On failure fills `record`.
  net::awaitable<bool> Open(std::shared_ptr<RequestState> st, Connection& conn,
                            RequestRecord& record) {
    OpenError error;
    const bool opened = co_await Connect(conn, st.get(), nullptr, error);
    if (opened) co_return true;
    if (error.phase.empty()) {
      // TLS set-up (certificates, SNI) before any handshake.
      SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_TLS, error.message);
    } else {
      FailIo(*st, error.phase.c_str(), error.ec, record, error.message);
    }
    co_return false;
  }

  // Connects `conn` (TCP, no Nagle) and, for https, runs the TLS handshake;
  // marks it connected. After each step it gives up when the request `st`
  // was aborted or timed out, or the preparation `prep` abandoned (either
  // may be null; a closed socket shows up as an error of the step itself).
  // On failure fills `error`. (Plain pointers, not a callable: g++ 12 has
  // had bugs with non-trivial temporaries in co_await expressions.)
  net::awaitable<bool> Connect(Connection& conn, const RequestState* st, const Preparation* prep,
                               OpenError& error) {
    auto cancelled = [st, prep] {
      return (st != nullptr && (st->aborted.load() || st->timed_out)) ||
             (prep != nullptr && prep->abandoned.load());
    };
    error_code ec;
    const int64_t connect_start_ns = ToNanos(clock_.Now());
    co_await net::async_connect(conn.socket(), endpoints_,
                                net::redirect_error(net::use_awaitable, ec));
    if (!ec && cancelled()) ec = net::error::operation_aborted;
    if (ec) {
      error.phase = "connect";
      error.ec = ec;
      co_return false;
    }
    connections_opened_.fetch_add(1);
    // Tokens are small writes and reads: never delay them (Nagle).
    conn.socket().set_option(tcp::no_delay(true), ec);
    if (conn.tls.has_value()) {
      SSL* ssl = conn.tls->native_handle();
      if (absl::Status prepared = PrepareTlsClient(ssl, url_.host, verify_peer_); !prepared.ok()) {
        error.message = std::string(prepared.message());
        co_return false;
      }
      ec = {};
      co_await conn.tls->async_handshake(net::ssl::stream_base::client,
                                         net::redirect_error(net::use_awaitable, ec));
      if (!ec && cancelled()) ec = net::error::operation_aborted;
      if (ec) {
        error.phase = "tls";
        error.ec = ec;
        error.message = TlsErrorMessage(ec, ssl);
        co_return false;
      }
    }
    conn.connected = true;
    // Set-up time (connect + handshake) for the lateness monitor's
    // "connection set-up" cause (worker/send_health.h).
    connect_ns_total_.fetch_add(ToNanos(clock_.Now()) - connect_start_ns);
    co_return true;
  }

  // One attempt: writes the request on `stream` (conn's plain socket or its
  // TLS stream) and reads the answer.
  template <class Stream>
  net::awaitable<Outcome> Attempt(std::shared_ptr<RequestState> st, Connection& conn,
                                  Stream& stream, const std::string& request_bytes,
                                  uint32_t estimated_input, bool can_retry, RequestRecord& record) {
    error_code ec;
    // Send may have written the first bytes already (WriteFirstBytes): then
    // sent_ns is its stamp and only the rest is written here. Otherwise
    // R-ACT-2: the first byte is handed to the socket right after this.
    size_t written = 0;
    int64_t write_ns = 0;
    if (st->direct_written > 0) {
      written = std::exchange(st->direct_written, 0);
      write_ns = st->direct_sent_ns;
    } else {
      write_ns = ToNanos(clock_.Now());
    }
    // After a keep-alive retry the request still counts from its first
    // write: the reconnect is part of its latency, not of its lateness.
    if (st->http_retries > 0) {
      st->retry_sent_ns = write_ns;
    } else {
      st->first_sent_ns = write_ns;
      sent_total_.fetch_add(1);  // its record will have sent_ns: sent
    }
    if (written < request_bytes.size()) {
      co_await net::async_write(
          stream, net::buffer(request_bytes.data() + written, request_bytes.size() - written),
          net::redirect_error(net::use_awaitable, ec));
    }
    if (ec) {
      if (can_retry && IsClosedByPeer(ec) && !st->aborted.load() && !st->timed_out) {
        record.set_sent_ns(st->first_sent_ns);
        NoteRetry(*st, "keepalive_closed_on_write", ec);
        co_return Outcome::kRetry;
      }
      record.set_sent_ns(st->first_sent_ns);
      FailIo(*st, "send", ec, record);
      co_return Outcome::kDone;
    }
    record.set_sent_ns(st->first_sent_ns);

    http::response_parser<http::buffer_body> parser;
    // Not boost::none: Beast 1.74 then rejects every Content-Length body.
    parser.body_limit(kBodyLimitBytes);
    co_await http::async_read_header(stream, conn.buffer, parser,
                                     net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      // The keep-alive race: the server closed the idle connection just
      // as the request went out, so it never saw the request.
      if (can_retry && conn.buffer.size() == 0 && IsClosedByPeer(ec) && !st->aborted.load() &&
          !st->timed_out) {
        NoteRetry(*st, "keepalive_closed", ec);
        co_return Outcome::kRetry;
      }
      // Malformed HTTP is the server's fault, a closed socket the network's.
      const bool malformed =
          &ec.category() == &http::make_error_code(http::error::end_of_stream).category() &&
          !IsClosedByPeer(ec);
      FailIo(*st, malformed ? "stream_error" : "connection_closed", ec, record);
      co_return Outcome::kDone;
    }
    const bool reusable = co_await ReadBody(st, conn, stream, parser, estimated_input, record);
    co_return reusable ? Outcome::kReusable : Outcome::kDone;
  }

  // Reads the body on `stream`, each read stamped with the clock as it
  // ends, into a ResponseReader that fills `record`. Returns whether the
  // connection may carry another request.
  template <class Stream>
  net::awaitable<bool> ReadBody(std::shared_ptr<RequestState> st, Connection& conn, Stream& stream,
                                http::response_parser<http::buffer_body>& parser,
                                uint32_t estimated_input, RequestRecord& record) {
    ResponseReader reader(ReaderSetup{.kind = kind_,
                                      .stream = stream_,
                                      .http_status = parser.get().result_int(),
                                      .sent_ns = st->first_sent_ns,
                                      .estimated_input = estimated_input,
                                      .api_key = api_key_});
    error_code ec;
    std::vector<char> buf(kReadChunk);
    bool accepted = true;
    while (accepted && !parser.is_done()) {
      parser.get().body().data = buf.data();
      parser.get().body().size = buf.size();
      co_await http::async_read_some(stream, conn.buffer, parser,
                                     net::redirect_error(net::use_awaitable, ec));
      if (ec == http::error::need_buffer) ec = {};
      const int64_t now_ns = ToNanos(clock_.Now());
      const size_t n = buf.size() - parser.get().body().size;
      accepted = reader.OnRead(std::string_view(buf.data(), n), now_ns, /*read_ok=*/!ec);
      if (ec) break;
    }
    const bool keep_alive = !ec && accepted && parser.keep_alive();
    co_return reader.Finish(EndOfBody(*st, ec, accepted, keep_alive), record);
  }

  // How the reading of a body that stopped with `ec` ended: whole, refused
  // by the reader, cut by the peer, or broken (a timeout, a stop, another
  // error: FailIo's failure).
  static BodyEnd EndOfBody(const RequestState& st, const error_code& ec, bool accepted,
                           bool keep_alive) {
    BodyEnd end;
    if (!ec) {
      end.how = accepted ? BodyEnd::How::kWhole : BodyEnd::How::kRefused;
      end.keep_alive = keep_alive;
    } else if (IsClosedByPeer(ec) && !st.aborted.load() && !st.timed_out) {
      end.how = BodyEnd::How::kCut;
    } else {
      end.how = BodyEnd::How::kBroken;
      end.failure = IoFailure(st, "stream_error", ec);
    }
    return end;
  }

  Clock& clock_;
  const ParsedUrl url_;
  const std::string target_path_;
  const ApiKind kind_;
  const std::string model_;
  const bool stream_;
  const double timeout_s_;
  // Every header line but Content-Length; holds the API key: never log it.
  const std::string header_block_;
  const std::string api_key_;        // "" = none; only to redact it from error texts
  const nlohmann::json extra_body_;  // null: none
  const bool ignore_eos_;            // the extra body asks for ignore_eos (short-output rule)
  const std::shared_ptr<net::ssl::context> tls_context_;  // null for http
  const bool verify_peer_;
  const tcp::resolver::results_type endpoints_;

  // Declared before everything that holds sockets, so it is destroyed last.
  net::io_context ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> connections_opened_{0};
  // Requests whose first write was stamped (record sent_ns set): the live
  // metrics' sent counter (RequestSender::sent_total).
  std::atomic<uint64_t> sent_total_{0};
  std::atomic<int64_t> connect_ns_total_{0};

  std::mutex shutdown_mu_;  // serialises Shutdown calls
  bool shut_down_ = false;  // guarded by shutdown_mu_

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool shutting_down_ = false;                                          // guarded by mu_
  uint64_t next_id_ = 0;                                                // guarded by mu_
  size_t inflight_ = 0;                                                 // guarded by mu_
  std::vector<std::shared_ptr<Connection>> idle_;                       // guarded by mu_
  std::unordered_map<uint64_t, std::shared_ptr<RequestState>> active_;  // guarded by mu_
  std::map<PrepKey, std::shared_ptr<Preparation>> prepared_;            // guarded by mu_
};

absl::StatusOr<std::unique_ptr<BeastRequestSender>> BeastRequestSender::Create(
    Clock& clock, const surge::v1::TargetConfig& target, int io_threads) {
  if (io_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("io_threads: ", io_threads, " is not allowed; use 1 or more"));
  }
  absl::StatusOr<ParsedUrl> url = ParseBaseUrl(target.base_url());
  if (!url.ok()) return url.status();
  std::shared_ptr<net::ssl::context> tls_context;
  if (url->scheme == "https") {
    absl::StatusOr<std::shared_ptr<net::ssl::context>> context = MakeClientTlsContext(target);
    if (!context.ok()) return context.status();
    tls_context = *std::move(context);
  }
  std::string endpoint = target.endpoint().empty() ? kDefaultEndpoint : target.endpoint();
  if (endpoint[0] != '/' || endpoint.find_first_of(" \r\n\t") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoint: \"", endpoint,
                     "\" must be a path starting with '/', e.g. /v1/chat/completions"));
  }
  if (!(target.request_timeout_s() >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request_timeout_s: ", target.request_timeout_s(), " must be >= 0 (0 = no timeout)"));
  }
  std::vector<HeaderLine> headers;
  for (int i = 0; i < target.headers_size(); ++i) {
    absl::StatusOr<HeaderLine> header = ParseHeaderLine(target.headers(i));
    if (!header.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("headers[", i, "]: ", std::string(header.status().message())));
    }
    headers.push_back(*std::move(header));
  }
  absl::StatusOr<nlohmann::json> extra_body = ParseExtraBody(target.extra_body_json());
  if (!extra_body.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("extra_body_json: ", std::string(extra_body.status().message())));
  }
  absl::StatusOr<std::string> api_key = LoadApiKey(target);
  if (!api_key.ok()) return api_key.status();
  std::string header_block = HeaderBlock(*url, target.stream(), *api_key, headers);

  // Resolve once: DNS stays out of every request's timing.
  net::io_context resolve_ioc;
  tcp::resolver resolver(resolve_ioc);
  error_code ec;
  tcp::resolver::results_type endpoints =
      resolver.resolve(url->host, std::to_string(url->port), ec);
  if (ec || endpoints.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", url->host, " (base_url ",
                                               target.base_url(), "): ", ec.message()));
  }
  const ApiKind kind = ApiKindForEndpoint(endpoint);
  const std::string target_path = url->path_prefix + endpoint;
  const bool verify_peer = !target.insecure_skip_verify();
  auto impl =
      std::make_unique<Impl>(clock, *std::move(url), target_path, kind, target.model(),
                             target.stream(), target.request_timeout_s(), std::move(header_block),
                             *std::move(api_key), *std::move(extra_body), std::move(tls_context),
                             verify_peer, std::move(endpoints), io_threads);
  return std::unique_ptr<BeastRequestSender>(new BeastRequestSender(std::move(impl)));
}

BeastRequestSender::BeastRequestSender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BeastRequestSender::~BeastRequestSender() { Shutdown(std::chrono::milliseconds(0)); }

void BeastRequestSender::Send(const surge::v1::Assignment& assignment, SendCallback on_done) {
  impl_->Send(assignment, std::move(on_done));
}

void BeastRequestSender::Prepare(const surge::v1::Assignment& assignment) {
  impl_->Prepare(assignment);
}

void BeastRequestSender::CancelPrepared(const surge::v1::Assignment& assignment) {
  impl_->CancelPrepared(assignment);
}

size_t BeastRequestSender::inflight() const { return impl_->inflight(); }

void BeastRequestSender::Shutdown(std::chrono::milliseconds drain) { impl_->Shutdown(drain); }

uint64_t BeastRequestSender::connections_opened() const { return impl_->connections_opened(); }

uint64_t BeastRequestSender::sent_total() const { return impl_->sent_total(); }

ConnectTotals BeastRequestSender::connect_totals() const {
  return ConnectTotals{impl_->connections_opened(), impl_->connect_ns_total()};
}

}  // namespace surge::worker
