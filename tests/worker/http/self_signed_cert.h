// A self-signed certificate and key made with the OpenSSL C API, for https
// tests on 127.0.0.1 (no `openssl` command needed). Test-only.
#ifndef SURGE_TESTS_WORKER_HTTP_SELF_SIGNED_CERT_H_
#define SURGE_TESTS_WORKER_HTTP_SELF_SIGNED_CERT_H_

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

namespace surge::testing {

struct CertFiles {
  std::string cert_path;  // PEM certificate (also the CA file that trusts it)
  std::string key_path;   // PEM private key
};

// Writes <dir>/<name>-<pid>.crt and <dir>/<name>-<pid>.key (the pid keeps
// test processes that ctest runs in parallel from overwriting each other's
// files): a fresh EC P-256 key and a
// self-signed X.509 v3 certificate (CN=<name>, CA:TRUE, valid from an hour
// ago for a day) whose subjectAltName is `san` (OpenSSL syntax, e.g.
// "IP:127.0.0.1,DNS:localhost"). Returns empty paths when OpenSSL fails.
inline CertFiles MakeSelfSignedCert(const std::string& dir, const std::string& name,
                                    const std::string& san = "IP:127.0.0.1,DNS:localhost") {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  if (key == nullptr || cert == nullptr) return {};
  static long serial = 1;
  X509_set_version(cert.get(), 2);  // v3
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), subject);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  const std::pair<int, std::string> extensions[] = {
      {NID_basic_constraints, "critical,CA:TRUE"},
      {NID_key_usage, "critical,digitalSignature,keyCertSign"},
      {NID_subject_key_identifier, "hash"},
      {NID_subject_alt_name, san},
  };
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) return {};
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return {};

  CertFiles files;
  const std::string stem = name + "-" + std::to_string(getpid());
  files.cert_path = (std::filesystem::path(dir) / (stem + ".crt")).string();
  files.key_path = (std::filesystem::path(dir) / (stem + ".key")).string();
  FILE* cert_file = std::fopen(files.cert_path.c_str(), "w");
  FILE* key_file = std::fopen(files.key_path.c_str(), "w");
  const bool ok =
      cert_file != nullptr && key_file != nullptr && PEM_write_X509(cert_file, cert.get()) == 1 &&
      PEM_write_PrivateKey(key_file, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1;
  if (cert_file != nullptr) std::fclose(cert_file);
  if (key_file != nullptr) std::fclose(key_file);
  return ok ? files : CertFiles{};
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_WORKER_HTTP_SELF_SIGNED_CERT_H_
