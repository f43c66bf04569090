#include "client/tokenize_client.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/api_key.h"
#include "client/target_checks.h"
#include "client/tls_client.h"
#include "client/url.h"

namespace surge::client {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One exchange's result.
struct Answer {
  std::string error;  // empty on success
  unsigned status = 0;
  std::string body;
  bool keep_alive = false;
};

struct TokenizeClient::Impl {
  ParsedUrl url;
  std::string target;  // request target: root + "/tokenize"
  std::string shown_url;
  std::string model;
  std::string api_key;
  std::vector<HeaderLine> headers;
  bool verify = true;
  bool chat = false;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<net::ssl::context> tls_context;
  TokenizeShape shape = TokenizeShape::kVllm;
  uint64_t calls = 0;

  net::io_context ioc;
  std::optional<beast::tcp_stream> plain;
  std::optional<TlsStream> tls;
  beast::flat_buffer buffer;

  bool connected() const { return plain.has_value() || tls.has_value(); }
  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  void Disconnect() {
    error_code ignored;
    if (connected()) lowest().socket().close(ignored);
    tls.reset();
    plain.reset();
    buffer.clear();
  }

  net::awaitable<void> Open(std::string& error) {
    tcp::resolver resolver(ioc);
    error_code ec;
    auto endpoints = co_await resolver.async_resolve(url.host, std::to_string(url.port),
                                                     net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      error = absl::StrCat("resolve: ", ec.message());
      co_return;
    }
    if (tls_context) {
      tls.emplace(ioc, *tls_context);
    } else {
      plain.emplace(ioc);
    }
    beast::tcp_stream& layer = lowest();
    layer.expires_after(timeout);
    co_await layer.async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      error = absl::StrCat("connect: ", ec.message());
      co_return;
    }
    if (tls) {
      if (absl::Status s = PrepareTlsClient(tls->native_handle(), url.host, verify); !s.ok()) {
        error = std::string(s.message());
        co_return;
      }
      layer.expires_after(timeout);
      co_await tls->async_handshake(net::ssl::stream_base::client,
                                    net::redirect_error(net::use_awaitable, ec));
      if (ec) error = absl::StrCat("tls: ", TlsErrorMessage(ec, tls->native_handle()));
    }
  }

  template <class Stream>
  net::awaitable<void> Post(Stream& stream, const std::string& body, Answer& out) {
    http::request<http::string_body> request(http::verb::post, target, 11);
    request.set(http::field::host, url.HostHeader());
    request.set(http::field::user_agent, "surge");
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json");
    if (!api_key.empty()) request.set(http::field::authorization, absl::StrCat("Bearer ", api_key));
    for (const HeaderLine& h : headers) request.set(h.name, h.value);
    request.keep_alive(true);
    request.body() = body;
    request.prepare_payload();
    error_code ec;
    lowest().expires_after(timeout);
    co_await http::async_write(stream, request, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      out.error = absl::StrCat("send: ", ec.message());
      co_return;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024);
    co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      out.error = absl::StrCat("read: ", ec.message());
      co_return;
    }
    out.status = parser.get().result_int();
    out.keep_alive = parser.get().keep_alive();
    out.body = std::move(parser.get().body());
  }

  net::awaitable<void> Exchange(const std::string& body, Answer& out) {
    if (!connected()) {
      co_await Open(out.error);
      if (!out.error.empty()) co_return;
    }
    if (tls) {
      co_await Post(*tls, body, out);
    } else {
      co_await Post(*plain, body, out);
    }
  }

  // One POST, run to its end or `timeout` (the connection is then closed).
  Answer RunOnce(const std::string& body) {
    Answer answer;
    bool finished = false;
    ++calls;
    net::co_spawn(ioc, Exchange(body, answer), [&finished](std::exception_ptr) { finished = true; });
    ioc.restart();
    ioc.run_for(timeout);
    if (!finished) {
      Disconnect();
      ioc.restart();
      ioc.run();  // the aborted operations end
      answer = Answer();
      answer.error = absl::StrCat("no answer within ", timeout.count(), " ms");
    }
    if (!answer.error.empty() || !answer.keep_alive) Disconnect();
    RedactApiKey(&answer.body, api_key);
    RedactApiKey(&answer.error, api_key);
    return answer;
  }

  // RunOnce, again on a new connection when a kept-alive one failed.
  Answer Request(const std::string& body) {
    const bool reused = connected();
    Answer answer = RunOnce(body);
    if (reused && !answer.error.empty()) answer = RunOnce(body);
    return answer;
  }
};

