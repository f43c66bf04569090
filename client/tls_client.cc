#include "client/tls_client.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <string>

#include "absl/strings/str_cat.h"

namespace surge::client {

namespace ssl = boost::asio::ssl;

absl::StatusOr<std::shared_ptr<ssl::context>> MakeClientTlsContext(
    const surge::v1::TargetConfig& target) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                   ec);
  if (ec) return absl::InternalError(absl::StrCat("tls: cannot set options: ", ec.message()));
  if (target.insecure_skip_verify()) {
    ctx->set_verify_mode(ssl::verify_none, ec);
  } else {
    ctx->set_verify_mode(ssl::verify_peer, ec);
    if (!ec) {
      if (!target.ca_cert_path().empty()) {
        ctx->load_verify_file(target.ca_cert_path(), ec);
        if (ec) {
          return absl::InvalidArgumentError(
              absl::StrCat("ca_cert_path: cannot load ", target.ca_cert_path(), ": ", ec.message(),
                           " (expected a PEM file of CA certificates)"));
        }
      } else {
        ctx->set_default_verify_paths(ec);
      }
    }
  }
  if (ec) {
    return absl::InternalError(absl::StrCat("tls: cannot set up verification: ", ec.message()));
  }
  return ctx;
}

absl::Status PrepareTlsClient(SSL* ssl, const std::string& host, bool verify) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  const bool is_ip = !ec;
  if (!is_ip && SSL_set_tlsext_host_name(ssl, host.c_str()) != 1) {
    return absl::InternalError(absl::StrCat("tls: cannot set SNI for ", host));
  }
  if (!verify) return absl::OkStatus();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                       : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  if (ok != 1) return absl::InternalError(absl::StrCat("tls: cannot set the expected name ", host));
  return absl::OkStatus();
}

std::string TlsErrorMessage(const boost::system::error_code& ec, SSL* ssl) {
  std::string message = ec.message();
  if (ssl != nullptr && ec.category() == boost::asio::error::get_ssl_category()) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      absl::StrAppend(&message, ": ", X509_verify_cert_error_string(verify));
    }
  }
  return message;
}

}  // namespace surge::client
