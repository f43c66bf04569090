// CurveZMQ on the ZeroMQ transports (R-DIST-5): the bind
// rule, key files, and what reaches the coordinator's socket from allowed,
// unknown and unauthenticated peers. All traffic on 127.0.0.1.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>
#include <zmq.hpp>  // the raw attacker below speaks ZeroMQ directly

#include "common/zmq_transport.h"
#include "tests/testing/temp_dir.h"

namespace surge {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// ---- the bind / connect rule ------------------------------------------------

absl::Status Bind(const std::string& endpoint, bool key = false, bool allow = false,
                  bool insecure = false) {
  return CheckBindSecurity(
      BindSecurityFlags{endpoint, key ? "c.key" : "", allow ? "allow" : "", insecure});
}

TEST(BindSecurityRule, LoopbackBindsNeedNoCurve) {
  for (const std::string endpoint :
       {"tcp://127.0.0.1:5555", "tcp://127.0.0.1:*", "tcp://127.1.2.3:0", "tcp://[::1]:5555",
        "tcp://localhost:5555", "tcp://LOCALHOST:1", "ipc:///tmp/surge.sock", "inproc://x"}) {
    EXPECT_TRUE(IsLoopbackEndpoint(endpoint)) << endpoint;
    EXPECT_TRUE(Bind(endpoint).ok()) << endpoint << ": " << Bind(endpoint);
  }
}

TEST(BindSecurityRule, NetworkBindWithoutCurveIsRefusedNamingTheFlags) {
  for (const std::string endpoint :
       {"tcp://0.0.0.0:5555", "tcp://*:5555", "tcp://10.0.0.7:5555", "tcp://[::]:5555",
        "tcp://eth0:5555", "tcp://head.example:5555", "tcp://128.0.0.1:5555",
        "tcp://[::ffff:127.0.0.1]:5555"}) {
    EXPECT_FALSE(IsLoopbackEndpoint(endpoint)) << endpoint;
    const absl::Status s = Bind(endpoint);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << endpoint;
    EXPECT_THAT(s.message(), HasSubstr("--bind " + endpoint + " is not a loopback address"));
    EXPECT_THAT(s.message(), HasSubstr("--curve-secret-key FILE and --curve-allow DIR"));
    EXPECT_THAT(s.message(), HasSubstr("--insecure"));
    EXPECT_THAT(s.message(), HasSubstr("surge keygen"));
  }
}

TEST(BindSecurityRule, NetworkBindWithCurveOrExplicitInsecureIsAllowed) {
  EXPECT_TRUE(Bind("tcp://0.0.0.0:5555", /*key=*/true, /*allow=*/true).ok());
  EXPECT_TRUE(Bind("tcp://0.0.0.0:5555", false, false, /*insecure=*/true).ok());
  // CURVE on loopback is allowed too (e.g. to test the keys before a deploy).
  EXPECT_TRUE(Bind("tcp://127.0.0.1:5555", true, true).ok());
}

TEST(BindSecurityRule, HalfACurveConfigurationIsRefused) {
  const absl::Status only_key = Bind("tcp://0.0.0.0:5555", true, false);
  EXPECT_EQ(only_key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(only_key.message(),
            "--curve-secret-key and --curve-allow go together; only --curve-secret-key was given");
  const absl::Status only_allow = Bind("tcp://127.0.0.1:5555", false, true);
  EXPECT_EQ(only_allow.message(),
            "--curve-secret-key and --curve-allow go together; only --curve-allow was given");
}

TEST(BindSecurityRule, InsecureTogetherWithCurveIsRefused) {
  const absl::Status s = Bind("tcp://0.0.0.0:5555", true, true, /*insecure=*/true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--insecure-transport contradicts --curve-secret-key and --curve-allow: give one or "
            "the other");
}

TEST(BindSecurityRule, MalformedBindIsRefused) {
  for (const std::string endpoint : {"0.0.0.0:5555", "tcp://0.0.0.0", "tcp://:5555",
                                     "tcp://host:port", "udp://1.2.3.4:5", "tcp://[::1:5555", ""}) {
    const absl::Status s = Bind(endpoint, false, false, /*insecure=*/true);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << endpoint;
    EXPECT_THAT(s.message(), HasSubstr("--bind '" + endpoint + "' is not an endpoint"));
    EXPECT_FALSE(IsLoopbackEndpoint(endpoint)) << endpoint;
  }
}

TEST(ConnectSecurityRule, WorkerNeedsServerKeyOffLoopback) {
  EXPECT_TRUE(CheckConnectSecurity({"tcp://127.0.0.1:5555", "", "", false}).ok());
  EXPECT_TRUE(CheckConnectSecurity({"tcp://head:5555", "w.key", "c.pub", false}).ok());
  EXPECT_TRUE(CheckConnectSecurity({"tcp://head:5555", "", "", true}).ok());
  const absl::Status s = CheckConnectSecurity({"tcp://head:5555", "", "", false});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--connect tcp://head:5555 is not a loopback address"));
  EXPECT_THAT(s.message(), HasSubstr("--curve-secret-key FILE and --curve-server-key FILE"));
  EXPECT_EQ(CheckConnectSecurity({"tcp://head:5555", "w.key", "", false}).message(),
            "--curve-secret-key and --curve-server-key go together; only --curve-secret-key was "
            "given");
}

// ---- keys and key files -----------------------------------------------------

const std::regex kZ85Key("[0-9a-zA-Z.\\-:+=^!/*?&<>()\\[\\]{}@%$#]{40}");

// A folder WriteCurveKeyPair must make.
fs::path KeyDir(const std::string& name) {
  return surge::testing::AbsentDir("zmq_security_" + name);
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

mode_t Mode(const fs::path& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(CurveKeys, GeneratedPairsAreZ85AndConsistent) {
  auto a = GenerateCurveKeyPair();
  auto b = GenerateCurveKeyPair();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(std::regex_match(a->public_key_z85, kZ85Key)) << a->public_key_z85;
  EXPECT_TRUE(std::regex_match(a->secret_key_z85, kZ85Key));
  EXPECT_NE(a->public_key_z85, b->public_key_z85);
  EXPECT_NE(a->secret_key_z85, b->secret_key_z85);
  EXPECT_EQ(*CurvePublicKeyOf(a->secret_key_z85), a->public_key_z85);
  EXPECT_EQ(*CurvePublicKeyOf(b->secret_key_z85), b->public_key_z85);
  EXPECT_EQ(CurvePublicKeyOf("short").status().code(), absl::StatusCode::kInvalidArgument);
  // 40 characters, but '"' and ' ' are not in the Z85 alphabet.
  EXPECT_EQ(CurvePublicKeyOf(std::string(39, 'a') + "\"").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CurveKeyFiles, KeygenRoundTripWritesBothFilesWithTheirModes) {
  const fs::path dir = KeyDir("roundtrip") / "keys";
  auto files = WriteCurveKeyPair(dir, "worker-1");
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->secret_key, dir / "worker-1.key");
  EXPECT_EQ(files->public_key, dir / "worker-1.pub");
  EXPECT_EQ(Mode(dir), 0700u);
  EXPECT_EQ(Mode(files->secret_key), 0600u);
  EXPECT_EQ(Mode(files->public_key), 0644u);
  // Each file: the 40-character Z85 key and a newline, nothing else.
  const std::string secret_text = Slurp(files->secret_key);
  const std::string public_text = Slurp(files->public_key);
  ASSERT_EQ(secret_text.size(), 41u);
  ASSERT_EQ(public_text.size(), 41u);
  EXPECT_EQ(secret_text.back(), '\n');
  EXPECT_TRUE(std::regex_match(secret_text.substr(0, 40), kZ85Key));
  EXPECT_TRUE(std::regex_match(public_text.substr(0, 40), kZ85Key));
  auto secret = ReadCurveKeyFile(files->secret_key);
  auto pub = ReadCurveKeyFile(files->public_key);
  ASSERT_TRUE(secret.ok()) << secret.status();
  ASSERT_TRUE(pub.ok()) << pub.status();
  EXPECT_EQ(*secret, secret_text.substr(0, 40));
  // The public file belongs to the secret file.
  EXPECT_EQ(*CurvePublicKeyOf(*secret), *pub);
}

TEST(CurveKeyFiles, KeygenNeverOverwrites) {
  const fs::path dir = KeyDir("overwrite");
  auto first = WriteCurveKeyPair(dir, "coordinator");
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string secret_before = Slurp(first->secret_key);
  const std::string public_before = Slurp(first->public_key);
  auto again = WriteCurveKeyPair(dir, "coordinator");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(),
              HasSubstr((dir / "coordinator.key").string() + " already exists; surge keygen never "
                                                             "overwrites a key"));
  EXPECT_EQ(Slurp(first->secret_key), secret_before);
  EXPECT_EQ(Slurp(first->public_key), public_before);
  // Only the public half present: refused, and no secret file appears.
  fs::remove(first->secret_key);
  auto half = WriteCurveKeyPair(dir, "coordinator");
  EXPECT_EQ(half.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(half.status().message(), HasSubstr("coordinator.pub already exists"));
  EXPECT_FALSE(fs::exists(first->secret_key));
  EXPECT_EQ(Slurp(first->public_key), public_before);
}

TEST(CurveKeyFiles, KeygenRefusesBadNamesAndAFileAsDirectory) {
  const fs::path dir = KeyDir("names");
  for (const std::string name : {"", "../x", "a/b", ".hidden"}) {
    auto r = WriteCurveKeyPair(dir, name);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(r.status().message(), HasSubstr("--name '" + name + "' is not a file name"));
  }
  EXPECT_FALSE(fs::exists(dir));
  fs::create_directories(dir);
  std::ofstream(dir / "plain") << "x";
  auto r = WriteCurveKeyPair(dir / "plain", "k");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("is not a directory"));
}

TEST(CurveKeyFiles, MalformedKeyFilesAreRefusedWithoutEchoingThem) {
  const fs::path dir = KeyDir("malformed");
  fs::create_directories(dir);
  EXPECT_EQ(ReadCurveKeyFile(dir / "missing.key").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ReadCurveKeyFile(dir / "missing.key").status().message(),
              HasSubstr((dir / "missing.key").string()));
  std::ofstream(dir / "short.key") << "sk-THIS-IS-NOT-A-KEY\n";
  auto r = ReadCurveKeyFile(dir / "short.key");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("short.key does not hold one CurveZMQ key"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("THIS-IS-NOT")));
  auto pair = GenerateCurveKeyPair();
  std::ofstream(dir / "two.pub") << pair->public_key_z85 << "\n" << pair->public_key_z85 << "\n";
  EXPECT_EQ(ReadCurveKeyFile(dir / "two.pub").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CurveKeyFiles, AllowListReadsEveryPubFileAndOnlyThose) {
  const fs::path dir = KeyDir("allow");
  fs::create_directories(dir);
  auto empty = ReadCurveAllowList(dir);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("holds no public key file (*.pub)"));
  EXPECT_EQ(ReadCurveAllowList(dir / "nope").status().code(), absl::StatusCode::kNotFound);
  auto w1 = WriteCurveKeyPair(dir, "w1");
  auto w2 = WriteCurveKeyPair(dir, "w2");
  ASSERT_TRUE(w1.ok() && w2.ok());
  std::ofstream(dir / "README") << "not a key";
  auto keys = ReadCurveAllowList(dir);
  ASSERT_TRUE(keys.ok()) << keys.status();
  std::vector<std::string> expected = {*ReadCurveKeyFile(w1->public_key),
                                       *ReadCurveKeyFile(w2->public_key)};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(*keys, expected);  // the .key files are not in it
  std::ofstream(dir / "bad.pub") << "garbage";
  auto bad = ReadCurveAllowList(dir);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("bad.pub"));
}

// ---- transports ---------------------------------------------------------------

struct Keys {
  CurveKeyPair server = *GenerateCurveKeyPair();
  CurveKeyPair allowed = *GenerateCurveKeyPair();
  CurveKeyPair stranger = *GenerateCurveKeyPair();
};

std::unique_ptr<ZmqRouterTransport> CurveServer(const Keys& keys) {
  ZmqRouterOptions options;
  options.curve = CurveServerOptions{keys.server.secret_key_z85, {keys.allowed.public_key_z85}};
  auto server = ZmqRouterTransport::Create("tcp://127.0.0.1:0", options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<ZmqDealerTransport> CurveClient(const std::string& endpoint,
                                                const std::string& identity,
                                                const CurveKeyPair& own,
                                                const std::string& server_public) {
  ZmqDealerOptions options;
  options.curve = CurveClientOptions{own.secret_key_z85, server_public};
  auto client = ZmqDealerTransport::Create(endpoint, identity, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

surge::v1::Envelope HelloEnvelope(uint64_t seq) {
  surge::v1::Envelope e;
  e.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  e.set_seq(seq);
  e.mutable_hello()->set_host("allowed-worker");
  return e;
}

// A record batch as a peer would inject it: a fake record for index 7.
surge::v1::Envelope InjectedRecordBatch() {
  surge::v1::Envelope e;
  e.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  e.set_seq(1);
  auto* record = e.mutable_record_batch()->add_records();
  record->set_index(7);
  record->set_worker(0);
  return e;
}

// Receives for up to `wait`; the first message, or nullopt.
std::optional<Inbound> ReceiveWithin(Transport& transport, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = transport.Receive(RealClock().Now() + std::chrono::milliseconds(50));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return std::nullopt;
    if (r->has_value()) return *std::move(*r);
  }
  return std::nullopt;
}

// Waits (bounded) until the ZAP handler has refused at least `n` handshakes.
bool WaitForRefusals(const ZmqRouterTransport& server, uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (server.zap_counts().refused >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// After an attack: the server still works, and the first message it hands
// out is the allowed worker's Hello, not anything the attacker sent.
void ExpectOnlyTheAllowedWorkerGetsThrough(ZmqRouterTransport& server, const Keys& keys) {
  auto good = CurveClient(server.endpoint(), "good", keys.allowed, keys.server.public_key_z85);
  ASSERT_TRUE(good->Send("", HelloEnvelope(42)).ok());
  auto in = ReceiveWithin(server, std::chrono::seconds(10));
  ASSERT_TRUE(in.has_value()) << "the allowed worker's Hello did not arrive";
  EXPECT_EQ(in->peer, "good");
  EXPECT_TRUE(in->message.has_hello());
  EXPECT_EQ(in->message.seq(), 42u);
  EXPECT_FALSE(ReceiveWithin(server, std::chrono::milliseconds(200)).has_value());
}

TEST(CurveTransport, AllowedWorkerExchangesEnvelopesBothWays) {
  Keys keys;
  auto server = CurveServer(keys);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->endpoint(), HasSubstr("tcp://127.0.0.1:"));
  auto client = CurveClient(server->endpoint(), "w0-1", keys.allowed, keys.server.public_key_z85);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("", HelloEnvelope(1)).ok());
  auto hello = ReceiveWithin(*server, std::chrono::seconds(10));
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->peer, "w0-1");
  EXPECT_EQ(hello->message.hello().host(), "allowed-worker");

  surge::v1::Envelope welcome;
  welcome.set_seq(9);
  welcome.mutable_welcome()->set_worker_index(3);
  ASSERT_TRUE(server->Send("w0-1", welcome).ok());
  auto back = ReceiveWithin(*client, std::chrono::seconds(10));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->message.welcome().worker_index(), 3);
  EXPECT_EQ(back->message.seq(), 9u);

  ASSERT_TRUE(client->Send("", InjectedRecordBatch()).ok());
  auto batch = ReceiveWithin(*server, std::chrono::seconds(10));
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->message.record_batch().records(0).index(), 7u);
  EXPECT_EQ(server->zap_counts().accepted, 1u);
  EXPECT_EQ(server->zap_counts().refused, 0u);
}

TEST(CurveTransport, WorkerWithAnUnknownKeyGetsNothingThroughAndIsLoggedOnce) {
  Keys keys;
  auto server = CurveServer(keys);
  ASSERT_NE(server, nullptr);
  ::testing::internal::CaptureStderr();
  {
    // A real transport client with a well-formed key pair that is not in the
    // allow-list; it knows the right server key. Two of them, one after the
    // other, with the same key: two refusals, one log line.
    for (int i = 0; i < 2; ++i) {
      auto intruder = CurveClient(server->endpoint(), "w9-" + std::to_string(i), keys.stranger,
                                  keys.server.public_key_z85);
      ASSERT_TRUE(intruder->Send("", HelloEnvelope(1)).ok());
      ASSERT_TRUE(intruder->Send("", InjectedRecordBatch()).ok());
      ASSERT_TRUE(WaitForRefusals(*server, static_cast<uint64_t>(i + 1)));
      EXPECT_FALSE(ReceiveWithin(*server, std::chrono::milliseconds(500)).has_value());
      // Nothing comes back to it either.
      EXPECT_FALSE(ReceiveWithin(*intruder, std::chrono::milliseconds(100)).has_value());
    }
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  const std::string line =
      "its CurveZMQ public key " + keys.stranger.public_key_z85 + " is not in the allow-list";
  EXPECT_THAT(log, HasSubstr(line));
  EXPECT_EQ(log.find(line), log.rfind(line)) << "logged more than once:\n" << log;
  EXPECT_THAT(log, HasSubstr("from 127.0.0.1"));
  EXPECT_EQ(server->zap_counts().accepted, 0u);
  ExpectOnlyTheAllowedWorkerGetsThrough(*server, keys);
}

TEST(CurveTransport, RefusalLogIsBoundedAgainstPeersTryingFreshKeys) {
  Keys keys;
  auto server = CurveServer(keys);
  ASSERT_NE(server, nullptr);
  constexpr int kPeers = 40;  // more than the 32 keys that are logged
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < kPeers; ++i) {
    auto fresh = GenerateCurveKeyPair();
    ASSERT_TRUE(fresh.ok());
    auto intruder = CurveClient(server->endpoint(), "x" + std::to_string(i), *fresh,
                                keys.server.public_key_z85);
    ASSERT_TRUE(intruder->Send("", InjectedRecordBatch()).ok());
    ASSERT_TRUE(WaitForRefusals(*server, static_cast<uint64_t>(i + 1)));
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  int lines = 0;
  for (size_t at = log.find("is not in the allow-list"); at != std::string::npos;
       at = log.find("is not in the allow-list", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 32);
  EXPECT_THAT(log, HasSubstr("refused 32 different peers so far: further refusals are counted, "
                             "not logged"));
  EXPECT_EQ(server->zap_counts().refused, static_cast<uint64_t>(kPeers));
  EXPECT_FALSE(ReceiveWithin(*server, std::chrono::milliseconds(300)).has_value());
  ExpectOnlyTheAllowedWorkerGetsThrough(*server, keys);
}

TEST(CurveTransport, AllowedKeyAgainstTheWrongServerKeyGetsNothingThrough) {
  Keys keys;
  auto server = CurveServer(keys);
  ASSERT_NE(server, nullptr);
  auto confused =
      CurveClient(server->endpoint(), "w1-1", keys.allowed, keys.stranger.public_key_z85);
  ASSERT_TRUE(confused->Send("", InjectedRecordBatch()).ok());
  EXPECT_FALSE(ReceiveWithin(*server, std::chrono::milliseconds(1000)).has_value());
  EXPECT_EQ(server->zap_counts().accepted, 0u);
  ExpectOnlyTheAllowedWorkerGetsThrough(*server, keys);
}

TEST(CurveTransport, PlainTransportClientGetsNothingThrough) {
  Keys keys;
  auto server = CurveServer(keys);
  ASSERT_NE(server, nullptr);
  auto plain = ZmqDealerTransport::Create(server->endpoint(), "w2-1");
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE((*plain)->Send("", InjectedRecordBatch()).ok());
  EXPECT_FALSE(ReceiveWithin(*server, std::chrono::milliseconds(1000)).has_value());
  ExpectOnlyTheAllowedWorkerGetsThrough(*server, keys);
}

// A raw ZeroMQ DEALER (NULL mechanism, no CURVE) that injects a serialized
// RecordBatch, as an attacker on the network would.
class RawZmqClient {
 public:
  explicit RawZmqClient(const std::string& endpoint) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::routing_id, "raw-attacker");
    socket_.connect(endpoint);
  }
  void Inject(const surge::v1::Envelope& envelope) {
    const std::string bytes = envelope.SerializeAsString();
    zmq::message_t frame(bytes.data(), bytes.size());
    ASSERT_TRUE(socket_.send(frame, zmq::send_flags::dontwait).has_value());
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_{context_, zmq::socket_type::dealer};
};

TEST(CurveTransport, RawZmqClientWithoutCurveCannotInjectARecordBatch) {
  Keys keys;
  auto server = CurveServer(keys);
  ASSERT_NE(server, nullptr);
  RawZmqClient attacker(server->endpoint());
  attacker.Inject(InjectedRecordBatch());
  EXPECT_FALSE(ReceiveWithin(*server, std::chrono::milliseconds(1500)).has_value());
  ExpectOnlyTheAllowedWorkerGetsThrough(*server, keys);
}

// The control for the test above: the same injection against a transport
// without CURVE does arrive, so the refusal above is CURVE's doing.
TEST(CurveTransport, WithoutCurveTheSameRawInjectionArrives) {
  auto server = ZmqRouterTransport::Create("tcp://127.0.0.1:0");
  ASSERT_TRUE(server.ok());
  RawZmqClient attacker((*server)->endpoint());
  attacker.Inject(InjectedRecordBatch());
  auto in = ReceiveWithin(**server, std::chrono::seconds(10));
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->peer, "raw-attacker");
  EXPECT_EQ(in->message.record_batch().records(0).index(), 7u);
}

TEST(CurveTransport, RawTcpGarbageGetsNothingThrough) {
  Keys keys;
  auto server = CurveServer(keys);
  ASSERT_NE(server, nullptr);
  const std::string endpoint = server->endpoint();
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const std::string garbage = "POST /records HTTP/1.1\r\n\r\n" + std::string(512, '\x01');
  EXPECT_GT(write(fd, garbage.data(), garbage.size()), 0);
  EXPECT_FALSE(ReceiveWithin(*server, std::chrono::milliseconds(1000)).has_value());
  close(fd);
  ExpectOnlyTheAllowedWorkerGetsThrough(*server, keys);
}

TEST(CurveTransport, BadKeysAreRefusedAtCreate) {
  Keys keys;
  ZmqRouterOptions empty;
  empty.curve = CurveServerOptions{keys.server.secret_key_z85, {}};
  auto r = ZmqRouterTransport::Create("tcp://127.0.0.1:0", empty);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("allow-list is empty"));
  ZmqRouterOptions bad_secret;
  bad_secret.curve = CurveServerOptions{"not-a-key", {keys.allowed.public_key_z85}};
  EXPECT_EQ(ZmqRouterTransport::Create("tcp://127.0.0.1:0", bad_secret).status().code(),
            absl::StatusCode::kInvalidArgument);
  ZmqRouterOptions bad_allowed;
  bad_allowed.curve = CurveServerOptions{keys.server.secret_key_z85, {"x"}};
  EXPECT_THAT(ZmqRouterTransport::Create("tcp://127.0.0.1:0", bad_allowed).status().message(),
              HasSubstr("allow-list entry 1 is not a CurveZMQ public key"));
  ZmqDealerOptions bad_client;
  bad_client.curve = CurveClientOptions{keys.allowed.secret_key_z85, "short"};
  EXPECT_EQ(ZmqDealerTransport::Create("tcp://127.0.0.1:1", "w", bad_client).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CurveTransport, ServersStartAndStopCleanlyOneAfterAnother) {
  // Each server owns its ZAP thread; destroying it stops and joins the
  // thread (a hang here fails by the test timeout), and a new server can
  // start its own handler again.
  Keys keys;
  for (int i = 0; i < 3; ++i) {
    auto server = CurveServer(keys);
    ASSERT_NE(server, nullptr);
    ExpectOnlyTheAllowedWorkerGetsThrough(*server, keys);
  }
}

}  // namespace
}  // namespace surge
