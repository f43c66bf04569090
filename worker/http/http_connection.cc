#include "worker/http/http_connection.h"

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/tls_client.h"
#include "common/log.h"

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

std::optional<AddressPolicy> AddressPolicyFromName(const std::string& name) {
  if (name.empty() || name == "round-robin") return AddressPolicy::kRoundRobin;
  if (name == "first") return AddressPolicy::kFirst;
  return std::nullopt;
}

Resolve SystemResolver(std::string host, uint16_t port) {
  return [host = std::move(host), port]() -> absl::StatusOr<std::vector<tcp::endpoint>> {
    net::io_context ioc;
    tcp::resolver resolver(ioc);
    error_code ec;
    const tcp::resolver::results_type results = resolver.resolve(host, std::to_string(port), ec);
    std::vector<tcp::endpoint> out;
    for (const auto& entry : results) {
      if (std::find(out.begin(), out.end(), entry.endpoint()) == out.end()) {
        out.push_back(entry.endpoint());
      }
    }
    if (ec || out.empty()) {
      return absl::UnavailableError(
          absl::StrCat("cannot resolve ", host, ": ", ec ? ec.message() : "no address"));
    }
    return out;
  };
}

std::string AddressList(const std::vector<tcp::endpoint>& endpoints) {
  std::string out =
      absl::StrCat(endpoints.size(), endpoints.size() == 1 ? " address: " : " addresses: ");
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const net::ip::address& a = endpoints[i].address();
    absl::StrAppend(&out, i == 0 ? "" : ", ", a.is_v6() ? "[" : "", a.to_string(),
                    a.is_v6() ? "]" : "");
  }
  return out;
}

// The start-up line: every address and where new connections go.
std::string AddressesLine(const std::string& host, uint16_t port,
                          const std::vector<tcp::endpoint>& endpoints, AddressPolicy policy) {
  std::string line =
      absl::StrCat("target ", host, ":", port, " resolves to ", AddressList(endpoints));
  if (endpoints.size() > 1) {
    absl::StrAppend(&line, policy == AddressPolicy::kRoundRobin
                               ? "; new connections take them in turn (--target-address-policy "
                                 "round-robin)"
                               : "; every connection goes to the first (--target-address-policy "
                                 "first)");
  }
  return line;
}

Connector::Connector(Clock& clock, std::vector<tcp::endpoint> endpoints, Resolve resolve,
                     std::string host, bool verify_peer, AddressPolicy policy)
    : clock_(clock),
      resolve_(std::move(resolve)),
      host_(std::move(host)),
      verify_peer_(verify_peer),
      policy_(policy),
      endpoints_(std::move(endpoints)) {}

std::vector<tcp::endpoint> Connector::endpoints() const {
  std::lock_guard<std::mutex> lock(mu_);
  return endpoints_;
}

std::vector<tcp::endpoint> Connector::AttemptOrder() {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = endpoints_.size();
  const size_t start = (policy_ == AddressPolicy::kRoundRobin && n > 0) ? next_++ % n : 0;
  Endpoints order;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) order.push_back(endpoints_[(start + i) % n]);
  return order;
}

bool Connector::ReResolve() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now_ns = ToNanos(clock_.Now());
    if (!resolve_ || (last_resolve_ns_ != INT64_MIN && now_ns - last_resolve_ns_ < 1'000'000'000)) {
      return false;
    }
    last_resolve_ns_ = now_ns;
  }
  absl::StatusOr<Endpoints> fresh = resolve_();
  re_resolved_.fetch_add(1);
  if (!fresh.ok() || fresh->empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (*fresh != endpoints_) {
    LogInfo(absl::StrCat("target ", host_, " resolved again (no address accepted a connection): ",
                         AddressList(*fresh)));
    endpoints_ = *std::move(fresh);
  }
  return true;
}

net::awaitable<bool> Connector::ConnectAny(Connection& conn, const Endpoints& order,
                                           const OpenCancel& cancel, error_code& ec) {
  ec = net::error::host_not_found;
  for (const tcp::endpoint& endpoint : order) {
    if (cancel.cancelled()) {
      ec = net::error::operation_aborted;
      co_return false;
    }
    error_code ignored;
    conn.socket().close(ignored);  // a refused attempt leaves it open
    ec = {};
    co_await conn.socket().async_connect(endpoint, net::redirect_error(net::use_awaitable, ec));
    if (!ec) co_return true;
  }
  co_return false;
}

net::awaitable<bool> Connector::Open(Connection& conn, OpenCancel cancel, OpenError& error) {
  error_code ec;
  const int64_t connect_start_ns = ToNanos(clock_.Now());
  bool connected = co_await ConnectAny(conn, AttemptOrder(), cancel, ec);
  // Every known address refused: the host may have moved.
  if (!connected && !cancel.cancelled() && ec != net::error::operation_aborted && ReResolve()) {
    connected = co_await ConnectAny(conn, AttemptOrder(), cancel, ec);
  }
  if (connected && cancel.cancelled()) ec = net::error::operation_aborted;
  if (!connected || ec) {
    if (!ec) ec = net::error::operation_aborted;
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
