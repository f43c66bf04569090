// `surge coordinator` (R-DIST-1): the job of `surge run`, but its workers are
// started elsewhere (`surge worker --connect`) and join.
#ifndef SURGE_APP_COORDINATOR_COMMAND_H_
#define SURGE_APP_COORDINATOR_COMMAND_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/zmq_transport.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/roles.pb.h"

namespace surge::app {

// The workers' heartbeat period (Welcome.heartbeat_ms), ms.
inline constexpr uint32_t kHeartbeatPeriodMs = 250;

// The liveness pair: --worker-silence-ms must be at least --worker-lease-ms
// + one heartbeat period, so that a worker declared dead has stopped
// releasing (its lease ended) before its requests go to another worker.
// Error (INVALID_ARGUMENT) naming both flags.
absl::Status CheckLiveness(const surge::v1::CoordinatorRoleConfig& role);

// The coordinator role's rules beyond each flag's own bounds (checked by
// the option table): the concurrency cap against the workers, the
// liveness pair (CheckLiveness), the bind rule and the key files. Errors
// name the flags (exit 2 for the caller).
absl::StatusOr<ZmqRouterOptions> CoordinatorTransportOptions(
    const surge::v1::CoordinatorRoleConfig& role, const surge::v1::RunConfig& config);

// `surge coordinator`: the job of `surge run` (RunJob) with workers that
// join from elsewhere: no local workers, no cap by this machine's cores.
// Errors in the role's flags exit 2, a join timeout exits 1; otherwise as
// RunCommand (`plan_file`: exact replay). Returns the exit code.
int CoordinatorCommand(const surge::v1::RunConfig& config, const std::string& self_exe,
                       const surge::v1::CoordinatorRoleConfig& role, const std::string& plan_file);

}  // namespace surge::app

#endif  // SURGE_APP_COORDINATOR_COMMAND_H_
