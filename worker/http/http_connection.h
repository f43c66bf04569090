// The sender's connections (internal to worker/http: includes Asio): one
// pooled TCP or TLS connection, the checks the pool makes on it, and the
// Connector that opens connections to the target's resolved addresses.
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
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  // Local ns when a preparation or a request took it from the pool (or
  // made it); 0 while idle or never taken (the warm pool's hold time).
  int64_t taken_ns = 0;
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

// Which of the target host's addresses a new connection goes to
// (TargetConfig.address_policy, --target-address-policy).
enum class AddressPolicy {
  // The next address in turn for each new connection (one counter per
  // Connector), then, when it refuses, the others in order.
  kRoundRobin,
  // The first address for every connection, the others only when it refuses.
  kFirst,
};
// "round-robin" (or "") and "first"; nullopt for another text.
std::optional<AddressPolicy> AddressPolicyFromName(const std::string& name);

// The target host's addresses, resolved (blocking): the port's endpoints in
// the resolver's order, without repeats. Errors: UNAVAILABLE with the reason.
using Resolve = std::function<absl::StatusOr<std::vector<boost::asio::ip::tcp::endpoint>>()>;
// A Resolve that asks the system's resolver (getaddrinfo) for `host`:`port`.
Resolve SystemResolver(std::string host, uint16_t port);

// "3 addresses: 127.0.0.1, 127.0.0.2, 127.0.0.3" (IPv6 in brackets, no
// port). Pure.
std::string AddressList(const std::vector<boost::asio::ip::tcp::endpoint>& endpoints);

// The line a sender logs at start: "target HOST:PORT resolves to 3
// addresses: 127.0.0.1, 127.0.0.2, 127.0.0.3; new connections take them in
// turn (--target-address-policy round-robin)". Pure.
std::string AddressesLine(const std::string& host, uint16_t port,
                          const std::vector<boost::asio::ip::tcp::endpoint>& endpoints,
                          AddressPolicy policy);

// Opens connections to the target's addresses and counts them. A new
// connection tries the address `policy` picks, then the others in order;
// when every known address refuses, the host is resolved again (at most
// once a second; a changed list is logged) and the new list is tried once.
// Thread-safe.
class Connector {
 public:
  // `endpoints`: the addresses resolved at start (not empty); `resolve`
  // gives them again (may be empty: no re-resolution). `clock` times the
  // set-up; it must outlive the connector.
  Connector(Clock& clock, std::vector<boost::asio::ip::tcp::endpoint> endpoints, Resolve resolve,
            std::string host, bool verify_peer, AddressPolicy policy = AddressPolicy::kRoundRobin);

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
  // Times the host was resolved again (every address refused).
  uint64_t re_resolved() const { return re_resolved_.load(); }
  // The addresses new connections go to now.
  std::vector<boost::asio::ip::tcp::endpoint> endpoints() const;

 private:
  using Endpoints = std::vector<boost::asio::ip::tcp::endpoint>;
  // The addresses one new connection tries, in order.
  Endpoints AttemptOrder();
  // Connects the TCP socket to the first of `order` that accepts; false
  // with `ec` (the last refusal) when none does or `cancel` says so.
  boost::asio::awaitable<bool> ConnectAny(Connection& conn, const Endpoints& order,
                                          const OpenCancel& cancel, boost::system::error_code& ec);
  // Resolves the host again when allowed (a resolver, a second since the
  // last time); true when it gave addresses, now the known ones.
  bool ReResolve();

  Clock& clock_;
  const Resolve resolve_;
  const std::string host_;
  const bool verify_peer_;
  const AddressPolicy policy_;
  mutable std::mutex mu_;
  Endpoints endpoints_;                  // guarded by mu_
  uint64_t next_ = 0;                    // guarded by mu_: round-robin counter
  int64_t last_resolve_ns_ = INT64_MIN;  // guarded by mu_
  std::atomic<uint64_t> opened_{0};
  std::atomic<int64_t> connect_ns_total_{0};
  std::atomic<uint64_t> re_resolved_{0};
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_HTTP_CONNECTION_H_
