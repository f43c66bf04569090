#include "common/zmq_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <zmq.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

namespace surge {
namespace {

// The ZAP endpoint libzmq asks during every CURVE handshake (RFC 27).
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// Tells the ZAP thread to stop (private to the transport's own context).
constexpr const char* kZapControlEndpoint = "inproc://surge-zap-control";
// The ZAP domain the coordinator's socket announces.
constexpr const char* kZapDomain = "surge";

constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

// The 32 key bytes of a 40-character Z85 key; nullopt when `z85` is not one.
std::optional<std::string> DecodeZ85Key(std::string_view z85) {
  if (z85.size() != kCurveKeyZ85Size) return std::nullopt;
  for (char c : z85) {
    if (kZ85Alphabet.find(c) == std::string_view::npos) return std::nullopt;
  }
  const std::string text(z85);  // zmq_z85_decode needs a terminating NUL
  uint8_t bytes[32];
  if (zmq_z85_decode(bytes, text.c_str()) == nullptr) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes), sizeof(bytes));
}

std::string EncodeZ85Key(const std::string& bytes) {
  char text[kCurveKeyZ85Size + 1];
  zmq_z85_encode(text, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return std::string(text, kCurveKeyZ85Size);
}

absl::Status RequireCurve() {
  if (zmq_has("curve") == 0) {
    return absl::UnimplementedError(
        "this libzmq was built without CURVE support (libsodium): CurveZMQ keys cannot be used");
  }
  return absl::OkStatus();
}

absl::Status FromZmq(const zmq::error_t& e, const std::string& what) {
  if (e.num() == EHOSTUNREACH || e.num() == EAGAIN) {
    return absl::UnavailableError(absl::StrCat(what, ": ", e.what()));
  }
  return absl::InternalError(absl::StrCat(what, ": ", e.what()));
}

// The poll timeout that ends at `deadline` on `clock`: whole milliseconds,
// rounded up (so a wait never ends before its deadline), 0 when it is past.
std::chrono::milliseconds TimeoutUntil(Clock& clock, Clock::TimePoint deadline) {
  const Clock::TimePoint now = clock.Now();
  if (deadline <= now) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
}

// The address a frame came from (libzmq's "Peer-Address" property, set for
// tcp and ipc peers); empty when libzmq does not give one.
std::string PeerAddress(zmq::message_t& frame) {
  try {
    const char* address = frame.gets("Peer-Address");
    return address != nullptr ? std::string(address) : std::string();
  } catch (const zmq::error_t&) {
    return std::string();
  }
}

absl::StatusOr<std::optional<zmq::message_t>> PollOne(zmq::socket_t& socket, Clock& clock,
                                                      Clock::TimePoint deadline) {
  const std::chrono::milliseconds timeout = TimeoutUntil(clock, deadline);
  zmq::pollitem_t items[] = {{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0}};
  try {
    zmq::poll(items, 1, timeout);
  } catch (const zmq::error_t& e) {
    // A signal (Ctrl-C) interrupted the wait: that is a timeout, not an error.
    if (e.num() == EINTR) return std::nullopt;
    throw;
  }
  if ((items[0].revents & ZMQ_POLLIN) == 0) return std::nullopt;
  zmq::message_t frame;
  if (!socket.recv(frame, zmq::recv_flags::dontwait)) return std::nullopt;
  return std::optional<zmq::message_t>(std::move(frame));
}

absl::StatusOr<surge::v1::Envelope> Parse(const zmq::message_t& frame) {
  surge::v1::Envelope envelope;
  if (!envelope.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    return absl::DataLossError(
        absl::StrCat("frame of ", frame.size(), " bytes is not an Envelope"));
  }
  return envelope;
}

// Drains the rest of a multipart message we do not understand.
void DrainMore(zmq::socket_t& socket) {
  while (socket.get(zmq::sockopt::rcvmore)) {
    zmq::message_t rest;
    (void)socket.recv(rest, zmq::recv_flags::dontwait);
  }
}

// The ZAP handler of one ROUTER transport (RFC 27 ZAP/1.0): a REP socket on
// inproc://zeromq.zap.01, served by its own thread until the destructor
// stops it. Without it, libzmq 4.3's CURVE server would accept every client
// key, so it is bound before the ROUTER binds.
class ZapHandler {
 public:
  // `allowed_keys`: the raw 32-byte public keys let in.
  static absl::StatusOr<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context,
                                                           std::set<std::string> allowed_keys) {
    auto handler = std::unique_ptr<ZapHandler>(new ZapHandler(context, std::move(allowed_keys)));
    try {
      handler->zap_.set(zmq::sockopt::linger, 0);
      handler->zap_.bind(kZapEndpoint);
      handler->control_in_.set(zmq::sockopt::linger, 0);
      handler->control_in_.bind(kZapControlEndpoint);
      handler->control_out_.set(zmq::sockopt::linger, 0);
      handler->control_out_.connect(kZapControlEndpoint);
    } catch (const zmq::error_t& e) {
      return absl::InternalError(absl::StrCat("cannot start the ZAP handler: ", e.what()));
    }
    // The sockets move to the thread here (thread creation is a full
    // barrier); from now on only the thread touches zap_ and control_in_.
    handler->thread_ = std::thread([h = handler.get()] { h->Loop(); });
    return handler;
  }

  ~ZapHandler() {
    try {
      zmq::message_t stop(0);
      (void)control_out_.send(stop, zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      LogError(absl::StrCat("cannot stop the ZAP handler: ", e.what()));
    }
    if (thread_.joinable()) thread_.join();
  }

  ZapCounts counts() const { return ZapCounts{accepted_.load(), refused_.load()}; }

 private:
  ZapHandler(zmq::context_t& context, std::set<std::string> allowed_keys)
      : zap_(context, zmq::socket_type::rep),
        control_in_(context, zmq::socket_type::pair),
        control_out_(context, zmq::socket_type::pair),
        allowed_(std::move(allowed_keys)) {}

  void Loop() {
    while (true) {
      zmq::pollitem_t items[] = {{static_cast<void*>(control_in_), 0, ZMQ_POLLIN, 0},
                                 {static_cast<void*>(zap_), 0, ZMQ_POLLIN, 0}};
      try {
        zmq::poll(items, 2, std::chrono::milliseconds(-1));
        if ((items[0].revents & ZMQ_POLLIN) != 0) break;
        if ((items[1].revents & ZMQ_POLLIN) != 0) HandleOne();
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        // ETERM or a broken socket: refusing everything from here on is the
        // safe side (handshakes wait for an answer that never comes).
        if (e.num() != ETERM) LogError(absl::StrCat("ZAP handler stopped: ", e.what()));
        break;
      }
    }
  }

  // Answers one ZAP request. Request frames: version, request id, domain,
  // address, routing id, mechanism, credentials...; reply frames: version,
  // request id, status code, status text, user id, metadata.
  void HandleOne() {
    std::vector<std::string> frames;
    do {
      zmq::message_t frame;
      if (!zap_.recv(frame, zmq::recv_flags::none)) return;
      frames.push_back(frame.to_string());
    } while (zap_.get(zmq::sockopt::rcvmore));
    const std::string version = frames.size() > 0 ? frames[0] : "";
    const std::string request_id = frames.size() > 1 ? frames[1] : "";
    const std::string address = frames.size() > 3 ? frames[3] : "?";
    const std::string mechanism = frames.size() > 5 ? frames[5] : "";
    std::string status = "400";
    std::string text;
    std::string user_id;
    if (version != "1.0" || frames.size() < 6) {
      text = "malformed ZAP request";
    } else if (mechanism != "CURVE" || frames.size() != 7 || frames[6].size() != 32) {
      text = "only CURVE clients are accepted";
      if (logged_.insert("mechanism " + mechanism).second) {
        LogWarning(absl::StrCat("refused a peer from ", address, " using the ", mechanism,
                                " mechanism: only CurveZMQ clients with an allowed key are "
                                "accepted (further refusals of this kind are not logged)"));
      }
    } else if (allowed_.count(frames[6]) == 0) {
      text = "client public key not in the allow-list";
      const std::string key = EncodeZ85Key(frames[6]);
      if (logged_.size() < kMaxLoggedRefusals && logged_.insert(key).second) {
        LogWarning(absl::StrCat("refused a peer from ", address, ": its CurveZMQ public key ", key,
                                " is not in the allow-list (further attempts with this key are "
                                "not logged)"));
        if (logged_.size() == kMaxLoggedRefusals) {
          LogWarning(absl::StrCat("refused ", kMaxLoggedRefusals,
                                  " different peers so far: further refusals are counted, not "
                                  "logged"));
        }
      }
    } else {
      status = "200";
      text = "OK";
      user_id = EncodeZ85Key(frames[6]);
    }
    (status == "200" ? accepted_ : refused_).fetch_add(1);
    const std::string reply[] = {"1.0", request_id, status, text, user_id, ""};
    for (size_t i = 0; i < 6; ++i) {
      zmq::message_t frame(reply[i].data(), reply[i].size());
      (void)zap_.send(frame, i + 1 < 6 ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }

  zmq::socket_t zap_;
  zmq::socket_t control_in_;
  zmq::socket_t control_out_;  // the owner's end; used by the destructor only
  const std::set<std::string> allowed_;
  // Keys (Z85) and mechanisms already logged; bounded, so a peer trying
  // fresh keys can neither flood the log nor grow this set without end.
  static constexpr size_t kMaxLoggedRefusals = 32;
  std::set<std::string> logged_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

absl::StatusOr<std::string> CheckedKey(const std::string& z85, const std::string& what) {
  if (!DecodeZ85Key(z85).has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not a CurveZMQ key (40 characters of Z85 text expected, got ",
                     z85.size(), " characters)"));
  }
  return z85;
}

// "tcp://HOST:PORT" → HOST (brackets removed); nullopt when malformed.
std::optional<std::string> TcpHost(const std::string& endpoint) {
  constexpr absl::string_view kTcp = "tcp://";
  if (!absl::StartsWith(endpoint, kTcp)) return std::nullopt;
  std::string rest = endpoint.substr(kTcp.size());
  // A connect may name a source first: tcp://SOURCE;HOST:PORT.
  if (const size_t semi = rest.find(';'); semi != std::string::npos) rest = rest.substr(semi + 1);
  std::string host;
  std::string port;
  if (absl::StartsWith(rest, "[")) {
    const size_t close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return std::nullopt;
    }
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty() || port.empty()) return std::nullopt;
  if (port != "*" &&
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return host;
}

bool IsKnownEndpointForm(const std::string& endpoint) {
  return absl::StartsWith(endpoint, "ipc://") || absl::StartsWith(endpoint, "inproc://") ||
         TcpHost(endpoint).has_value();
}

}  // namespace

absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair() {
  if (absl::Status s = RequireCurve(); !s.ok()) return s;
  char public_key[kCurveKeyZ85Size + 1];
  char secret_key[kCurveKeyZ85Size + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return absl::InternalError(
        absl::StrCat("zmq_curve_keypair failed: ", zmq_strerror(zmq_errno())));
  }
  return CurveKeyPair{std::string(public_key, kCurveKeyZ85Size),
                      std::string(secret_key, kCurveKeyZ85Size)};
}

absl::StatusOr<std::string> CurvePublicKeyOf(const std::string& secret_key_z85) {
  if (absl::Status s = RequireCurve(); !s.ok()) return s;
  auto checked = CheckedKey(secret_key_z85, "the secret key");
  if (!checked.ok()) return checked.status();
  char public_key[kCurveKeyZ85Size + 1];
  if (zmq_curve_public(public_key, secret_key_z85.c_str()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot derive the public key: ", zmq_strerror(zmq_errno())));
  }
  return std::string(public_key, kCurveKeyZ85Size);
}

absl::StatusOr<std::string> ReadCurveKeyFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(path, ec)) {
    return absl::NotFoundError(absl::StrCat("cannot read the key file ", path.string(), ": ",
                                            in ? "it is a directory" : std::strerror(errno)));
  }
  std::ostringstream content;
  content << in.rdbuf();
  const std::string key(absl::StripAsciiWhitespace(content.str()));
  if (!DecodeZ85Key(key).has_value()) {
    // The content is never echoed: it may be a secret.
    return absl::InvalidArgumentError(
        absl::StrCat("the key file ", path.string(),
                     " does not hold one CurveZMQ key (40 characters of Z85 "
                     "text, as written by `surge keygen`); it holds ",
                     key.size(), " non-blank characters"));
  }
  return key;
}

absl::StatusOr<std::vector<std::string>> ReadCurveAllowList(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("--curve-allow ", dir.string(),
                                            " is not a readable directory of public keys (*.pub)"));
  }
  std::set<std::string> keys;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != kCurvePublicKeySuffix) continue;
    ++files;
    auto key = ReadCurveKeyFile(entry.path());
    if (!key.ok()) return absl::InvalidArgumentError(key.status().message());
    keys.insert(*key);
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot list --curve-allow ", dir.string(), ": ", ec.message()));
  }
  if (files == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--curve-allow ", dir.string(),
                     " holds no public key file (*.pub): no worker could join; copy each worker's "
                     "<name>.pub from `surge keygen` there"));
  }
  return std::vector<std::string>(keys.begin(), keys.end());
}

