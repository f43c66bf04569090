// Finds the model to benchmark when none is configured: the first model the
// server lists at /v1/models (SPEC R-UI-2 `--model` default).
#ifndef SURGE_WORKER_HTTP_MODEL_LISTER_H_
#define SURGE_WORKER_HTTP_MODEL_LISTER_H_

#include <chrono>
#include <string>

#include "absl/status/statusor.h"

namespace surge::worker {

// Synchronous GET {base_url}/v1/models (base_url may carry a path prefix);
// returns data[0].id. Sends "Authorization: Bearer $OPENAI_API_KEY" when
// that environment variable is set. `timeout` bounds the whole exchange
// (resolve, connect, request, answer) in real time.
// Errors:
//  - INVALID_ARGUMENT: bad base_url ("base_url: ..."), or https
//    ("base_url: https is not supported yet");
//  - UNAVAILABLE "cannot reach <url>/v1/models: <why>": resolve, connect or
//    I/O failure, timeout, or an HTTP status other than 200;
//  - FAILED_PRECONDITION "no model listed at <url>/v1/models": the answer
//    has no data[0].id (or is not JSON).
// Thread-safe (each call has its own I/O context); blocks the caller.
absl::StatusOr<std::string> FetchFirstModel(const std::string& base_url,
                                            std::chrono::milliseconds timeout);

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_MODEL_LISTER_H_
