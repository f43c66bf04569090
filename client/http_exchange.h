// One HTTP/1.1 connection of the small clients (the model lister, the
// tokenize client, the target check) to the target: opened at the first
// request (resolve, connect, TLS handshake for https), kept for the next
// ones while the server keeps it alive. Beast stays in the .cc file.
#ifndef SURGE_CLIENT_HTTP_EXCHANGE_H_
#define SURGE_CLIENT_HTTP_EXCHANGE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/target_checks.h"
#include "client/url.h"
#include "surge/v1/config.pb.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace surge::client {

// What every request to a target carries, read from its TargetConfig.
struct HttpTarget {
  ParsedUrl url;
  std::string api_key;                             // "" = none
  std::vector<HeaderLine> headers;                 // target.headers
  bool verify = true;                              // TLS: check the certificate's name
  std::shared_ptr<boost::asio::ssl::context> tls;  // null for http
};

// Reads `target`: base_url, the TLS settings for https, the extra headers
// and the API key (LoadApiKey). Errors: INVALID_ARGUMENT "base_url: ...",
// "ca_cert_path: ...", "headers[i]: ...", "api_key_file: ..."; INTERNAL when
// OpenSSL fails.
absl::StatusOr<HttpTarget> ReadHttpTarget(const surge::v1::TargetConfig& target);

struct HttpRequest {
  enum class Method { kGet, kPost };
  Method method = Method::kGet;
  std::string target;                      // request target, e.g. "/v1/models"
  std::string body;                        // a JSON body (POST)
  uint64_t body_limit = 16 * 1024 * 1024;  // bytes of answer body read at most
};

struct HttpAnswer {
  bool finished = false;   // false: `timeout` ran out first
  bool connected = false;  // TCP connected and, for https, handshake done
  // "" on success; "resolve: <why>", "connect: <why>", the TLS set-up's
  // error, "tls: <why>", "send: <why>", "read: <why>", or, when not
  // finished, "no answer within <timeout> ms".
  std::string error;
  unsigned status = 0;
  std::string body;
  bool keep_alive = false;
};

class HttpExchange {
 public:
  // `timeout` bounds each step of a request and each Send as a whole, in
  // real time.
  HttpExchange(HttpTarget target, std::chrono::milliseconds timeout);
  ~HttpExchange();
  HttpExchange(const HttpExchange&) = delete;
  HttpExchange& operator=(const HttpExchange&) = delete;

  // Sends `request` (Host, User-Agent surge, Accept and, for POST,
  // Content-Type application/json, Authorization: Bearer with the API key,
  // the extra headers) on the kept connection, opening one first when there
  // is none, and reads the answer. The connection is closed after an error,
  // a timeout or an answer that does not keep it alive. The API key is
  // redacted from the answer's body and error. Not thread-safe.
  HttpAnswer Send(const HttpRequest& request);
  // True while a connection is kept.
  bool connected() const;
  const HttpTarget& target() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace surge::client

#endif  // SURGE_CLIENT_HTTP_EXCHANGE_H_
