#include "client/http_exchange.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <exception>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/api_key.h"
#include "client/tls_client.h"

namespace surge::client {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

absl::StatusOr<HttpTarget> ReadHttpTarget(const surge::v1::TargetConfig& target) {
  HttpTarget out;
  absl::StatusOr<ParsedUrl> url = ParseBaseUrl(target.base_url());
  if (!url.ok()) return url.status();
  if (url->scheme == "https") {
    absl::StatusOr<std::shared_ptr<net::ssl::context>> context = MakeClientTlsContext(target);
    if (!context.ok()) return context.status();
    out.tls = *std::move(context);
  }
  out.url = *std::move(url);
  for (int i = 0; i < target.headers_size(); ++i) {
    absl::StatusOr<HeaderLine> header = ParseHeaderLine(target.headers(i));
    if (!header.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("headers[", i, "]: ", std::string(header.status().message())));
    }
    out.headers.push_back(*std::move(header));
  }
  absl::StatusOr<std::string> api_key = LoadApiKey(target);
  if (!api_key.ok()) return api_key.status();
  out.api_key = *std::move(api_key);
  out.verify = !target.insecure_skip_verify();
  return out;
}

struct HttpExchange::Impl {
  HttpTarget target;
  std::chrono::milliseconds timeout{0};
  net::io_context ioc;
  std::optional<beast::tcp_stream> plain;
  std::optional<TlsStream> tls;
  beast::flat_buffer buffer;

  bool connected() const { return plain.has_value() || tls.has_value(); }
  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  void Close() {
    error_code ignored;
    if (connected()) {
      lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      lowest().socket().close(ignored);
    }
    tls.reset();
    plain.reset();
    buffer.clear();
  }

  // Resolve, connect and, for https, the TLS handshake; each step bounded
  // by `timeout`.
  net::awaitable<void> Open(HttpAnswer& out) {
    tcp::resolver resolver(ioc);
    error_code ec;
    auto endpoints =
        co_await resolver.async_resolve(target.url.host, std::to_string(target.url.port),
                                        net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      out.error = absl::StrCat("resolve: ", ec.message());
      co_return;
    }
    if (target.tls) {
      tls.emplace(ioc, *target.tls);
    } else {
      plain.emplace(ioc);
    }
    beast::tcp_stream& layer = lowest();
    layer.expires_after(timeout);
    co_await layer.async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      out.error = absl::StrCat("connect: ", ec.message());
      co_return;
    }
    if (tls) {
      if (absl::Status s = PrepareTlsClient(tls->native_handle(), target.url.host, target.verify);
          !s.ok()) {
        out.error = std::string(s.message());
        co_return;
      }
      layer.expires_after(timeout);
      co_await tls->async_handshake(net::ssl::stream_base::client,
                                    net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        out.error = absl::StrCat("tls: ", TlsErrorMessage(ec, tls->native_handle()));
        co_return;
      }
    }
    out.connected = true;
  }

  http::request<http::string_body> Build(const HttpRequest& in) const {
    const bool post = in.method == HttpRequest::Method::kPost;
    http::request<http::string_body> request(post ? http::verb::post : http::verb::get, in.target,
                                             11);
    request.set(http::field::host, target.url.HostHeader());
    request.set(http::field::user_agent, "surge");
    if (post) request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json");
    if (!target.api_key.empty()) {
      request.set(http::field::authorization, absl::StrCat("Bearer ", target.api_key));
    }
    for (const HeaderLine& h : target.headers) request.set(h.name, h.value);
    request.keep_alive(true);
    request.body() = in.body;
    request.prepare_payload();
    return request;
  }

  // Writes the request and reads the whole answer; the write's `timeout`
  // covers the read too.
  template <class Stream>
  net::awaitable<void> Talk(Stream& stream, const HttpRequest& in, HttpAnswer& out) {
    const http::request<http::string_body> request = Build(in);
    error_code ec;
    lowest().expires_after(timeout);
    co_await http::async_write(stream, request, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      out.error = absl::StrCat("send: ", ec.message());
      co_return;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(in.body_limit);
    co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      out.error = absl::StrCat("read: ", ec.message());
      co_return;
    }
    out.status = parser.get().result_int();
    out.keep_alive = parser.get().keep_alive();
    out.body = std::move(parser.get().body());
  }

  net::awaitable<void> Exchange(const HttpRequest& in, HttpAnswer& out) {
    if (connected()) {
      out.connected = true;
    } else {
      co_await Open(out);
      if (!out.error.empty()) co_return;
    }
    if (tls) {
      co_await Talk(*tls, in, out);
    } else {
      co_await Talk(*plain, in, out);
    }
  }

  // Runs the exchange to its end or `timeout`; after the timeout the
  // connection is closed and the aborted operations are run to their end.
  HttpAnswer RunBounded(const HttpRequest& in) {
    HttpAnswer answer;
    bool finished = false;
    bool timed_out = false;
    try {
      net::co_spawn(ioc, Exchange(in, answer),
                    [&finished](std::exception_ptr) { finished = true; });
      ioc.restart();
      ioc.run_for(timeout);
      timed_out = !finished;
      if (timed_out) {
        Close();
        ioc.restart();
        ioc.run();  // the aborted operations end
      }
    } catch (const std::exception& e) {
      Close();
      answer = HttpAnswer();
      answer.finished = true;
      answer.error = e.what();
      return answer;
    }
    if (timed_out) {
      const bool connected = answer.connected;
      answer = HttpAnswer();
      answer.connected = connected;
      answer.error = absl::StrCat("no answer within ", timeout.count(), " ms");
      return answer;
    }
    answer.finished = true;
    return answer;
  }
};

HttpExchange::HttpExchange(HttpTarget target, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->target = std::move(target);
  impl_->timeout = timeout;
}

HttpExchange::~HttpExchange() { impl_->Close(); }

HttpAnswer HttpExchange::Send(const HttpRequest& request) {
  HttpAnswer answer = impl_->RunBounded(request);
  if (!answer.error.empty() || !answer.keep_alive) impl_->Close();
  // The answer is quoted in error messages; a server may quote the key.
  RedactApiKey(&answer.body, impl_->target.api_key);
  RedactApiKey(&answer.error, impl_->target.api_key);
  return answer;
}

bool HttpExchange::connected() const { return impl_->connected(); }
const HttpTarget& HttpExchange::target() const { return impl_->target; }

}  // namespace surge::client
