// Message passing between the coordinator and its workers (R-DIST-2). The
// interface hides ZeroMQ so the dispatcher and the worker session can be
// tested over in-memory queues on simulated time.
#ifndef SURGE_COMMON_TRANSPORT_H_
#define SURGE_COMMON_TRANSPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "surge/v1/wire.pb.h"

namespace surge {

// One received message and who sent it.
struct Inbound {
  // Routing id of the sender (ROUTER side); empty on the worker side.
  std::string peer;
  // The sender's network address when the transport knows it (ZeroMQ's
  // Peer-Address over tcp, e.g. "10.0.0.7"), for logs; empty otherwise.
  std::string address;
  surge::v1::Envelope message;
};

// What a connecting side saw go wrong on its link (libzmq's socket
// monitor), so that a set-up mistake names itself while the side keeps
// trying:
//  - kRefused: a connection attempt failed before TCP was up (nothing
//    listens at that host and port, or the host is unreachable);
//  - kKeyNotAllowed: the other side's authenticator refused this side's
//    CurveZMQ key (it is not in the coordinator's --curve-allow);
//  - kHandshakeFailed: TCP was up but the handshake failed or was dropped
//    (a wrong --curve-server-key, or CurveZMQ on one side only).
enum class LinkTrouble { kRefused, kKeyNotAllowed, kHandshakeFailed };

// A message channel. Not thread-safe: exactly one thread owns a Transport
// (sends and receives on it); other threads never touch it.
class Transport {
 public:
  virtual ~Transport() = default;
  // Sends `message` to `peer` (ignored on the worker side). Errors:
  // UNAVAILABLE when the peer is gone or the queue is full; INTERNAL when
  // `message` cannot be serialized (nothing is sent).
  virtual absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) = 0;
  // Waits until `deadline`, on the clock the transport was made with, for
  // one message; nullopt when none came by then (a deadline already past
  // only looks). Errors: DATA_LOSS for a frame that is not an Envelope,
  // INTERNAL on socket errors.
  virtual absl::StatusOr<std::optional<Inbound>> Receive(Clock::TimePoint deadline) = 0;
  // The link troubles seen since the last call, in order (never blocks).
  // Transports that cannot tell return none.
  virtual std::vector<LinkTrouble> TakeLinkTroubles() { return {}; }
};

}  // namespace surge

#endif  // SURGE_COMMON_TRANSPORT_H_
