// ZeroMQ implementations of Transport: ROUTER (coordinator) and DEALER
// (worker). The only code in surge that includes zmq.hpp.
#ifndef SURGE_COMMON_ZMQ_TRANSPORT_H_
#define SURGE_COMMON_ZMQ_TRANSPORT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/transport.h"

namespace surge {

// The coordinator's socket: binds, talks to many workers by routing id.
class ZmqRouterTransport final : public Transport {
 public:
  // Binds to `endpoint` ("tcp://127.0.0.1:0" picks a free port). Errors:
  // UNAVAILABLE when the bind fails.
  static absl::StatusOr<std::unique_ptr<ZmqRouterTransport>> Create(const std::string& endpoint);
  ~ZmqRouterTransport() override;

  // The bound endpoint with the real port, e.g. "tcp://127.0.0.1:40123".
  const std::string& endpoint() const;

  absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) override;
  absl::StatusOr<std::optional<Inbound>> Receive(std::chrono::milliseconds timeout) override;

 private:
  struct Impl;
  explicit ZmqRouterTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A worker's socket: connects to the coordinator with a fixed routing id.
class ZmqDealerTransport final : public Transport {
 public:
  // Connects to `endpoint` with routing id `identity` (unique per worker
  // incarnation). Errors: INVALID_ARGUMENT for a malformed endpoint.
  static absl::StatusOr<std::unique_ptr<ZmqDealerTransport>> Create(const std::string& endpoint,
                                                                    const std::string& identity);
  ~ZmqDealerTransport() override;

  absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) override;
  absl::StatusOr<std::optional<Inbound>> Receive(std::chrono::milliseconds timeout) override;

 private:
  struct Impl;
  explicit ZmqDealerTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace surge

#endif  // SURGE_COMMON_ZMQ_TRANSPORT_H_
