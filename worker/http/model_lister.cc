#include "worker/http/model_lister.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "worker/http/url.h"

namespace surge::worker {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

struct Exchange {
  std::string error;  // empty on success
  unsigned status = 0;
  std::string body;
};

net::awaitable<void> Get(const ParsedUrl& url, std::string target, std::string auth,
                         std::chrono::milliseconds timeout, Exchange& out) {
  auto executor = co_await net::this_coro::executor;
  tcp::resolver resolver(executor);
  beast::tcp_stream stream(executor);
  error_code ec;
  auto endpoints = co_await resolver.async_resolve(url.host, std::to_string(url.port),
                                                   net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    out.error = absl::StrCat("resolve: ", ec.message());
    co_return;
  }
  // tcp_stream's timeout covers each of the following operations; the
  // caller's run_for() bounds the total.
  stream.expires_after(timeout);
  co_await stream.async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    out.error = absl::StrCat("connect: ", ec.message());
    co_return;
  }
  http::request<http::empty_body> request(http::verb::get, target, 11);
  request.set(http::field::host, url.HostHeader());
  request.set(http::field::user_agent, "surge");
  request.set(http::field::accept, "application/json");
  if (!auth.empty()) request.set(http::field::authorization, auth);
  stream.expires_after(timeout);
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
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace

absl::StatusOr<std::string> FetchFirstModel(const std::string& base_url,
                                            std::chrono::milliseconds timeout) {
  absl::StatusOr<ParsedUrl> url = ParseBaseUrl(base_url);
  if (!url.ok()) return url.status();
  if (url->scheme == "https") {
    return absl::InvalidArgumentError("base_url: https is not supported yet");
  }
  std::string auth;
  if (const char* key = std::getenv("OPENAI_API_KEY"); key != nullptr) {
    std::string trimmed(absl::StripAsciiWhitespace(key));
    bool clean = true;
    for (char c : trimmed) clean = clean && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
    if (!trimmed.empty() && clean) auth = absl::StrCat("Bearer ", trimmed);
  }
  // Quote the URL the user gave (without a trailing slash), not our parse.
  std::string shown = base_url;
  while (!shown.empty() && shown.back() == '/') shown.pop_back();
  const std::string models_url = absl::StrCat(shown, "/v1/models");

  Exchange exchange;
  bool finished = false;
  try {
    net::io_context ioc;
    net::co_spawn(ioc, Get(*url, url->path_prefix + "/v1/models", auth, timeout, exchange),
                  [&finished](std::exception_ptr) { finished = true; });
    ioc.run_for(timeout);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot reach ", models_url, ": ", e.what()));
  }
  if (!finished) {
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

}  // namespace surge::worker
