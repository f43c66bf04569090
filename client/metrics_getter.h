// The server telemetry's GET (docs/METRICS.md "Server telemetry"): one URL,
// a server's Prometheus /metrics, fetched again and again on a kept
// connection. Beast stays in the .cc files.
#ifndef SURGE_CLIENT_METRICS_GETTER_H_
#define SURGE_CLIENT_METRICS_GETTER_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::client {

class HttpExchange;

class MetricsGetter {
 public:
  // `url`: http or https, host, port and path (read as a base URL, so no
  // query). An https URL is verified with `tls`'s ca_cert_path and
  // insecure_skip_verify (the target's settings). No API key and none of
  // the target's headers are sent: the metrics of vLLM and SGLang need none.
  // `timeout` bounds each GET as a whole (connect included), in real time.
  // Errors: INVALID_ARGUMENT for a bad URL or CA file.
  static absl::StatusOr<std::unique_ptr<MetricsGetter>> Create(const std::string& url,
                                                               const surge::v1::TargetConfig& tls,
                                                               std::chrono::milliseconds timeout);
  ~MetricsGetter();
  MetricsGetter(const MetricsGetter&) = delete;
  MetricsGetter& operator=(const MetricsGetter&) = delete;

  // The body of a 200 answer. Errors: UNAVAILABLE "answered <status>",
  // "did not answer within <timeout> ms", "failed (<connect|tls|read...>:
  // <why>)". Not thread-safe.
  absl::StatusOr<std::string> Get();

 private:
  MetricsGetter(std::unique_ptr<HttpExchange> http, std::string target,
                std::chrono::milliseconds timeout);
  std::unique_ptr<HttpExchange> http_;
  const std::string target_;  // the request target, e.g. "/metrics"
  const std::chrono::milliseconds timeout_;
};

}  // namespace surge::client

#endif  // SURGE_CLIENT_METRICS_GETTER_H_