namespace {

// What one probe got, for the error message.
std::string ProbeText(const Answer& answer) {
  if (!answer.error.empty()) return answer.error;
  return absl::StrCat("HTTP ", answer.status,
                      answer.body.empty() ? "" : absl::StrCat(": ", answer.body.substr(0, 80)));
}

absl::StatusOr<std::unique_ptr<TokenizeClient::Impl>> MakeImpl(
    const surge::v1::TargetConfig& target, bool chat, std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<TokenizeClient::Impl>();
  absl::StatusOr<ParsedUrl> url = ParseBaseUrl(target.base_url());
  if (!url.ok()) return url.status();
  impl->target = TokenizeRoot(url->path_prefix) + "/tokenize";
  impl->shown_url = absl::StrCat(url->Origin(), impl->target);
  if (url->scheme == "https") {
    auto context = MakeClientTlsContext(target);
    if (!context.ok()) return context.status();
    impl->tls_context = *std::move(context);
  }
  impl->url = *std::move(url);
  for (int i = 0; i < target.headers_size(); ++i) {
    absl::StatusOr<HeaderLine> header = ParseHeaderLine(target.headers(i));
    if (!header.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("headers[", i, "]: ", std::string(header.status().message())));
    }
    impl->headers.push_back(*std::move(header));
  }
  absl::StatusOr<std::string> api_key = LoadApiKey(target);
  if (!api_key.ok()) return api_key.status();
  impl->api_key = *std::move(api_key);
  impl->model = target.model();
  impl->verify = !target.insecure_skip_verify();
  impl->chat = chat;
  impl->timeout = timeout;
  return impl;
}

}  // namespace

TokenizeClient::TokenizeClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TokenizeClient::~TokenizeClient() = default;

absl::StatusOr<std::unique_ptr<TokenizeClient>> TokenizeClient::Connect(
    const surge::v1::TargetConfig& target, bool chat, std::chrono::milliseconds timeout) {
  absl::StatusOr<std::unique_ptr<Impl>> impl = MakeImpl(target, chat, timeout);
  if (!impl.ok()) return impl.status();
  Impl& in = **impl;
  std::vector<std::string> tried;
  for (TokenizeShape shape : {TokenizeShape::kVllm, TokenizeShape::kTgi, TokenizeShape::kLlamaCpp}) {
    const bool with_template = chat && shape == TokenizeShape::kVllm;
    const Answer answer =
        in.Request(TokenizeRequestBody(shape, in.model, with_template, "Hello, world."));
    if (answer.error.rfind("connect: ", 0) == 0 || answer.error.rfind("resolve: ", 0) == 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot reach ", in.shown_url, ": ", answer.error));
    }
    if (answer.error.empty() && answer.status == 200 &&
        ParseTokenizeCount(shape, answer.body).ok()) {
      in.shape = shape;
      return std::unique_ptr<TokenizeClient>(new TokenizeClient(*std::move(impl)));
    }
    tried.push_back(absl::StrCat("POST ", in.target, " in the ", TokenizeShapeName(shape),
                                 " shape (", ProbeText(answer), ")"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "tokenizer: --tokenizer server: the target has no tokenize endpoint surge knows at ",
      in.shown_url, ": tried ", absl::StrJoin(tried, "; "),
      ". Nothing was sent. Use --tokenizer estimate (the default) or a SentencePiece "
      "FILE.model of the served model"));
}

absl::StatusOr<uint32_t> TokenizeClient::Count(std::string_view text) {
  const Answer answer =
      impl_->Request(TokenizeRequestBody(impl_->shape, impl_->model, counts_template(), text));
  if (!answer.error.empty()) {
    return absl::UnavailableError(absl::StrCat("tokenize at ", impl_->shown_url, ": ", answer.error));
  }
  if (answer.status != 200) {
    return absl::UnavailableError(
        absl::StrCat("tokenize at ", impl_->shown_url, ": ", ProbeText(answer)));
  }
  return ParseTokenizeCount(impl_->shape, answer.body);
}

TokenizeShape TokenizeClient::shape() const { return impl_->shape; }
bool TokenizeClient::counts_template() const {
  return impl_->chat && impl_->shape == TokenizeShape::kVllm;
}
const std::string& TokenizeClient::url() const { return impl_->shown_url; }
uint64_t TokenizeClient::calls() const { return impl_->calls; }

}  // namespace surge::client
