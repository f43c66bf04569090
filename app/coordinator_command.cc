#include "app/coordinator_command.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "app/exit_codes.h"
#include "app/run_job.h"
#include "client/api_key.h"
#include "common/log.h"
#include "common/role_options.h"

namespace surge::app {

using coordinator::DispatcherOptions;
using coordinator::RemoteWorkerPool;
using coordinator::WorkerPool;
using surge::v1::CoordinatorRoleConfig;
using surge::v1::RunConfig;

absl::Status CheckLiveness(const CoordinatorRoleConfig& role) {
  // A worker releases nothing past its lease; declared dead only after its
  // lease has surely ended (plus one heartbeat period), none of its requests
  // handed to another worker can still be sent by it.
  if (role.worker_silence_ms() < role.worker_lease_ms() + kHeartbeatPeriodMs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--worker-silence-ms ", role.worker_silence_ms(), ": must be at least --worker-lease-ms (",
        role.worker_lease_ms(), ") + ", kHeartbeatPeriodMs,
        " ms, or a worker declared dead could still send requests given to another one"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ZmqRouterOptions> CoordinatorTransportOptions(const CoordinatorRoleConfig& role,
                                                             const RunConfig& config) {
  if (config.max_concurrency() > 0 && config.max_concurrency() < role.expect_workers()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-concurrency ", config.max_concurrency(), ": must be at least --expect-workers (",
        role.expect_workers(), "): the cap is split over the workers, each needs one slot"));
  }
  if (absl::Status s = CheckLiveness(role); !s.ok()) return s;
  if (absl::Status s = CheckBindSecurity({role.bind(), role.curve_secret_key_file(),
                                          role.curve_allow_dir(), role.insecure_transport()});
      !s.ok()) {
    return s;
  }
  ZmqRouterOptions options;
  if (!role.curve_secret_key_file().empty()) {
    auto secret = ReadKeyFlag("--curve-secret-key", role.curve_secret_key_file());
    if (!secret.ok()) return secret.status();
    auto allowed = ReadCurveAllowList(role.curve_allow_dir());
    if (!allowed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--curve-allow: ", allowed.status().message()));
    }
    options.curve = CurveServerOptions{*secret, *allowed};
  }
  return options;
}

namespace {

// `surge coordinator`'s workers: `surge worker --connect` processes
// anywhere, up to role.expect_workers of them.
class RemoteWorkers : public WorkerSide {
 public:
  explicit RemoteWorkers(const CoordinatorRoleConfig& role) : role_(role) {}

  absl::Status Check(const RunConfig& config) override {
    auto checked = CoordinatorTransportOptions(role_, config);
    if (!checked.ok()) return checked.status();
    transport_options_ = *std::move(checked);
    return absl::OkStatus();
  }
  std::string bind() const override { return role_.bind(); }
  ZmqRouterOptions transport_options() const override { return transport_options_; }

  void OnBuiltInServer() const override {
    if (IsLoopbackEndpoint(role_.bind())) return;
    LogWarning(
        absl::StrCat("the built-in server listens on 127.0.0.1 only: workers on other "
                     "machines cannot reach it; give --base-url for them"));
  }

  // The workers that join; their own machines' cores are theirs.
  int Workers(const RunConfig&) const override { return static_cast<int>(role_.expect_workers()); }
  // Remote workers check their own open-file limit (worker_session).
  absl::Status CheckFits(const RunConfig&, int, bool) const override { return absl::OkStatus(); }

  std::unique_ptr<WorkerPool> MakePool(Clock&, const RunConfig& config, int workers,
                                       const std::string& endpoint, SimServerProcess*,
                                       DispatcherOptions* options) const override {
    if (config.has_pacer_cpu() || config.pacer_realtime()) {
      LogWarning(
          "pacer_cpu / pacer_realtime apply to the workers `surge run` starts; give "
          "--pacer-cpu / --pacer-realtime to each `surge worker` instead");
    }
    HandOverApiKey(config, options);
    options->hello_timeout = JoinTimeoutMs(role_.join_timeout_s());
    options->lease_ms = role_.worker_lease_ms();
    options->dead_after = std::chrono::milliseconds(role_.worker_silence_ms());
    options->allow_unreachable_workers = role_.allow_unreachable_workers();
    // A wildcard bind is no address to connect to: name the host instead.
    std::string connect = endpoint;
    for (const char* any : {"tcp://0.0.0.0:", "tcp://*:", "tcp://[::]:"}) {
      if (absl::StartsWith(connect, any)) {
        connect = absl::StrCat("tcp://<this host's address>:", connect.substr(strlen(any)));
      }
    }
    LogInfo(absl::StrFormat(
        "coordinator on %s (%s): waiting up to %g s for %d workers: surge worker --connect %s",
        endpoint, transport_options_.curve ? "CurveZMQ" : "no CurveZMQ", role_.join_timeout_s(),
        workers, connect));
    return std::make_unique<RemoteWorkerPool>();
  }

 private:
  // How the API key reaches remote workers (docs/SECURITY.md): handed over
  // in each Welcome over CurveZMQ or a loopback bind (or over
  // --insecure-transport with --send-api-key-insecure), the key file path
  // then dropped from the workers' target; otherwise each worker uses its
  // own api_key_file or OPENAI_API_KEY, said once here.
  void HandOverApiKey(const RunConfig& config, DispatcherOptions* options) const {
    absl::StatusOr<std::string> key = client::LoadApiKey(config.target());
    if (!key.ok() || key->empty()) return;
    const bool protected_link =
        transport_options_.curve.has_value() || IsLoopbackEndpoint(role_.bind());
    if (!protected_link && !role_.send_api_key_insecure()) {
      LogWarning(
          "the API key is not handed to the workers over --insecure-transport (it would cross "
          "the network in clear): each worker sends its own --api-key-file (read on its "
          "machine) or OPENAI_API_KEY; --send-api-key-insecure hands it over anyway, CurveZMQ "
          "encrypts it");
      return;
    }
    options->worker_api_key = *std::move(key);
    options->target.clear_api_key_file();
    LogInfo(absl::StrCat("the API key goes to each worker in its Welcome (",
                         transport_options_.curve.has_value() ? "CurveZMQ-encrypted"
                         : IsLoopbackEndpoint(role_.bind())   ? "loopback link"
                                                              : "in clear: --send-api-key-insecure",
                         ")"));
  }

  const CoordinatorRoleConfig role_;
  ZmqRouterOptions transport_options_;
};

}  // namespace

int CoordinatorCommand(const RunConfig& config, const std::string& self_exe,
                       const CoordinatorRoleConfig& role, const std::string& plan_file) {
  RemoteWorkers workers(role);
  return ExitWith(RunJob(config, self_exe, workers, plan_file));
}

}  // namespace surge::app
