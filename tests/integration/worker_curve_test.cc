// `surge worker` with CurveZMQ flags (docs/SECURITY.md): the
// real worker binary against a CURVE coordinator socket made by the test on
// 127.0.0.1. An allowed worker's Hello arrives and it obeys a Reject; a
// worker whose key is not allowed gets nothing through; the flag rule and
// bad key files stop the worker before it connects anywhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "common/zmq_transport.h"
#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A `surge worker` child with its output in a file; killed by pid at the end.
class WorkerProcess {
 public:
  WorkerProcess(const std::vector<std::string>& args, const fs::path& log) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      if (freopen(log.c_str(), "w", stderr) == nullptr) _exit(126);
      std::vector<std::string> all = {"worker"};
      all.insert(all.end(), args.begin(), args.end());
      ExecSurge(std::move(all));
    }
  }
  ~WorkerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // The exit code, waiting at most `limit`; -1 when still running.
  int WaitExit(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  std::string Log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

struct CurveRig {
  fs::path dir;
  CurveKeyFiles coordinator;
  CurveKeyFiles allowed;
  CurveKeyFiles stranger;
  std::unique_ptr<ZmqRouterTransport> server;
};

CurveRig MakeSetup(const std::string& name) {
  CurveRig s;
  s.dir = AbsentDir(name);
  s.coordinator = *WriteCurveKeyPair(s.dir / "coordinator", "coordinator");
  s.allowed = *WriteCurveKeyPair(s.dir / "workers", "w1");
  s.stranger = *WriteCurveKeyPair(s.dir / "strangers", "w2");
  auto allow = ReadCurveAllowList(s.dir / "workers");
  EXPECT_TRUE(allow.ok()) << allow.status();
  ZmqRouterOptions options;
  options.curve = CurveServerOptions{*ReadCurveKeyFile(s.coordinator.secret_key), *allow};
  auto server = ZmqRouterTransport::Create("tcp://127.0.0.1:0", options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (server.ok()) s.server = *std::move(server);
  return s;
}

std::optional<Inbound> ReceiveWithin(Transport& t, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = t.Receive(RealClock().Now() + std::chrono::milliseconds(50));
    if (!r.ok()) return std::nullopt;
    if (r->has_value()) return *std::move(*r);
  }
  return std::nullopt;
}

TEST(WorkerCurveTest, AllowedWorkerIsHeardAndUnlistedWorkerIsNot) {
  CurveRig s = MakeSetup("surge_worker_curve");
  ASSERT_NE(s.server, nullptr);
  // First the stranger: it shows its key, is refused, and nothing arrives.
  WorkerProcess stranger(
      {"--connect", s.server->endpoint(), "--curve-secret-key", s.stranger.secret_key.string(),
       "--curve-server-key", s.coordinator.public_key.string()},
      s.dir / "stranger.log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s.server->zap_counts().refused == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(s.server->zap_counts().refused, 1u);
  EXPECT_FALSE(ReceiveWithin(*s.server, std::chrono::milliseconds(1000)).has_value());

  // Then the allowed worker: its Hello arrives, and it exits 2 on Reject.
  WorkerProcess allowed(
      {"--connect", s.server->endpoint(), "--curve-secret-key", s.allowed.secret_key.string(),
       "--curve-server-key", s.coordinator.public_key.string()},
      s.dir / "allowed.log");
  auto hello = ReceiveWithin(*s.server, std::chrono::seconds(10));
  ASSERT_TRUE(hello.has_value());
  EXPECT_TRUE(hello->message.has_hello());
  EXPECT_GT(hello->message.hello().pid(), 0u);
  surge::v1::Envelope reject;
  reject.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  reject.mutable_reject()->set_reason("test over");
  ASSERT_TRUE(s.server->Send(hello->peer, reject).ok());
  EXPECT_EQ(allowed.WaitExit(std::chrono::seconds(10)), 2) << allowed.Log();
  EXPECT_THAT(allowed.Log(), HasSubstr("rejected by the coordinator: test over"));
  // Every message that arrived came from the allowed worker.
  while (auto more = ReceiveWithin(*s.server, std::chrono::milliseconds(300))) {
    EXPECT_EQ(more->peer, hello->peer);
  }
  EXPECT_EQ(s.server->zap_counts().accepted, 1u);
}

// Waits (bounded) until `worker`'s log holds `text`; true when it did
// within `limit`.
bool LogShowsWithin(const WorkerProcess& worker, const std::string& text,
                    std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (worker.Log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The three common set-up mistakes name themselves within 5 s, while the
// worker keeps trying (its join timeout is 30 s): nothing listening at
// --connect, a --curve-server-key that is not the coordinator's (the
// coordinator's socket logs the failed handshake too), and a key missing
// from --curve-allow. Each says only its own cause.
TEST(WorkerCurveTest, EachSetUpMistakeIsNamedWithinFiveSeconds) {
  CurveRig s = MakeSetup("surge_worker_curve_mistakes");
  ASSERT_NE(s.server, nullptr);
  const std::string refused = "cannot connect to the coordinator";
  const std::string wrong_key = "reached the coordinator but the CurveZMQ handshake failed";
  const std::string not_allowed = "the coordinator refused this worker's CurveZMQ key";
  const std::chrono::seconds limit(5);
  {
    // A port that was just bound and closed again: nothing listens there.
    std::string closed;
    {
      auto probe = ZmqRouterTransport::Create("tcp://127.0.0.1:0");
      ASSERT_TRUE(probe.ok()) << probe.status();
      closed = (*probe)->endpoint();
    }
    WorkerProcess w({"--connect", closed, "--join-timeout", "30"}, s.dir / "refused.log");
    EXPECT_TRUE(LogShowsWithin(w, refused, limit)) << w.Log();
    EXPECT_EQ(w.Log().find(wrong_key), std::string::npos) << w.Log();
    EXPECT_EQ(w.WaitExit(std::chrono::milliseconds(0)), -1);  // still trying
  }
  {
    // The stranger's public key as the server key: the handshake fails.
    WorkerProcess w(
        {"--connect", s.server->endpoint(), "--join-timeout", "30", "--curve-secret-key",
         s.allowed.secret_key.string(), "--curve-server-key", s.stranger.public_key.string()},
        s.dir / "wrong_key.log");
    EXPECT_TRUE(LogShowsWithin(w, wrong_key, limit)) << w.Log();
    EXPECT_EQ(w.Log().find(refused), std::string::npos) << w.Log();
    EXPECT_EQ(w.Log().find(not_allowed), std::string::npos) << w.Log();
    EXPECT_FALSE(ReceiveWithin(*s.server, std::chrono::milliseconds(300)).has_value());
    EXPECT_EQ(w.WaitExit(std::chrono::milliseconds(0)), -1);
  }
  {
    WorkerProcess w(
        {"--connect", s.server->endpoint(), "--join-timeout", "30", "--curve-secret-key",
         s.stranger.secret_key.string(), "--curve-server-key", s.coordinator.public_key.string()},
        s.dir / "not_allowed.log");
    EXPECT_TRUE(LogShowsWithin(w, not_allowed, limit)) << w.Log();
    EXPECT_EQ(w.Log().find(wrong_key), std::string::npos) << w.Log();
    EXPECT_EQ(w.WaitExit(std::chrono::milliseconds(0)), -1);
  }
}

TEST(WorkerCurveTest, FlagRuleAndBadKeyFilesStopTheWorkerBeforeItConnects) {
  const fs::path dir = AbsentDir("surge_worker_curve_flags");
  const CurveKeyFiles keys = *WriteCurveKeyPair(dir, "w");
  // Non-loopback without keys: refused by the rule, nothing is connected.
  Result r = RunSurge("worker --connect tcp://0.0.0.0:5555", 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--connect tcp://0.0.0.0:5555 is not a loopback address"));
  EXPECT_THAT(r.output, HasSubstr("--curve-secret-key FILE and --curve-server-key FILE"));
  r = RunSurge("worker --connect tcp://127.0.0.1:9 --curve-secret-key " + keys.secret_key.string(),
               20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--curve-secret-key and --curve-server-key go together"));
  r = RunSurge("worker --connect tcp://127.0.0.1:9 --curve-secret-key " + (dir / "nope").string() +
                   " --curve-server-key " + keys.public_key.string(),
               20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--curve-secret-key: cannot read the key file"));
  std::ofstream(dir / "bad.pub") << "not a key\n";
  r = RunSurge("worker --connect tcp://127.0.0.1:9 --curve-secret-key " + keys.secret_key.string() +
                   " --curve-server-key " + (dir / "bad.pub").string(),
               20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--curve-server-key: the key file"));
  EXPECT_THAT(r.output, HasSubstr("bad.pub does not hold one CurveZMQ key"));
}

}  // namespace
}  // namespace surge::testing
