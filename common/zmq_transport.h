// ZeroMQ implementations of Transport: ROUTER (coordinator) and DEALER
// (worker), optionally secured with CurveZMQ (R-DIST-5, docs/SECURITY.md).
// The only code in surge that includes zmq.hpp.
#ifndef SURGE_COMMON_ZMQ_TRANSPORT_H_
#define SURGE_COMMON_ZMQ_TRANSPORT_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/transport.h"

namespace surge {

// ---- CurveZMQ keys ---------------------------------------------------------
// A key is 32 bytes, written as 40 characters of ZeroMQ's Z85 text encoding
// (the form zmq_curve_keypair prints and ZMQ_CURVE_*KEY options accept).
inline constexpr size_t kCurveKeyZ85Size = 40;

// One CurveZMQ key pair, both keys in Z85 (40 characters each).
struct CurveKeyPair {
  std::string public_key_z85;
  std::string secret_key_z85;
};

// A fresh key pair from libzmq's zmq_curve_keypair. Errors: UNIMPLEMENTED
// when this libzmq was built without CURVE (no libsodium).
absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair();

// The public key belonging to `secret_key_z85` (zmq_curve_public). Errors:
// INVALID_ARGUMENT when `secret_key_z85` is not a 40-character Z85 key.
absl::StatusOr<std::string> CurvePublicKeyOf(const std::string& secret_key_z85);

// Key files: exactly one Z85 key (40 characters), surrounding whitespace
// (the trailing newline) ignored. `surge keygen` writes <name>.key (secret,
// mode 0600) and <name>.pub (public, mode 0644).
inline constexpr const char* kCurveSecretKeySuffix = ".key";
inline constexpr const char* kCurvePublicKeySuffix = ".pub";

// Reads the key of `path`. Errors (each naming the file): NOT_FOUND when it
// cannot be read; INVALID_ARGUMENT when its content is not one 40-character
// Z85 key.
absl::StatusOr<std::string> ReadCurveKeyFile(const std::filesystem::path& path);

// Reads every "*.pub" file of the allow-list directory `dir` (other files
// are ignored), sorted and deduplicated. Errors: NOT_FOUND when `dir` is not
// a readable directory; INVALID_ARGUMENT when it holds no *.pub file or a
// malformed one (the message names the file).
absl::StatusOr<std::vector<std::string>> ReadCurveAllowList(const std::filesystem::path& dir);

// The two files `WriteCurveKeyPair` wrote.
struct CurveKeyFiles {
  std::filesystem::path secret_key;  // DIR/<name>.key, mode 0600
  std::filesystem::path public_key;  // DIR/<name>.pub, mode 0644
};

// Generates a key pair and writes DIR/<name>.key (secret, mode 0600) and
// DIR/<name>.pub (public, mode 0644); creates `dir` (mode 0700) when missing.
// Never overwrites: when either file exists nothing is written. Errors:
// INVALID_ARGUMENT for an empty name or one with '/' or a leading '.';
// ALREADY_EXISTS naming the existing file; PERMISSION_DENIED / INTERNAL when
// the directory or a file cannot be created (nothing is left half-written).
absl::StatusOr<CurveKeyFiles> WriteCurveKeyPair(const std::filesystem::path& dir,
                                                const std::string& name);

// ---- Which binds and connects need CurveZMQ (R-DIST-5) --------------------

// True for endpoints that only this machine can reach: tcp:// on
// 127.0.0.0/8, [::1] / ::1 or localhost, and ipc:// or inproc://. Anything
// else ("*", 0.0.0.0, another address, a host or interface name) is
// reachable from the network.
bool IsLoopbackEndpoint(const std::string& endpoint);

// The security flags of the coordinator role (surge coordinator).
struct BindSecurityFlags {
  std::string bind;                   // --bind, e.g. "tcp://0.0.0.0:5555"
  std::string curve_secret_key_file;  // --curve-secret-key FILE ("" = none)
  std::string curve_allow_dir;        // --curve-allow DIR ("" = none)
  bool insecure = false;              // --insecure-transport
};

// The rule for a coordinator's bind: a non-loopback --bind requires CurveZMQ
// (both --curve-secret-key and --curve-allow) unless --insecure-transport
// is given (the job options' --insecure is the target's TLS check);
// loopback binds need neither. Pure: reads no file. Errors
// (INVALID_ARGUMENT, naming the flags): a malformed --bind; a non-loopback
// bind with neither; only one of the two curve flags; --insecure together
// with curve flags.
absl::Status CheckBindSecurity(const BindSecurityFlags& flags);

// The security flags of the worker role (surge worker).
struct ConnectSecurityFlags {
  std::string connect;                // --connect, e.g. "tcp://head:5555"
  std::string curve_secret_key_file;  // --curve-secret-key FILE
  std::string curve_server_key_file;  // --curve-server-key FILE
  bool insecure = false;              // --insecure
};

// The same rule for a worker: connecting to a non-loopback coordinator
// requires --curve-secret-key and --curve-server-key unless --insecure.
absl::Status CheckConnectSecurity(const ConnectSecurityFlags& flags);

// ---- Transports ------------------------------------------------------------

// CurveZMQ on the coordinator's socket: this side is the CURVE server.
struct CurveServerOptions {
  // The coordinator's own secret key (Z85, 40 characters).
  std::string secret_key_z85;
  // Public keys (Z85) of the workers allowed in; every other client is
  // refused by the ZAP handler during the handshake, before any of its
  // messages reaches Receive. Must not be empty.
  std::vector<std::string> allowed_public_keys_z85;
};

struct ZmqRouterOptions {
  // Unset: no security (plain ZMTP; only for loopback or --insecure).
  std::optional<CurveServerOptions> curve;
};

// Counts of the ZAP handler's decisions (each handshake is one decision).
struct ZapCounts {
  uint64_t accepted = 0;
  uint64_t refused = 0;
};

// The coordinator's socket: binds, talks to many workers by routing id.
class ZmqRouterTransport final : public Transport {
 public:
  // Binds to `endpoint` ("tcp://127.0.0.1:0" picks a free port). With
  // options.curve, first starts the ZAP handler thread (owned by this
  // transport, stopped and joined by the destructor) on
  // inproc://zeromq.zap.01 of this transport's own context, then binds as a
  // CURVE server: only clients whose public key is in the allow-list
  // complete the handshake; the first refusal of each key is logged as a
  // warning (up to 32 different keys, then refusals are only counted). Errors: UNAVAILABLE when the
  // bind fails; INVALID_ARGUMENT for a malformed key or an empty allow-list; UNIMPLEMENTED without
  // CURVE in libzmq.
  // Receive's deadlines are on `clock`.
  static absl::StatusOr<std::unique_ptr<ZmqRouterTransport>> Create(
      const std::string& endpoint, const ZmqRouterOptions& options = {},
      Clock& clock = RealClock());
  ~ZmqRouterTransport() override;