namespace {

// Writes `content` to a new file `path` with exactly `mode`; fails when the
// file exists (O_EXCL) or is a symlink.
absl::Status WriteNewFile(const std::filesystem::path& path, const std::string& content,
                          mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) {
      return absl::AlreadyExistsError(
          absl::StrCat(path.string(),
                       " already exists; surge keygen never overwrites a key "
                       "(choose another --name or --out, or remove it first)"));
    }
    if (err == EACCES || err == EPERM || err == EROFS) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create ", path.string(), ": ", std::strerror(err)));
    }
    return absl::InternalError(
        absl::StrCat("cannot create ", path.string(), ": ", std::strerror(err)));
  }
  absl::Status status;
  if (fchmod(fd, mode) != 0) {
    status = absl::InternalError(
        absl::StrCat("cannot set the mode of ", path.string(), ": ", std::strerror(errno)));
  }
  size_t written = 0;
  while (status.ok() && written < content.size()) {
    const ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status = absl::InternalError(
          absl::StrCat("cannot write ", path.string(), ": ", std::strerror(errno)));
      break;
    }
    written += static_cast<size_t>(n);
  }
  if (status.ok() && fsync(fd) != 0) {
    status = absl::InternalError(
        absl::StrCat("cannot write ", path.string(), ": ", std::strerror(errno)));
  }
  close(fd);
  if (!status.ok()) unlink(path.c_str());
  return status;
}

}  // namespace

