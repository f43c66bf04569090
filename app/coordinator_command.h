// `surge coordinator` (R-DIST-1): the job of `surge run`, but its workers are
// started elsewhere (`surge worker --connect`) and join.
#ifndef SURGE_APP_COORDINATOR_COMMAND_H_
#define SURGE_APP_COORDINATOR_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/zmq_transport.h"
#include "surge/v1/config.pb.h"

namespace surge::app {

// The coordinator role's options.
struct CoordinatorRole {
  // --bind, e.g. "tcp://0.0.0.0:5555". Required. A non-loopback address needs
  // CurveZMQ or --insecure (CheckBindSecurity, docs/SECURITY.md).
  std::string bind;
  // --expect-workers N (>= 1): the run starts when N workers are ready.
  int expect_workers = 0;
  // --join-timeout, seconds (default 60): without N ready workers by then,
  // the coordinator ends with exit 1 and sends nothing.
  double join_timeout_s = 60;
  // --curve-secret-key FILE, --curve-allow DIR, --insecure.
  std::string curve_secret_key_file;
  std::string curve_allow_dir;
  bool insecure = false;
};

// The coordinator role's flags: the bind rule and the key files. Errors name
// the flag (exit 2 for the caller).
absl::StatusOr<ZmqRouterOptions> CoordinatorTransportOptions(const CoordinatorRole& role,
                                                             const surge::v1::RunConfig& config);

// `surge coordinator`: RunCommand with `role`; errors in the role's flags
// exit 2, a join timeout exits 1.
int CoordinatorCommand(const surge::v1::RunConfig& config, const std::string& self_exe,
                       const CoordinatorRole& role, const std::string& plan_file);

}  // namespace surge::app

#endif  // SURGE_APP_COORDINATOR_COMMAND_H_