  // The bound endpoint with the real port, e.g. "tcp://127.0.0.1:40123".
  const std::string& endpoint() const;
  // What the ZAP handler decided so far (zeros without CURVE). Thread-safe.
  ZapCounts zap_counts() const;

  absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) override;
  absl::StatusOr<std::optional<Inbound>> Receive(Clock::TimePoint deadline) override;

 private:
  struct Impl;
  explicit ZmqRouterTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// CurveZMQ on a worker's socket: this side is a CURVE client.
struct CurveClientOptions {
  // The worker's own secret key (Z85); its public key is derived from it.
  std::string secret_key_z85;
  // The coordinator's public key (Z85): the handshake fails against any
  // other server.
  std::string server_public_key_z85;
};

struct ZmqDealerOptions {
  // Unset: no security.
  std::optional<CurveClientOptions> curve;
};

// A worker's socket: connects to the coordinator with a fixed routing id.
class ZmqDealerTransport final : public Transport {
 public:
  // Connects to `endpoint` with routing id `identity` (unique per worker
  // incarnation). Errors: INVALID_ARGUMENT for a malformed endpoint or key;
  // UNIMPLEMENTED without CURVE in libzmq.
  // Receive's deadlines are on `clock`.
  static absl::StatusOr<std::unique_ptr<ZmqDealerTransport>> Create(
      const std::string& endpoint, const std::string& identity,
      const ZmqDealerOptions& options = {}, Clock& clock = RealClock());
  ~ZmqDealerTransport() override;

  absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) override;
  absl::StatusOr<std::optional<Inbound>> Receive(Clock::TimePoint deadline) override;
  // From the socket monitor: a retry with no TCP connection since the last
  // one → kRefused; a ZAP refusal → kKeyNotAllowed; a failed handshake, or
  // a connection closed before its handshake completed → kHandshakeFailed.
  std::vector<LinkTrouble> TakeLinkTroubles() override;

 private:
  struct Impl;
  explicit ZmqDealerTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace surge

#endif  // SURGE_COMMON_ZMQ_TRANSPORT_H_
