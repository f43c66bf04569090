#include "client/tokenize_client.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/http_exchange.h"
#include "client/url.h"

namespace surge::client {

struct TokenizeClient::Impl {
  std::string target;  // request target: root + "/tokenize"
  std::string shown_url;
  std::string model;
  bool chat = false;
  TokenizeShape shape = TokenizeShape::kVllm;
  uint64_t calls = 0;
  std::optional<HttpExchange> http;

  // One POST, run to its end or the timeout (the connection is then closed).
  HttpAnswer RunOnce(const std::string& body) {
    ++calls;
    return http->Send(HttpRequest{.method = HttpRequest::Method::kPost,
                                  .target = target,
                                  .body = body,
                                  .body_limit = 256 * 1024 * 1024});
  }

  // RunOnce, again on a new connection when a kept-alive one failed.
  HttpAnswer Request(const std::string& body) {
    const bool reused = http->connected();
    HttpAnswer answer = RunOnce(body);
    if (reused && !answer.error.empty()) answer = RunOnce(body);
    return answer;
  }
};

namespace {

// What one probe got, for the error message.
std::string ProbeText(const HttpAnswer& answer) {
  if (!answer.error.empty()) return answer.error;
  return absl::StrCat("HTTP ", answer.status,
                      answer.body.empty() ? "" : absl::StrCat(": ", answer.body.substr(0, 80)));
}

absl::StatusOr<std::unique_ptr<TokenizeClient::Impl>> MakeImpl(
    const surge::v1::TargetConfig& target, bool chat, std::chrono::milliseconds timeout) {
  absl::StatusOr<HttpTarget> http_target = ReadHttpTarget(target);
  if (!http_target.ok()) return http_target.status();
  auto impl = std::make_unique<TokenizeClient::Impl>();
  impl->target = TokenizeRoot(http_target->url.path_prefix) + "/tokenize";
  impl->shown_url = absl::StrCat(http_target->url.Origin(), impl->target);
  impl->model = target.model();
  impl->chat = chat;
  impl->http.emplace(*std::move(http_target), timeout);
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
  for (TokenizeShape shape :
       {TokenizeShape::kVllm, TokenizeShape::kTgi, TokenizeShape::kLlamaCpp}) {
    const bool with_template = chat && shape == TokenizeShape::kVllm;
    const HttpAnswer answer =
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
  const HttpAnswer answer =
      impl_->Request(TokenizeRequestBody(impl_->shape, impl_->model, counts_template(), text));
  if (!answer.error.empty()) {
    return absl::UnavailableError(
        absl::StrCat("tokenize at ", impl_->shown_url, ": ", answer.error));
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
