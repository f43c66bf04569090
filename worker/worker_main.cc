#include "worker/worker_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/model_lister.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/role_options.h"
#include "common/skewed_clock.h"
#include "common/time_units.h"
#include "common/zmq_transport.h"
#include "worker/http/beast_request_sender.h"
#include "worker/worker_session.h"

namespace surge::worker {
namespace {

// The stop signals this process received (lock-free atomics: safe in a
// signal handler).
StopSignals g_stop_signals;

void OnStopSignal(int signal) {
  int none = 0;
  g_stop_signals.first.compare_exchange_strong(none, signal);
  g_stop_signals.count.fetch_add(1);
}

}  // namespace

int WorkerCommand(const surge::v1::WorkerRoleConfig& args) {
  if (args.parent_pid() > 0) {
    // R-DIST-7 for local workers: die with the coordinator within
    // milliseconds, and do not start at all if it is already gone.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != args.parent_pid()) return kExitCoordinatorLost;
  }
  // A worker of `surge run` ignores Ctrl-C: it reaches the whole process
  // group, and the coordinator alone decides how that run stops. A
  // standalone worker leaves cleanly on Ctrl-C, and every worker on SIGTERM
  // (`docker stop`, a pod eviction): see WorkerSessionOptions.stop_signals.
  signal(SIGINT, args.parent_pid() > 0 ? SIG_IGN : OnStopSignal);
  signal(SIGTERM, OnStopSignal);
  signal(SIGPIPE, SIG_IGN);
  SetLogTag(absl::StrFormat("worker %d", args.worker_index()));
  std::mt19937_64 rng(std::random_device{}());
  WorkerSessionOptions options;
  options.requested_index = args.worker_index();
  options.incarnation = rng();
  options.hello_timeout = JoinTimeoutMs(args.join_timeout_s());
  if (absl::Status s =
          CheckConnectSecurity({args.connect(), args.curve_secret_key_file(),
                                args.curve_server_key_file(), args.insecure_transport()});
      !s.ok()) {
    LogError(std::string(s.message()));
    return kExitRejected;
  }
  ZmqDealerOptions transport_options;
  if (!args.curve_secret_key_file().empty()) {
    auto secret = ReadKeyFlag("--curve-secret-key", args.curve_secret_key_file());
    auto server = ReadKeyFlag("--curve-server-key", args.curve_server_key_file());
    for (const auto* key : {&secret, &server}) {
      if (!key->ok()) {
        LogError(std::string(key->status().message()));
        return kExitRejected;
      }
    }
    transport_options.curve = CurveClientOptions{*secret, *server};
  }
  // Everything in this worker reads time through `clock`, its transport's
  // receive deadlines too: with the test options a skewed copy of the
  // host's, so the coordinator sees a worker whose clock is offset and
  // drifting (R-DIST-4).
  std::unique_ptr<SkewedClock> skewed;
  if (args.simulate_clock_offset_ms() != 0 || args.simulate_clock_drift_ppm() != 0) {
    skewed = std::make_unique<SkewedClock>(RealClock(),
                                           SecondsToNanos(args.simulate_clock_offset_ms() / 1e3),
                                           args.simulate_clock_drift_ppm());
  }
  Clock* clock = skewed != nullptr ? skewed.get() : &RealClock();
  auto transport = ZmqDealerTransport::Create(
      args.connect(), absl::StrFormat("w%d-%016x", args.worker_index(), options.incarnation),
      transport_options, *clock);
  if (!transport.ok()) {
    LogError(transport.status().ToString());
    return kExitRejected;
  }
  if (args.parent_pid() == 0) {
    LogInfo(absl::StrFormat("connecting to %s; giving up after %d s without an answer",
                            args.connect(),
                            static_cast<int>(options.hello_timeout.count() / 1000)));
  }
  if (skewed != nullptr) {
    LogWarning(absl::StrFormat("test option: simulated clock %+.3f ms, %+.3f ppm",
                               args.simulate_clock_offset_ms(), args.simulate_clock_drift_ppm()));
    // The truth beside each estimate: on one host the base clock is the
    // coordinator's, so skewed − base at the estimate's instant is exact.
    options.describe_simulated_clock =
        [s = skewed.get(), ppm = args.simulate_clock_drift_ppm()](surge::v1::ClockReport& r) {
          r.set_simulated(true);
          r.set_simulated_offset_ns(s->TrueOffsetAt(r.ref_coord_ns()));
          r.set_simulated_drift_ppm(ppm);
        };
  }
  // A child of `surge run` (checked above: its parent is --parent-pid) reads
  // the coordinator's own steady clock: offset 0 is exact, the estimate is
  // not (docs/DESIGN.md "Shared clock").
  options.same_clock = args.parent_pid() > 0 && skewed == nullptr;
  options.stop_signals = &g_stop_signals;
  options.pacer.cpu = args.pacer_cpu();
  options.pacer.realtime = args.pacer_realtime();
  // A standalone worker may be on a host that cannot reach the target: it
  // checks from here (a connection and GET /v1/models, whatever it answers)
  // and tells the
  // coordinator, which does not start the run without it.
  if (args.parent_pid() == 0) {
    options.check_target = [](const surge::v1::Welcome& welcome) {
      return client::CheckTargetConnects(welcome.target(), std::chrono::milliseconds(3000));
    };
  }
  WorkerSession session(
      *clock, **transport,
      [clock](const surge::v1::Welcome& welcome) -> absl::StatusOr<std::unique_ptr<RequestSender>> {
        std::optional<std::string> api_key;
        if (!welcome.api_key().empty()) {
          api_key = welcome.api_key();
          LogInfo("API key: the one the coordinator handed over (its own files are not read)");
        }
        auto sender =
            BeastRequestSender::Create(*clock, welcome.target(), 1, {}, api_key, WarmPoolOptions{});
        if (!sender.ok()) return sender.status();
        return std::unique_ptr<RequestSender>(*std::move(sender));
      },
      options);
  return session.Run();
}

}  // namespace surge::worker
