// A tiny HTTP server for the live metrics (docs/METRICS.md):
// GET /metrics answers 200 with whatever `render` returns, as the Prometheus
// text format 0.0.4; any other path 404, any other method 405. One Asio
// thread; requests are bounded (8 KiB of headers, no body); keep-alive is
// honoured; an idle or slow connection is closed after 10 s. Beast stays
// behind the pimpl: this folder is the only coordinator/ folder allowed to
// include it (tests/layering_check.cmake, docs/DESIGN.md).
#ifndef SURGE_COORDINATOR_METRICS_HTTP_METRICS_HTTP_SERVER_H_
#define SURGE_COORDINATOR_METRICS_HTTP_METRICS_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace surge::coordinator {

class MetricsHttpServer {
 public:
  // Called on the server's thread for each GET /metrics; must be
  // thread-safe with respect to whoever updates what it renders.
  using Render = std::function<std::string()>;

  // Listens on `host`:`port` (port 0: any free port; host an address or a
  // name that resolves) and serves on its own thread until Stop.
  // Errors: UNAVAILABLE naming host:port and the system's reason when it
  // cannot listen there (e.g. "Address already in use"); INVALID_ARGUMENT
  // when `host` does not resolve.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& host,
                                                                  uint16_t port, Render render);
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The port it listens on (the chosen one when started with 0).
  uint16_t port() const;
  // Stops listening, closes every connection and joins the thread.
  // Idempotent.
  void Stop();

 private:
  class Impl;
  explicit MetricsHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_METRICS_HTTP_METRICS_HTTP_SERVER_H_
