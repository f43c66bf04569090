// TLS client settings of a target (R-REQ-1 https), shared by the
// worker's request sender (worker/http) and the model lister. For client/
// and worker/http only: it includes Asio's SSL headers.
#ifndef SURGE_CLIENT_TLS_CLIENT_H_
#define SURGE_CLIENT_TLS_CLIENT_H_

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::client {

// A client context for `target`: TLS 1.2 or newer; the peer's certificate
// verified against target.ca_cert_path when set, else the system store; no
// verification at all when target.insecure_skip_verify. Thread-safe to share
// between connections once built. Errors: INVALID_ARGUMENT
// "ca_cert_path: cannot load <path>: <why>", INTERNAL when OpenSSL fails.
absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeClientTlsContext(
    const surge::v1::TargetConfig& target);

// Prepares one connection's `ssl` before its handshake: SNI with `host`
// (unless it is an IP address, RFC 6066), and, when `verify`, the name or IP
// address the certificate must carry. Errors: INTERNAL when OpenSSL fails.
absl::Status PrepareTlsClient(SSL* ssl, const std::string& host, bool verify);

// The text after "tls: " for a failed handshake: the error, plus OpenSSL's
// reason when the certificate was rejected (e.g. "certificate verify failed:
// self-signed certificate").
std::string TlsErrorMessage(const boost::system::error_code& ec, SSL* ssl);

}  // namespace surge::client

#endif  // SURGE_CLIENT_TLS_CLIENT_H_
