#include "worker/http/request_exchange.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/failure_kind.h"

namespace surge::worker {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
using surge::v1::RequestRecord;

// Body bytes taken per read: large enough for many SSE events at once,
// small enough to timestamp events as they arrive.
constexpr size_t kReadChunk = 16 * 1024;
// Answers are streamed through a fixed buffer, so this only guards against
// a runaway server.
constexpr uint64_t kBodyLimitBytes = 1ull << 40;

// The failure kind of an I/O error met in `phase` (IoFailure's phases).
surge::v1::FailureKind PhaseKind(std::string_view phase) {
  if (phase == "connect") return surge::v1::FAILURE_KIND_CONNECT;
  if (phase == "tls") return surge::v1::FAILURE_KIND_TLS;
  if (phase == "send") return surge::v1::FAILURE_KIND_SEND;
  if (phase == "connection_closed") return surge::v1::FAILURE_KIND_CONNECTION_CLOSED;
  if (phase == "stream_error") return surge::v1::FAILURE_KIND_STREAM_ERROR;
  return surge::v1::FAILURE_KIND_OTHER;
}

// The failure an I/O error `ec` met in `phase` amounts to for `st`: cut off
// by Shutdown, timed out, or "<phase>: <message>" (`message`, or
// ec.message() when it is empty).
ReadFailure IoFailure(const RequestState& st, const char* phase, const error_code& ec,
                      const std::string& message = "") {
  if (st.aborted.load()) {
    // Cut off by Shutdown; the sender makes it NOT_SENT when nothing went out.
    return {surge::v1::INTERRUPTED, surge::v1::FAILURE_KIND_INTERRUPTED, kInterruptedError};
  }
  if (st.timed_out) return {surge::v1::FAILED, surge::v1::FAILURE_KIND_TIMEOUT, "timeout"};
  return {surge::v1::FAILED, PhaseKind(phase),
          absl::StrCat(phase, ": ", message.empty() ? ec.message() : message)};
}

// Sets status and error for an I/O error `ec` met in `phase` (IoFailure).
void FailIo(const RequestState& st, const char* phase, const error_code& ec, RequestRecord& record,
            const std::string& message = "") {
  ReadFailure failure = IoFailure(st, phase, ec, message);
  SetFailure(record, failure.status, failure.kind, std::move(failure.error));
}

// Counts a keep-alive retry of `st` and its cause ("<cause>: <ec>").
void NoteRetry(RequestState& st, const char* cause, const error_code& ec) {
  ++st.http_retries;
  st.retry_reason = absl::StrCat(cause, ": ", ec.message());
}

// How the reading of a body that stopped with `ec` ended: whole, refused
// by the reader, cut by the peer, or broken (a timeout, a stop, another
// error: IoFailure's failure).
BodyEnd EndOfBody(const RequestState& st, const error_code& ec, bool accepted, bool keep_alive) {
  BodyEnd end;
  if (!ec) {
    end.how = accepted ? BodyEnd::How::kWhole : BodyEnd::How::kRefused;
    end.keep_alive = keep_alive;
  } else if (IsClosedByPeer(ec) && !st.stopped()) {
    end.how = BodyEnd::How::kCut;
  } else {
    end.how = BodyEnd::How::kBroken;
    end.failure = IoFailure(st, "stream_error", ec);
  }
  return end;
}

// The value of `header`'s field `name`; "" when it has none. Valid while
// the header lives.
template <class Header>
std::string_view HeaderValue(const Header& header, http::field name) {
  const auto value = header[name];
  return std::string_view(value.data(), value.size());
}

// Builds the request's bytes when nothing was prepared.
void BuildRequest(const RequestFormat& format, RequestState& st) {
  if (st.built) return;
  BuiltRequest built = BuildAssignmentRequest(format, st.assignment);
  st.estimated_input = built.estimated_input;
  st.request_bytes = std::move(built.bytes);
  st.session_prompt = std::move(built.session_prompt);
  st.assignment = surge::v1::Assignment();
  st.built = true;
}

}  // namespace

RequestExchange::RequestExchange(Clock& clock, const RequestFormat& format, Connector& connector,
                                 net::ssl::context* tls_context)
    : clock_(clock), format_(format), connector_(connector), tls_context_(tls_context) {}

void RequestExchange::StartWatchdog(const std::shared_ptr<RequestState>& st) {
  if (format_.timeout_s <= 0 || st->watchdog.has_value() || st->finished.load()) return;
  st->watchdog.emplace(*st->strand);
  st->watchdog->expires_after(
      std::chrono::nanoseconds(static_cast<int64_t>(format_.timeout_s * 1e9)));
  st->watchdog->async_wait([st](const error_code& ec) {
    if (ec || st->finished.load()) return;
    st->timed_out = true;
    if (st->conn != nullptr) st->conn->Close();
  });
}

