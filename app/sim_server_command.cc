#include "app/sim_server_command.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>

#include "app/exit_codes.h"
#include "common/clock.h"
#include "common/log.h"
#include "simserver/sim_server.h"

namespace surge::app {
namespace {

std::atomic<bool> g_stop_sim{false};

}  // namespace

int SimServerCommand(const surge::v1::SimServerConfig& config, int parent_pid) {
  if (parent_pid > 0) {
    // `surge run`'s built-in server (app/sim_server_process.h): dies with
    // the coordinator, and leaves Ctrl-C to it (it stops this one with
    // SIGTERM once its workers are done).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent_pid) return 1;
    signal(SIGINT, SIG_IGN);
    surge::SetLogTag("sim-server");
  } else {
    signal(SIGINT, [](int) { g_stop_sim.store(true); });
  }
  signal(SIGTERM, [](int) { g_stop_sim.store(true); });
  signal(SIGPIPE, SIG_IGN);
  auto server = surge::simserver::SimServer::Create(config);
  if (!server.ok()) {
    std::cerr << "surge sim-server: " << server.status().message() << "\n";
    // Bad option values are configuration errors (R-CFG-1); a busy port is not.
    return server.status().code() == absl::StatusCode::kInvalidArgument ? kExitConfigError : 1;
  }
  (*server)->Start();
  std::cout << "surge sim-server listening on "
            << (config.tls_cert_file().empty() ? "http://" : "https://") << config.address() << ":"
            << (*server)->port() << " (model " << config.model() << ")" << std::endl;
  surge::Clock& clock = surge::RealClock();
  while (!g_stop_sim.load()) {
    clock.SleepUntilCoarse(clock.Now() + std::chrono::milliseconds(50));
  }
  (*server)->Stop();
  std::cout << "surge sim-server stopped after " << (*server)->requests_served() << " requests"
            << std::endl;
  return 0;
}

}  // namespace surge::app
