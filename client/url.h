// Parsing of the target's base URL (TargetConfig.base_url, R-REQ-1,
// R-UI-2 `--base-url`). Pure: no I/O, no name resolution.
#ifndef SURGE_CLIENT_URL_H_
#define SURGE_CLIENT_URL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace surge::client {

// The parts of a base URL such as "http://h:8000/prefix".
struct ParsedUrl {
  // "http" or "https" (lower case).
  std::string scheme;
  // Host name or IP address; IPv6 addresses without the brackets ("::1").
  std::string host;
  // TCP port; 80 for http and 443 for https when the URL names none.
  uint16_t port = 0;
  // Path prefix put before every endpoint: "" or "/a/b" (leading slash, no
  // trailing slash), so that prefix + "/v1/models" is the request target.
  std::string path_prefix;

  // True when the URL used the scheme's default port.
  bool default_port() const { return port == (scheme == "https" ? 443 : 80); }
  // Value of the HTTP Host header: host, or host:port for a non-default port
  // (IPv6 hosts in brackets).
  std::string HostHeader() const;
  // Scheme, host and port without the path, e.g. "http://h:8000": for messages.
  std::string Origin() const;
};

// Parses `base_url` = scheme "://" host [":" port] [path]. Accepted: schemes
// http and https (case-insensitive), IPv6 literals in brackets, decimal ports
// 1..65535, a path without "?" or "#". Trailing slashes of the path are
// dropped. Errors: INVALID_ARGUMENT with a message that starts with
// "base_url:" and names what is allowed.
absl::StatusOr<ParsedUrl> ParseBaseUrl(const std::string& base_url);

}  // namespace surge::client

#endif  // SURGE_CLIENT_URL_H_
