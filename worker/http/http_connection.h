// The sender's connections (internal to worker/http: includes Asio): one
// pooled TCP or TLS connection, the checks the pool makes on it, and the
// Connector that opens connections to one resolved target.
#ifndef SURGE_WORKER_HTTP_HTTP_CONNECTION_H_
#define SURGE_WORKER_HTTP_HTTP_CONNECTION_H_

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"

namespace surge::worker {

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

// One connection of the pool: TCP, or TLS over TCP when `tls_context` is
// given. Only the coroutine of the request that holds it touches it, on
// `strand` (the socket's executor).
struct Connection {
  Connection(Strand s, boost::asio::ssl::context* tls_context);
  // The TCP socket (under the TLS layer for https).
  boost::asio::ip::tcp::socket& socket() { return tls.has_value() ? tls->next_layer() : *plain; }
  // Closes the TCP socket, ignoring errors.
  void Close();

  Strand strand;
  std::optional<boost::asio::ip::tcp::socket> plain;                          // http
  std::optional<boost::beast::ssl_stream<boost::asio::ip::tcp::socket>> tls;  // https
  boost::beast::flat_buffer buffer;
  bool connected = false;  // TCP connected and, for https, handshake done
  bool reused = false;     // has answered a request before
};

// True when the server has closed an idle connection (or sent bytes nobody
// asked for): such a connection must not be reused.
bool IdleConnectionIsStale(Connection& conn);

// True for the errors of a connection the peer closed (or reset, or whose
// TLS it cut).
bool IsClosedByPeer(const boost::system::error_code& ec);

// How opening a connection failed: `phase` "connect" or "tls" with the
// error; or an empty phase and a whole `message` (TLS setup).
struct OpenError {
  std::string phase;
  boost::system::error_code ec;
  std::string message;
};

// What an open gives up for, checked after each step (a closed socket shows
// up as an error of the step itself): a request stopped by Shutdown or
// timed out, or a preparation abandoned. Null pointers are never set. Read
// on the connection's strand only.
struct OpenCancel {
  const std::atomic<bool>* aborted = nullptr;
  const bool* timed_out = nullptr;
  const std::atomic<bool>* abandoned = nullptr;

  bool cancelled() const {
    return (aborted != nullptr && aborted->load()) || (timed_out != nullptr && *timed_out) ||
           (abandoned != nullptr && abandoned->load());
  }
};

// Opens connections to one resolved target and counts them. Thread-safe.
class Connector {
 public:
  // `clock` times the set-up; it must outlive the connector.
  Connector(Clock& clock, boost::asio::ip::tcp::resolver::results_type endpoints, std::string host,
            bool verify_peer);

  // Connects `conn` (TCP, no Nagle) and, for https, runs the TLS handshake
  // (SNI and verification for `host`); marks it connected. Gives up after a
  // step when `cancel` says so. On failure fills `error`. (A struct of
  // plain pointers, not a callable: g++ 12 has had bugs with non-trivial
  // temporaries in co_await expressions.)
  boost::asio::awaitable<bool> Open(Connection& conn, OpenCancel cancel, OpenError& error);

  // Connections opened successfully so far, and their total set-up time
  // (connect + handshake), ns.
  uint64_t opened() const { return opened_.load(); }
  int64_t connect_ns_total() const { return connect_ns_total_.load(); }

 private:
  Clock& clock_;
  const boost::asio::ip::tcp::resolver::results_type endpoints_;
  const std::string host_;
  const bool verify_peer_;
  std::atomic<uint64_t> opened_{0};
  std::atomic<int64_t> connect_ns_total_{0};
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_HTTP_CONNECTION_H_
