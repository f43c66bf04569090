// Finds the model to benchmark when none is configured: the first model the
// server lists at /v1/models (R-UI-2 `--model` default).
#ifndef SURGE_CLIENT_MODEL_LISTER_H_
#define SURGE_CLIENT_MODEL_LISTER_H_

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::client {

// Synchronous GET {target.base_url}/v1/models (base_url may carry a path
// prefix, and may be https: verified as BeastRequestSender does, with
// target.ca_cert_path / target.insecure_skip_verify); returns data[0].id.
// Sends "Authorization: Bearer <key>" when LoadApiKey(target) gives a key
// (target.api_key_file, else $OPENAI_API_KEY; never logged) and
// target.headers. `timeout` bounds the whole exchange (resolve, connect,
// TLS handshake, request, answer) in real time.
// Errors:
//  - INVALID_ARGUMENT: bad base_url ("base_url: ..."), bad headers
//    ("headers[i]: ..."), unreadable CA or key file ("ca_cert_path: ...",
//    "api_key_file: ...");
//  - UNAVAILABLE "cannot reach <url>/v1/models: <why>": resolve, connect,
//    TLS ("tls: ...") or I/O failure, timeout, or an HTTP status other than
//    200;
//  - FAILED_PRECONDITION "no model listed at <url>/v1/models": the answer
//    has no data[0].id (or is not JSON).
// Thread-safe (each call has its own I/O context); blocks the caller.
absl::StatusOr<std::string> FetchFirstModel(const surge::v1::TargetConfig& target,
                                            std::chrono::milliseconds timeout);

// Pre-flight check of a target whose model is given: opens a connection to
// target.base_url (TLS handshake for https, verified as above) and sends
// GET /v1/models. OK as soon as the connection (and handshake) succeeded,
// whatever the answer (a server may answer 404 there and still serve
// completions). Errors: INVALID_ARGUMENT for a bad target (as above);
// UNAVAILABLE "cannot reach <url>/v1/models: <resolve|connect|tls>: <why>"
// or "...: no connection within <timeout> ms".
absl::Status CheckTargetConnects(const surge::v1::TargetConfig& target,
                                 std::chrono::milliseconds timeout);

// The same for a target given by its base URL alone (system CA store,
// $OPENAI_API_KEY, no extra headers).
absl::StatusOr<std::string> FetchFirstModel(const std::string& base_url,
                                            std::chrono::milliseconds timeout);

}  // namespace surge::client

#endif  // SURGE_CLIENT_MODEL_LISTER_H_