absl::StatusOr<CurveKeyFiles> WriteCurveKeyPair(const std::filesystem::path& dir,
                                                const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.front() == '.' ||
      name.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--name '", name,
                     "' is not a file name: give a non-empty name without '/' that does "
                     "not start with '.' (e.g. coordinator or worker-1)"));
  }
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create --out ", dir.string(), ": ", ec.message()));
    }
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  } else if (!std::filesystem::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("--out ", dir.string(), " is not a directory"));
  }
  CurveKeyFiles files{dir / (name + kCurveSecretKeySuffix), dir / (name + kCurvePublicKeySuffix)};
  for (const auto& path : {files.secret_key, files.public_key}) {
    if (std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found) {
      return absl::AlreadyExistsError(
          absl::StrCat(path.string(),
                       " already exists; surge keygen never overwrites a key "
                       "(choose another --name or --out, or remove it first)"));
    }
  }
  auto pair = GenerateCurveKeyPair();
  if (!pair.ok()) return pair.status();
  if (absl::Status s = WriteNewFile(files.secret_key, pair->secret_key_z85 + "\n", 0600); !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteNewFile(files.public_key, pair->public_key_z85 + "\n", 0644); !s.ok()) {
    unlink(files.secret_key.c_str());
    return s;
  }
  return files;
}

