#include "coordinator/results/redirect_notice.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/failure_kind.h"
#include "common/log.h"

namespace surge::coordinator {
namespace {

bool IsRedirect(const surge::v1::RequestRecord& record) {
  return record.status() == surge::v1::FAILED && record.http_status() >= 300 &&
         record.http_status() < 400;
}

// What to change for a redirect to `location` ("" when the server named
// none).
std::string Advice(const std::string& location) {
  const std::string kGeneric =
      "point --base-url and --endpoint (keys base_url, endpoint) at the URL the server "
      "redirects to";
  if (location.empty()) return kGeneric;
  if (location[0] == '/') {
    return absl::StrCat("set --endpoint ", location,
                        " (keep --base-url; if it has a path, that path comes first)");
  }
  const size_t scheme = location.find("://");
  if (scheme == std::string::npos) return kGeneric;
  const size_t path = location.find('/', scheme + 3);
  if (path == std::string::npos) return absl::StrCat("set --base-url ", location);
  return absl::StrCat("set --base-url ", location.substr(0, path), " and --endpoint ",
                      location.substr(path));
}

}  // namespace

std::optional<std::string> RedirectWarning(const surge::v1::RequestRecord& record) {
  if (!IsRedirect(record)) return std::nullopt;
  return absl::StrCat("request ", record.index(), " was redirected (", record.error(),
                      "): surge does not follow redirects, so every request to this URL fails; ",
                      Advice(RedirectLocation(record.error())),
                      " (said once per run; the summary counts them under http_",
                      record.http_status(), ")");
}

RedirectNotice::RedirectNotice(Warn warn) : warn_(std::move(warn)) {
  if (!warn_) warn_ = [](const std::string& m) { LogWarning(m); };
}

void RedirectNotice::Add(const surge::v1::RequestRecord& record) {
  if (!IsRedirect(record)) return;
  if (++redirected_ > 1) return;
  if (std::optional<std::string> warning = RedirectWarning(record); warning.has_value()) {
    warn_(*warning);
  }
}

}  // namespace surge::coordinator
