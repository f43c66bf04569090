#include "worker/http/http_connection.h"

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>
#include <cerrno>
#include <utility>

#include "absl/status/status.h"
#include "client/tls_client.h"

namespace surge::worker {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

Connection::Connection(Strand s, net::ssl::context* tls_context) : strand(s) {
  if (tls_context != nullptr) {
    tls.emplace(s, *tls_context);
  } else {
    plain.emplace(s);
  }
}

void Connection::Close() {
  error_code ignored;
  socket().close(ignored);
}

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

Connector::Connector(Clock& clock, tcp::resolver::results_type endpoints, std::string host,
                     bool verify_peer)
    : clock_(clock),
      endpoints_(std::move(endpoints)),
      host_(std::move(host)),
      verify_peer_(verify_peer) {}

net::awaitable<bool> Connector::Open(Connection& conn, OpenCancel cancel, OpenError& error) {
  error_code ec;
  const int64_t connect_start_ns = ToNanos(clock_.Now());
  co_await net::async_connect(conn.socket(), endpoints_,
                              net::redirect_error(net::use_awaitable, ec));
  if (!ec && cancel.cancelled()) ec = net::error::operation_aborted;
  if (ec) {
    error.phase = "connect";
    error.ec = ec;
    co_return false;
  }
  opened_.fetch_add(1);
  // Tokens are small writes and reads: never delay them (Nagle).
  conn.socket().set_option(tcp::no_delay(true), ec);
  if (conn.tls.has_value()) {
    SSL* ssl = conn.tls->native_handle();
    if (absl::Status prepared = client::PrepareTlsClient(ssl, host_, verify_peer_);
        !prepared.ok()) {
      error.message = std::string(prepared.message());
      co_return false;
    }
    ec = {};
    co_await conn.tls->async_handshake(net::ssl::stream_base::client,
                                       net::redirect_error(net::use_awaitable, ec));
    if (!ec && cancel.cancelled()) ec = net::error::operation_aborted;
    if (ec) {
      error.phase = "tls";
      error.ec = ec;
      error.message = client::TlsErrorMessage(ec, ssl);
      co_return false;
    }
  }
  conn.connected = true;
  // Set-up time (connect + handshake) for the lateness monitor's
  // "connection set-up" cause (worker/send_health.h).
  connect_ns_total_.fetch_add(ToNanos(clock_.Now()) - connect_start_ns);
  co_return true;
}

}  // namespace surge::worker
