#include "client/model_lister.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/api_key.h"
#include "client/target_checks.h"
#include "client/tls_client.h"
#include "client/url.h"
#include "nlohmann/json.hpp"

namespace surge::client {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

struct Exchange {
  bool connected = false;  // TCP connected and, for https, handshake done
  std::string error;       // empty on success
  unsigned status = 0;
  std::string body;
};

// What the GET needs besides the stream.
struct GetSpec {
  ParsedUrl url;
  std::string target;               // request target, e.g. "/v1/models"
  std::string api_key;              // "" = none
  std::vector<HeaderLine> headers;  // target.headers
  bool verify = true;               // TLS: check the certificate's name
  std::chrono::milliseconds timeout{0};
};

// Connects `stream` (a beast::tcp_stream or a TLS stream over one), runs the
// TLS handshake for https, and does the GET.
template <class Stream>
net::awaitable<void> Talk(Stream& stream, const GetSpec& spec, Exchange& out) {
  auto executor = co_await net::this_coro::executor;
  tcp::resolver resolver(executor);
  error_code ec;
  auto endpoints = co_await resolver.async_resolve(spec.url.host, std::to_string(spec.url.port),
                                                   net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    out.error = absl::StrCat("resolve: ", ec.message());
    co_return;
  }
  // tcp_stream's timeout covers each of the following operations; the
  // caller's run_for() bounds the total.
  beast::tcp_stream& tcp_layer = beast::get_lowest_layer(stream);
  tcp_layer.expires_after(spec.timeout);
  co_await tcp_layer.async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    out.error = absl::StrCat("connect: ", ec.message());
    co_return;
  }
  if constexpr (std::is_same_v<Stream, TlsStream>) {
    if (absl::Status s = PrepareTlsClient(stream.native_handle(), spec.url.host, spec.verify);
        !s.ok()) {
      out.error = std::string(s.message());
      co_return;
    }
    tcp_layer.expires_after(spec.timeout);
    co_await stream.async_handshake(net::ssl::stream_base::client,
                                    net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      out.error = absl::StrCat("tls: ", TlsErrorMessage(ec, stream.native_handle()));
      co_return;
    }
  }
  out.connected = true;
  http::request<http::empty_body> request(http::verb::get, spec.target, 11);
  request.set(http::field::host, spec.url.HostHeader());
  request.set(http::field::user_agent, "surge");
  request.set(http::field::accept, "application/json");
  if (!spec.api_key.empty()) {
    request.set(http::field::authorization, absl::StrCat("Bearer ", spec.api_key));
  }
  for (const HeaderLine& h : spec.headers) request.set(h.name, h.value);
  tcp_layer.expires_after(spec.timeout);
  co_await http::async_write(stream, request, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    out.error = absl::StrCat("send: ", ec.message());
    co_return;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(16 * 1024 * 1024);
  co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    out.error = absl::StrCat("read: ", ec.message());
    co_return;
  }
  out.status = parser.get().result_int();
  out.body = std::move(parser.get().body());
  error_code ignored;
  tcp_layer.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

net::awaitable<void> Get(const GetSpec& spec, net::ssl::context* tls_context, Exchange& out) {
  auto executor = co_await net::this_coro::executor;
  if (tls_context != nullptr) {
    TlsStream stream(executor, *tls_context);
    co_await Talk(stream, spec, out);
  } else {
    beast::tcp_stream stream(executor);
    co_await Talk(stream, spec, out);
  }
}

// GET {base_url}/v1/models: the exchange as far as it went, and the URL as
// the user wrote it (for messages). Errors: INVALID_ARGUMENT for a bad
// target; UNAVAILABLE when the I/O itself threw.
struct ModelsGet {
  Exchange exchange;
  bool finished = false;  // false: `timeout` ran out
  std::string models_url;
};

absl::StatusOr<ModelsGet> GetModels(const surge::v1::TargetConfig& target,
                                    std::chrono::milliseconds timeout) {
  const std::string& base_url = target.base_url();
  absl::StatusOr<ParsedUrl> url = ParseBaseUrl(base_url);
  if (!url.ok()) return url.status();
  GetSpec spec;
  spec.target = url->path_prefix + "/v1/models";
  spec.verify = !target.insecure_skip_verify();
  spec.timeout = timeout;
  std::shared_ptr<net::ssl::context> tls_context;
  if (url->scheme == "https") {
    absl::StatusOr<std::shared_ptr<net::ssl::context>> context = MakeClientTlsContext(target);
    if (!context.ok()) return context.status();
    tls_context = *std::move(context);
  }
  spec.url = *std::move(url);
  for (int i = 0; i < target.headers_size(); ++i) {
    absl::StatusOr<HeaderLine> header = ParseHeaderLine(target.headers(i));
    if (!header.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("headers[", i, "]: ", std::string(header.status().message())));
    }
    spec.headers.push_back(*std::move(header));
  }
  absl::StatusOr<std::string> api_key = LoadApiKey(target);
  if (!api_key.ok()) return api_key.status();
  spec.api_key = *std::move(api_key);

