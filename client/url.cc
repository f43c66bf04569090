#include "client/url.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace surge::client {
namespace {

absl::Status Invalid(const std::string& url, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("base_url: \"", url, "\" ", why,
                   " (expected http[s]://host[:port][/path], e.g. http://127.0.0.1:8000)"));
}

}  // namespace

std::string ParsedUrl::HostHeader() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string h = v6 ? absl::StrCat("[", host, "]") : host;
  if (!default_port()) absl::StrAppend(&h, ":", port);
  return h;
}

std::string ParsedUrl::Origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return absl::StrCat(scheme, "://", v6 ? absl::StrCat("[", host, "]") : host, ":", port);
}

absl::StatusOr<ParsedUrl> ParseBaseUrl(const std::string& base_url) {
  if (base_url.empty()) return Invalid(base_url, "is empty");
  for (char c : base_url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Invalid(base_url, "contains whitespace or control characters");
    }
  }
  ParsedUrl url;
  const size_t sep = base_url.find("://");
  if (sep == std::string::npos) return Invalid(base_url, "has no scheme; use http:// or https://");
  url.scheme = absl::AsciiStrToLower(base_url.substr(0, sep));
  if (url.scheme != "http" && url.scheme != "https") {
    return Invalid(
        base_url, absl::StrCat("has scheme \"", url.scheme, "\"; only http and https are allowed"));
  }
  std::string rest = base_url.substr(sep + 3);
  if (rest.find_first_of("?#") != std::string::npos) {
    return Invalid(base_url, "has a query or fragment; only a path prefix is allowed");
  }
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) {
    return Invalid(base_url, "has user info; pass the API key through OPENAI_API_KEY instead");
  }
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return Invalid(base_url, "has an unterminated IPv6 address");
    url.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return Invalid(base_url, "has junk after the IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) return Invalid(base_url, "has an empty port");
    }
  } else {
    const size_t colon = authority.find(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return Invalid(base_url, "has an empty port");
    }
  }
  if (url.host.empty()) return Invalid(base_url, "has no host");
  if (port_text.empty()) {
    url.port = url.scheme == "https" ? 443 : 80;
  } else {
    uint32_t port = 0;
    const bool digits = port_text.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || port_text.size() > 5 || !absl::SimpleAtoi(port_text, &port) || port == 0 ||
        port > 65535) {
      return Invalid(base_url, absl::StrCat("has port \"", port_text,
                                            "\"; the port must be a number in 1..65535"));
    }
    url.port = static_cast<uint16_t>(port);
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  url.path_prefix = path;
  return url;
}

}  // namespace surge::client
