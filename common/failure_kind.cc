#include "common/failure_kind.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace surge {

using surge::v1::FailureKind;

std::string FailureKindLabel(FailureKind kind) {
  if (kind == surge::v1::FAILURE_KIND_UNSPECIFIED) return "";
  const std::string& name = surge::v1::FailureKind_Name(kind);
  constexpr std::string_view kPrefix = "FAILURE_KIND_";
  if (name.size() <= kPrefix.size()) return "other";  // a number outside the enum
  return absl::AsciiStrToLower(name.substr(kPrefix.size()));
}

FailureKind FailureKindFromLabel(std::string_view label) {
  if (label.empty()) return surge::v1::FAILURE_KIND_UNSPECIFIED;
  FailureKind kind = surge::v1::FAILURE_KIND_UNSPECIFIED;
  if (!surge::v1::FailureKind_Parse(
          absl::StrCat("FAILURE_KIND_", absl::AsciiStrToUpper(std::string(label))), &kind)) {
    return surge::v1::FAILURE_KIND_UNSPECIFIED;
  }
  return kind;
}

FailureKind HttpFailureKind(uint32_t http_status) {
  if (http_status >= 400 && http_status < 500) return surge::v1::FAILURE_KIND_HTTP_4XX;
  if (http_status >= 500 && http_status < 600) return surge::v1::FAILURE_KIND_HTTP_5XX;
  return surge::v1::FAILURE_KIND_HTTP_OTHER;
}

FailureKind FailureKindFromError(std::string_view error) {
  if (error.empty()) return surge::v1::FAILURE_KIND_UNSPECIFIED;
  const std::string_view prefix = error.substr(0, error.find(':'));
  uint32_t code = 0;
  if (prefix.size() > 5 && prefix.substr(0, 5) == "http_" &&
      absl::SimpleAtoi(std::string(prefix.substr(5)), &code)) {
    return HttpFailureKind(code);
  }
  if (prefix == "sender_shut_down") return surge::v1::FAILURE_KIND_NOT_SENT;
  // Every other kind's label is the prefix its error text starts with.
  const FailureKind kind = FailureKindFromLabel(prefix);
  if (kind == surge::v1::FAILURE_KIND_UNSPECIFIED || kind == surge::v1::FAILURE_KIND_OTHER ||
      kind == surge::v1::FAILURE_KIND_HTTP_4XX || kind == surge::v1::FAILURE_KIND_HTTP_5XX ||
      kind == surge::v1::FAILURE_KIND_HTTP_OTHER) {
    return surge::v1::FAILURE_KIND_OTHER;
  }
  return kind;
}

FailureKind FailureKindOf(const surge::v1::RequestRecord& record) {
  if (record.status() == surge::v1::OK) return surge::v1::FAILURE_KIND_UNSPECIFIED;
  if (record.failure_kind() != surge::v1::FAILURE_KIND_UNSPECIFIED) return record.failure_kind();
  if (record.error().empty()) return surge::v1::FAILURE_KIND_OTHER;
  return FailureKindFromError(record.error());
}

namespace {
constexpr std::string_view kRedirectTo = ": redirect to ";
constexpr std::string_view kNotFollowed = " (not followed)";

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}
}  // namespace

std::string RedirectError(uint32_t http_status, std::string_view location) {
  return absl::StrCat("http_", http_status, std::string(kRedirectTo), std::string(location),
                      std::string(kNotFollowed));
}

std::string RedirectLocation(std::string_view error) {
  if (error.substr(0, 5) != "http_" || !EndsWith(error, kNotFollowed)) return "";
  const size_t at = error.find(kRedirectTo);
  if (at == std::string_view::npos) return "";
  const size_t begin = at + kRedirectTo.size();
  if (begin + kNotFollowed.size() > error.size()) return "";
  return std::string(error.substr(begin, error.size() - kNotFollowed.size() - begin));
}

void SetFailure(surge::v1::RequestRecord& record, surge::v1::RequestStatus status, FailureKind kind,
                std::string error) {
  record.set_status(status);
  record.set_failure_kind(kind);
  record.set_error(std::move(error));
}

}  // namespace surge
