#include "coordinator/metrics_http/metrics_http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace surge::coordinator {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using beast::error_code;

// Request bounds: a scrape is a small GET.
constexpr uint32_t kHeaderLimitBytes = 8 * 1024;
// An idle or slow connection is closed after this (an I/O timeout, not a
// measurement: it reads no clock of the run).
constexpr std::chrono::seconds kIdleTimeout{10};
constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// One connection: read a request, answer, repeat while keep-alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const MetricsHttpServer::Render& render)
      : stream_(std::move(socket)), render_(render) {}

  void Read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimitBytes);
    parser_->body_limit(0);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) { self->OnRead(ec); });
  }

  void Close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

 private:
  void OnRead(error_code ec) {
    if (ec) {
      if (ec != http::error::end_of_stream && ec != beast::error::timeout &&
          ec != net::error::operation_aborted) {
        Answer(http::status::bad_request, "bad request\n", false, true);
        return;
      }
      Close();
      return;
    }
    const auto& req = parser_->get();
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const bool head = req.method() == http::verb::head;
    if (path != "/metrics") {
      Answer(http::status::not_found, "not found: GET /metrics\n", head, !req.keep_alive());
    } else if (req.method() != http::verb::get && !head) {
      Answer(http::status::method_not_allowed, "method not allowed: GET /metrics\n", false,
             !req.keep_alive());
    } else {
      Answer(http::status::ok, render_(), head, !req.keep_alive());
    }
  }

  void Answer(http::status status, std::string body, bool head, bool close) {
    auto res = std::make_shared<http::response<http::string_body>>(status, 11);
    res->set(http::field::server, "surge");
    res->set(http::field::content_type,
             status == http::status::ok ? kContentType : "text/plain; charset=utf-8");
    if (status == http::status::method_not_allowed) res->set(http::field::allow, "GET, HEAD");
    res->keep_alive(!close);
    res->body() = std::move(body);
    res->prepare_payload();
    if (head) res->body().clear();  // Content-Length stays the GET's
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, close](error_code ec, size_t) {
                        if (ec || close) {
                          self->Close();
                          return;
                        }
                        self->Read();
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  const MetricsHttpServer::Render& render_;
};

}  // namespace

class MetricsHttpServer::Impl {
 public:
  explicit Impl(Render render) : render_(std::move(render)), acceptor_(ioc_) {}

  absl::Status Listen(const std::string& host, uint16_t port) {
    error_code ec;
    tcp::resolver resolver(ioc_);
    const auto results =
        resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot resolve ", host, ": ", ec ? ec.message() : "no address"));
    }
    const tcp::endpoint endpoint = results.begin()->endpoint();
    const std::string where = absl::StrCat(host, ":", port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec)
      return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", ec.message()));
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { ioc_.run(); });
    return absl::OkStatus();
  }

  uint16_t port() const { return port_; }

  void Stop() {
    std::call_once(stopped_, [this] {
      net::post(ioc_, [this] {
        error_code ignored;
        acceptor_.close(ignored);
        for (const auto& weak : sessions_) {
          if (auto s = weak.lock()) s->Close();
        }
      });
      if (thread_.joinable()) {
        // Gives the closes a moment, then ends the loop whatever is left.
        net::post(ioc_, [this] { ioc_.stop(); });
        thread_.join();
      }
    });
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
        Accept();  // e.g. EMFILE: keep serving the others
        return;
      }
      auto session = std::make_shared<Session>(std::move(socket), render_);
      // Forget sessions that have ended.
      for (auto it = sessions_.begin(); it != sessions_.end();) {
        it = it->expired() ? sessions_.erase(it) : std::next(it);
      }
      sessions_.insert(session);
      session->Read();
      Accept();
    });
  }

  Render render_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  std::set<std::weak_ptr<Session>, std::owner_less<std::weak_ptr<Session>>> sessions_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::once_flag stopped_;
};

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& host,
                                                                            uint16_t port,
                                                                            Render render) {
  auto impl = std::make_unique<Impl>(std::move(render));
  if (absl::Status s = impl->Listen(host, port); !s.ok()) return s;
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(impl)));
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

uint16_t MetricsHttpServer::port() const { return impl_->port(); }

void MetricsHttpServer::Stop() { impl_->Stop(); }

}  // namespace surge::coordinator
