#include "client/model_lister.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/http_exchange.h"
#include "nlohmann/json.hpp"

namespace surge::client {
namespace {

// GET {base_url}/v1/models: the exchange as far as it went, and the URL as
// the user wrote it (for messages). Errors: INVALID_ARGUMENT for a bad
// target.
struct ModelsGet {
  HttpAnswer exchange;
  std::string models_url;
};

absl::StatusOr<ModelsGet> GetModels(const surge::v1::TargetConfig& target,
                                    std::chrono::milliseconds timeout) {
  absl::StatusOr<HttpTarget> http_target = ReadHttpTarget(target);
  if (!http_target.ok()) return http_target.status();
  const std::string models_target = http_target->url.path_prefix + "/v1/models";
  // Quote the URL the user gave (without a trailing slash), not our parse.
  std::string shown = target.base_url();
  while (!shown.empty() && shown.back() == '/') shown.pop_back();
  ModelsGet get;
  get.models_url = absl::StrCat(shown, "/v1/models");
  HttpExchange http(*std::move(http_target), timeout);
  HttpRequest request;
  request.target = models_target;  // a GET
  request.body_limit = 16 * 1024 * 1024;
  get.exchange = http.Send(request);
  return get;
}

}  // namespace

absl::StatusOr<std::string> FetchFirstModel(const surge::v1::TargetConfig& target,
                                            std::chrono::milliseconds timeout) {
  absl::StatusOr<ModelsGet> get = GetModels(target, timeout);
  if (!get.ok()) return get.status();
  const std::string& models_url = get->models_url;
  const HttpAnswer& exchange = get->exchange;
  if (!exchange.finished) {
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
  if (!get->exchange.finished) {
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