bool IsLoopbackEndpoint(const std::string& endpoint) {
  if (absl::StartsWith(endpoint, "ipc://") || absl::StartsWith(endpoint, "inproc://")) return true;
  const auto host = TcpHost(endpoint);
  if (!host.has_value()) return false;
  if (absl::EqualsIgnoreCase(*host, "localhost")) return true;
  in_addr v4;
  if (inet_pton(AF_INET, host->c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;  // 127.0.0.0/8
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, host->c_str(), &v6) == 1) {
    return std::memcmp(&v6, &in6addr_loopback, sizeof(v6)) == 0;
  }
  return false;
}

namespace {

// The shared rule of CheckBindSecurity and CheckConnectSecurity.
absl::Status CheckSecurity(const std::string& endpoint_flag, const std::string& endpoint,
                           const std::string& key_flag, bool has_key, const std::string& peer_flag,
                           bool has_peer, bool insecure, const std::string& peers) {
  if (!IsKnownEndpointForm(endpoint)) {
    return absl::InvalidArgumentError(absl::StrCat(
        endpoint_flag, " '", endpoint, "' is not an endpoint: expected tcp://ADDRESS:PORT (e.g. ",
        endpoint_flag == "--bind" ? "tcp://0.0.0.0:5555" : "tcp://head-node:5555", ")"));
  }
  if (has_key != has_peer) {
    return absl::InvalidArgumentError(absl::StrCat(key_flag, " and ", peer_flag,
                                                   " go together; only ",
                                                   has_key ? key_flag : peer_flag, " was given"));
  }
  // The coordinator's job options already have --insecure (the target's
  // TLS check), so its transport flag is --insecure-transport.
  const std::string insecure_flag =
      endpoint_flag == "--bind" ? "--insecure-transport" : "--insecure";
  if (insecure && has_key) {
    return absl::InvalidArgumentError(absl::StrCat(insecure_flag, " contradicts ", key_flag,
                                                   " and ", peer_flag, ": give one or the other"));
  }
  if (!has_key && !insecure && !IsLoopbackEndpoint(endpoint)) {
    return absl::InvalidArgumentError(absl::StrCat(
        endpoint_flag, " ", endpoint, " is not a loopback address, so it needs CurveZMQ: give ",
        key_flag, " FILE and ", peer_flag, " ", peer_flag == "--curve-allow" ? "DIR" : "FILE",
        " (keys from `surge keygen --out DIR`), or ", insecure_flag, " to ", peers,
        " without authentication or encryption. Loopback endpoints (127.0.0.1, ::1, "
        "localhost) need neither."));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBindSecurity(const BindSecurityFlags& flags) {
  return CheckSecurity("--bind", flags.bind, "--curve-secret-key",
                       !flags.curve_secret_key_file.empty(), "--curve-allow",
                       !flags.curve_allow_dir.empty(), flags.insecure,
                       "accept any peer that reaches the port");
}

absl::Status CheckConnectSecurity(const ConnectSecurityFlags& flags) {
  return CheckSecurity("--connect", flags.connect, "--curve-secret-key",
                       !flags.curve_secret_key_file.empty(), "--curve-server-key",
                       !flags.curve_server_key_file.empty(), flags.insecure,
                       "talk to the coordinator");
}

struct ZmqRouterTransport::Impl {
  explicit Impl(Clock& c) : clock(c) {}
  // Closes the socket first, then stops the ZAP thread, then the context.
  ~Impl() {
    socket.close();
    monitor.close();
    zap.reset();
    context.close();
  }
  // With CURVE: logs failed handshakes (a worker with another server key,
  // or without CurveZMQ) from the socket monitor, the first at once, then
  // at most every 10 s with the count; looked at most every 100 ms.
  void LogHandshakeFailures() {
    if (!monitoring) return;
    const Clock::TimePoint now = clock.Now();
    if (now < next_monitor_look) return;
    next_monitor_look = now + std::chrono::milliseconds(100);
    uint64_t seen = 0;
    try {
      zmq::message_t head;
      while (monitor.recv(head, zmq::recv_flags::dontwait)) {
        zmq::message_t address;
        if (head.more()) (void)monitor.recv(address, zmq::recv_flags::none);
        ++seen;
      }
    } catch (const zmq::error_t&) {
      monitoring = false;
    }
    if (seen == 0) return;
    handshake_failures += seen;
    if (now < next_handshake_log) return;
    next_handshake_log = now + std::chrono::seconds(10);
    LogWarning(absl::StrCat(
        "a peer failed the CurveZMQ handshake (", handshake_failures,
        " so far): a worker whose --curve-server-key is not this coordinator's public key, or "
        "one without CurveZMQ (--insecure-transport)"));
  }
  zmq::context_t context{1};
  std::unique_ptr<ZapHandler> zap;  // set with CURVE only
  zmq::socket_t socket{context, zmq::socket_type::router};
  zmq::socket_t monitor{context, zmq::socket_type::pair};
  bool monitoring = false;
  uint64_t handshake_failures = 0;
  Clock::TimePoint next_monitor_look{};
  Clock::TimePoint next_handshake_log{};
  std::string endpoint;
  Clock& clock;
};

ZmqRouterTransport::ZmqRouterTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZmqRouterTransport::~ZmqRouterTransport() = default;

absl::StatusOr<std::unique_ptr<ZmqRouterTransport>> ZmqRouterTransport::Create(
    const std::string& endpoint, const ZmqRouterOptions& options, Clock& clock) {
  auto impl = std::make_unique<Impl>(clock);
  if (options.curve.has_value()) {
    if (absl::Status s = RequireCurve(); !s.ok()) return s;
    auto secret = CheckedKey(options.curve->secret_key_z85, "the coordinator's secret key");
    if (!secret.ok()) return secret.status();
    if (options.curve->allowed_public_keys_z85.empty()) {
      return absl::InvalidArgumentError("the CurveZMQ allow-list is empty: no worker could join");
    }
    std::set<std::string> allowed;
    for (const std::string& key : options.curve->allowed_public_keys_z85) {
      auto raw = DecodeZ85Key(key);
      if (!raw.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("allow-list entry ", allowed.size() + 1,
                                                       " is not a CurveZMQ public key (40 "
                                                       "characters of Z85 text expected)"));
      }
      allowed.insert(*raw);
    }
    // The handler must listen before the bind: a CURVE server without a ZAP
    // handler lets every client key in.
    auto zap = ZapHandler::Start(impl->context, std::move(allowed));
    if (!zap.ok()) return zap.status();
    impl->zap = *std::move(zap);
  }
  try {
    // A send to a vanished peer fails with EHOSTUNREACH instead of being
    // dropped silently: a gone worker shows as a failed send.
    impl->socket.set(zmq::sockopt::router_mandatory, 1);
    impl->socket.set(zmq::sockopt::sndhwm, 10000);
    impl->socket.set(zmq::sockopt::linger, 0);
    if (options.curve.has_value()) {
      impl->socket.set(zmq::sockopt::curve_server, 1);
      impl->socket.set(zmq::sockopt::curve_secretkey, options.curve->secret_key_z85);
      impl->socket.set(zmq::sockopt::zap_domain, kZapDomain);
      const std::string monitor_endpoint =
          absl::StrCat("inproc://surge-handshake-monitor-", reinterpret_cast<uintptr_t>(&*impl));
      if (zmq_socket_monitor(
              static_cast<void*>(impl->socket), monitor_endpoint.c_str(),
              ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) == 0) {
        impl->monitor.set(zmq::sockopt::linger, 0);
        impl->monitor.connect(monitor_endpoint);
        impl->monitoring = true;
      }
    }
    impl->socket.bind(endpoint);
    impl->endpoint = impl->socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat("cannot bind ", endpoint, ": ", e.what()));
  }
  return std::unique_ptr<ZmqRouterTransport>(new ZmqRouterTransport(std::move(impl)));
}

ZapCounts ZmqRouterTransport::zap_counts() const {
  return impl_->zap ? impl_->zap->counts() : ZapCounts{};
}

const std::string& ZmqRouterTransport::endpoint() const { return impl_->endpoint; }

absl::Status ZmqRouterTransport::Send(const std::string& peer, const surge::v1::Envelope& message) {
  try {
    zmq::message_t id(peer.data(), peer.size());
    zmq::message_t body(message.ByteSizeLong());
    if (!message.SerializeToArray(body.data(), static_cast<int>(body.size()))) {
      return absl::InternalError("message cannot be serialized (not sent)");
    }
    if (!impl_->socket.send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait) ||
        !impl_->socket.send(body, zmq::send_flags::dontwait)) {
      return absl::UnavailableError(absl::StrCat("send queue to ", peer, " is full"));
    }
  } catch (const zmq::error_t& e) {
    return FromZmq(e, absl::StrCat("send to ", peer));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Inbound>> ZmqRouterTransport::Receive(Clock::TimePoint deadline) {
  impl_->LogHandshakeFailures();
  try {
    auto id = PollOne(impl_->socket, impl_->clock, deadline);
    if (!id.ok()) return id.status();
    if (!id->has_value()) return std::nullopt;
    if (!impl_->socket.get(zmq::sockopt::rcvmore)) {
      return absl::DataLossError("ROUTER frame without a body");
    }
    zmq::message_t body;
    (void)impl_->socket.recv(body, zmq::recv_flags::none);
    DrainMore(impl_->socket);
    auto envelope = Parse(body);
    if (!envelope.ok()) return envelope.status();
    return std::optional<Inbound>(
        Inbound{(*id)->to_string(), PeerAddress(body), *std::move(envelope)});
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "receive");
  }
}

struct ZmqDealerTransport::Impl {
  explicit Impl(Clock& c) : clock(c) {}
  // Declared before `socket`: destroyed after it.
  zmq::context_t context{1};
  zmq::socket_t monitor{context, zmq::socket_type::pair};
  zmq::socket_t socket{context, zmq::socket_type::dealer};
  Clock& clock;
  // The monitor's state: TCP is up, the handshake on it completed, and a
  // TCP connection was up since the last retry.
  bool tcp_up = false;
  bool handshake_done = false;
  bool tcp_since_retry = false;
  bool monitoring = false;
};

ZmqDealerTransport::ZmqDealerTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZmqDealerTransport::~ZmqDealerTransport() = default;

absl::StatusOr<std::unique_ptr<ZmqDealerTransport>> ZmqDealerTransport::Create(
    const std::string& endpoint, const std::string& identity, const ZmqDealerOptions& options,
    Clock& clock) {
  auto impl = std::make_unique<Impl>(clock);
  std::string public_key;
  if (options.curve.has_value()) {
    auto server = CheckedKey(options.curve->server_public_key_z85, "the coordinator's public key");
    if (!server.ok()) return server.status();
    auto derived = CurvePublicKeyOf(options.curve->secret_key_z85);
    if (!derived.ok()) {
      return absl::Status(derived.status().code(),
                          absl::StrCat("the worker's secret key: ", derived.status().message()));
    }
    public_key = *std::move(derived);
  }
  try {
    impl->socket.set(zmq::sockopt::routing_id, identity);
    impl->socket.set(zmq::sockopt::linger, 0);
    impl->socket.set(zmq::sockopt::reconnect_ivl, 100);
    impl->socket.set(zmq::sockopt::reconnect_ivl_max, 1000);
    if (options.curve.has_value()) {
      impl->socket.set(zmq::sockopt::curve_serverkey, options.curve->server_public_key_z85);
      impl->socket.set(zmq::sockopt::curve_publickey, public_key);
      impl->socket.set(zmq::sockopt::curve_secretkey, options.curve->secret_key_z85);
    }
    // The monitor must exist before the connect: the first attempt's
    // events are the ones a mistake shows in.
    const std::string monitor_endpoint = absl::StrCat("inproc://surge-link-monitor-", identity);
    if (zmq_socket_monitor(static_cast<void*>(impl->socket), monitor_endpoint.c_str(),
                           ZMQ_EVENT_ALL) == 0) {
      impl->monitor.set(zmq::sockopt::linger, 0);
      impl->monitor.connect(monitor_endpoint);
      impl->monitoring = true;
    }
    impl->socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot connect to ", endpoint, ": ", e.what()));
  }
  return std::unique_ptr<ZmqDealerTransport>(new ZmqDealerTransport(std::move(impl)));
}

std::vector<LinkTrouble> ZmqDealerTransport::TakeLinkTroubles() {
  std::vector<LinkTrouble> out;
  if (!impl_->monitoring) return out;
  Impl& m = *impl_;
  try {
    while (true) {
      // Each event is two frames: 2 bytes event id + 4 bytes value, then the
      // endpoint.
      zmq::message_t head;
      if (!m.monitor.recv(head, zmq::recv_flags::dontwait)) break;
      zmq::message_t address;
      if (head.more()) (void)m.monitor.recv(address, zmq::recv_flags::none);
      if (head.size() < 6) continue;
      uint16_t event = 0;
      std::memcpy(&event, head.data(), sizeof(event));
      switch (event) {
        case ZMQ_EVENT_CONNECTED:
          m.tcp_up = true;
          m.tcp_since_retry = true;
          m.handshake_done = false;
          break;
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
          m.handshake_done = true;
          break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
          out.push_back(LinkTrouble::kKeyNotAllowed);
          m.handshake_done = true;  // said; its disconnect says nothing more
          break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
          out.push_back(LinkTrouble::kHandshakeFailed);
          m.handshake_done = true;
          break;
        case ZMQ_EVENT_DISCONNECTED:
          if (m.tcp_up && !m.handshake_done) out.push_back(LinkTrouble::kHandshakeFailed);
          m.tcp_up = false;
          break;
        case ZMQ_EVENT_CONNECT_RETRIED:
          // A retry after a connection that was up (and dropped) is no
          // refusal: that drop said what it had to.
          if (!m.tcp_since_retry) out.push_back(LinkTrouble::kRefused);
          m.tcp_since_retry = false;
          break;
        default:
          break;
      }
    }
  } catch (const zmq::error_t&) {
    // A monitor that fails says nothing more; the link itself is unaffected.
    m.monitoring = false;
  }
  return out;
}

absl::Status ZmqDealerTransport::Send(const std::string& /*peer*/,
                                      const surge::v1::Envelope& message) {
  try {
    zmq::message_t body(message.ByteSizeLong());
    if (!message.SerializeToArray(body.data(), static_cast<int>(body.size()))) {
      return absl::InternalError("message cannot be serialized (not sent)");
    }
    if (!impl_->socket.send(body, zmq::send_flags::dontwait)) {
      return absl::UnavailableError("send queue to the coordinator is full");
    }
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "send to coordinator");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Inbound>> ZmqDealerTransport::Receive(Clock::TimePoint deadline) {
  try {
    auto frame = PollOne(impl_->socket, impl_->clock, deadline);
    if (!frame.ok()) return frame.status();
    if (!frame->has_value()) return std::nullopt;
    DrainMore(impl_->socket);
    auto envelope = Parse(**frame);
    if (!envelope.ok()) return envelope.status();
    return std::optional<Inbound>(Inbound{std::string(), std::string(), *std::move(envelope)});
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "receive");
  }
}

}  // namespace surge