  // Quote the URL the user gave (without a trailing slash), not our parse.
  std::string shown = base_url;
  while (!shown.empty() && shown.back() == '/') shown.pop_back();
  ModelsGet get;
  get.models_url = absl::StrCat(shown, "/v1/models");
  try {
    net::io_context ioc;
    net::co_spawn(ioc, Get(spec, tls_context.get(), get.exchange),
                  [&get](std::exception_ptr) { get.finished = true; });
    ioc.run_for(timeout);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot reach ", get.models_url, ": ", e.what()));
  }
  // The answer is quoted in error messages; a server may quote the key.
  RedactApiKey(&get.exchange.body, spec.api_key);
  RedactApiKey(&get.exchange.error, spec.api_key);
  return get;
}

}  // namespace

absl::StatusOr<std::string> FetchFirstModel(const surge::v1::TargetConfig& target,
                                            std::chrono::milliseconds timeout) {
  absl::StatusOr<ModelsGet> get = GetModels(target, timeout);
  if (!get.ok()) return get.status();
  const std::string& models_url = get->models_url;
  const Exchange& exchange = get->exchange;
  if (!get->finished) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach ", models_url, ": timed out after ", timeout.count(), " ms"));
  }
  if (!exchange.error.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot reach ", models_url, ": ", exchange.error));
  }
  if (exchange.status != 200) {
    return absl::UnavailableError(absl::StrCat("cannot reach ", models_url, ": HTTP ",
                                               exchange.status, ": ",
                                               exchange.body.substr(0, 200)));
  }
  nlohmann::json json = nlohmann::json::parse(exchange.body, nullptr, false);
  if (!json.is_discarded() && json.is_object()) {
    auto data = json.find("data");
    if (data != json.end() && data->is_array() && !data->empty() && (*data)[0].is_object()) {
      auto id = (*data)[0].find("id");
      if (id != (*data)[0].end() && id->is_string() && !id->get<std::string>().empty()) {
        return id->get<std::string>();
      }
    }
  }
  return absl::FailedPreconditionError(absl::StrCat("no model listed at ", models_url));
}

absl::Status CheckTargetConnects(const surge::v1::TargetConfig& target,
                                 std::chrono::milliseconds timeout) {
  absl::StatusOr<ModelsGet> get = GetModels(target, timeout);
  if (!get.ok()) return get.status();
  // Connected (and TLS done): the target is there. What it answers to
  // /v1/models (404, an error, nothing) does not matter here.
  if (get->exchange.connected) return absl::OkStatus();
  if (!get->finished) {
    return absl::UnavailableError(absl::StrCat("cannot reach ", get->models_url,
                                               ": no connection within ", timeout.count(), " ms"));
  }
  return absl::UnavailableError(
      absl::StrCat("cannot reach ", get->models_url, ": ", get->exchange.error));
}

absl::StatusOr<std::string> FetchFirstModel(const std::string& base_url,
                                            std::chrono::milliseconds timeout) {
  surge::v1::TargetConfig target;
  target.set_base_url(base_url);
  return FetchFirstModel(target, timeout);
}

}  // namespace surge::client