net::awaitable<bool> RequestExchange::Execute(std::shared_ptr<RequestState> st,
                                              RequestRecord& record) {
  BuildRequest(format_, *st);
  if (st->keep_text) record.set_sent_prompt_text(st->session_prompt);
  record.set_input_tokens(st->estimated_input);
  record.set_input_tokens_estimated(true);  // until the answer's usage says otherwise
  // Bytes written by Send are out, whatever happens next.
  if (st->direct_written > 0) record.set_sent_ns(st->direct_sent_ns);
  StartWatchdog(st);
  bool retried = false;
  for (;;) {
    if (st->stopped()) {
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
      outcome = co_await Attempt(st, *conn, *conn->tls, can_retry, record);
    } else {
      outcome = co_await Attempt(st, *conn, *conn->plain, can_retry, record);
    }
    if (outcome != Outcome::kRetry) co_return outcome == Outcome::kReusable;
    retried = true;
    st->conn = std::make_shared<Connection>(conn->strand, tls_context_);
  }
}

// Connect time and handshake come before sent_ns (R-ACT-2). On failure
// fills `record`.
net::awaitable<bool> RequestExchange::Open(std::shared_ptr<RequestState> st, Connection& conn,
                                           RequestRecord& record) {
  OpenError error;
  const bool opened = co_await connector_.Open(conn, st->open_cancel(), error);
  if (opened) co_return true;
  if (error.phase.empty()) {
    // TLS set-up (certificates, SNI) before any handshake.
    SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_TLS, error.message);
  } else {
    FailIo(*st, error.phase.c_str(), error.ec, record, error.message);
  }
  co_return false;
}

size_t RequestExchange::StampWrite(RequestState& st) {
  // Send may have written the first bytes already (WriteFirstBytes): then
  // sent_ns is its stamp and only the rest is written here. Otherwise
  // R-ACT-2: the first byte is handed to the socket right after this.
  size_t written = 0;
  int64_t write_ns = 0;
  if (st.direct_written > 0) {
    written = std::exchange(st.direct_written, 0);
    write_ns = st.direct_sent_ns;
  } else {
    write_ns = ToNanos(clock_.Now());
  }
  // After a keep-alive retry the request still counts from its first
  // write: the reconnect is part of its latency, not of its lateness.
  if (st.http_retries > 0) {
    st.retry_sent_ns = write_ns;
  } else {
    st.first_sent_ns = write_ns;
    sent_total_.fetch_add(1);  // its record will have sent_ns: sent
  }
  return written;
}

template <class Stream>
net::awaitable<RequestExchange::Outcome> RequestExchange::Attempt(std::shared_ptr<RequestState> st,
                                                                  Connection& conn, Stream& stream,
                                                                  bool can_retry,
                                                                  RequestRecord& record) {
  error_code ec;
  const std::string& request_bytes = st->request_bytes;
  const size_t written = StampWrite(*st);
  if (written < request_bytes.size()) {
    co_await net::async_write(
        stream, net::buffer(request_bytes.data() + written, request_bytes.size() - written),
        net::redirect_error(net::use_awaitable, ec));
  }
  record.set_sent_ns(st->first_sent_ns);
  if (ec) {
    if (can_retry && IsClosedByPeer(ec) && !st->stopped()) {
      NoteRetry(*st, "keepalive_closed_on_write", ec);
      co_return Outcome::kRetry;
    }
    FailIo(*st, "send", ec, record);
    co_return Outcome::kDone;
  }

  Parser parser;
  // Not boost::none: Beast 1.74 then rejects every Content-Length body.
  parser.body_limit(kBodyLimitBytes);
  co_await http::async_read_header(stream, conn.buffer, parser,
                                   net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    // The keep-alive race: the server closed the idle connection just as
    // the request went out, so it never saw the request.
    if (can_retry && conn.buffer.size() == 0 && IsClosedByPeer(ec) && !st->stopped()) {
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
  const bool reusable = co_await ReadBody(st, conn, stream, parser, record);
  co_return reusable ? Outcome::kReusable : Outcome::kDone;
}

// Each read is stamped with the clock as it ends, before its bytes are
// looked at: the token times are arrival times.
template <class Stream>
net::awaitable<bool> RequestExchange::ReadBody(std::shared_ptr<RequestState> st, Connection& conn,
                                               Stream& stream, Parser& parser,
                                               RequestRecord& record) {
  const auto& header = parser.get();
  ResponseReader reader(
      ReaderSetup{.kind = format_.kind,
                  .stream = format_.stream,
                  .http_status = header.result_int(),
                  .sent_ns = st->first_sent_ns,
                  .estimated_input = st->estimated_input,
                  .keep_answer_text = st->keep_text,
                  .api_key = format_.api_key,
                  .content_encoding = HeaderValue(header, http::field::content_encoding),
                  .location = HeaderValue(header, http::field::location)});
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

}  // namespace surge::worker
