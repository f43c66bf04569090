#include "client/metrics_getter.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/http_exchange.h"

namespace surge::client {

absl::StatusOr<std::unique_ptr<MetricsGetter>> MetricsGetter::Create(
    const std::string& url, const surge::v1::TargetConfig& tls, std::chrono::milliseconds timeout) {
  surge::v1::TargetConfig target;
  target.set_base_url(url);
  target.set_ca_cert_path(tls.ca_cert_path());
  target.set_insecure_skip_verify(tls.insecure_skip_verify());
  absl::StatusOr<HttpTarget> http_target = ReadHttpTarget(target);
  if (!http_target.ok()) return http_target.status();
  http_target->api_key.clear();  // a metrics endpoint gets no key
  std::string request_target =
      http_target->url.path_prefix.empty() ? std::string("/") : http_target->url.path_prefix;
  auto http = std::make_unique<HttpExchange>(*std::move(http_target), timeout);
  return std::unique_ptr<MetricsGetter>(
      new MetricsGetter(std::move(http), std::move(request_target), timeout));
}

MetricsGetter::MetricsGetter(std::unique_ptr<HttpExchange> http, std::string target,
                             std::chrono::milliseconds timeout)
    : http_(std::move(http)), target_(std::move(target)), timeout_(timeout) {}

MetricsGetter::~MetricsGetter() = default;

absl::StatusOr<std::string> MetricsGetter::Get() {
  HttpRequest request;
  request.target = target_;  // a GET
  request.body_limit = 8 * 1024 * 1024;
  HttpAnswer answer = http_->Send(request);
  if (!answer.finished) {
    return absl::UnavailableError(absl::StrCat("did not answer within ", timeout_.count(), " ms"));
  }
  if (!answer.error.empty()) {
    return absl::UnavailableError(absl::StrCat("failed (", answer.error, ")"));
  }
  if (answer.status != 200) return absl::UnavailableError(absl::StrCat("answered ", answer.status));
  return std::move(answer.body);
}

}  // namespace surge::client
