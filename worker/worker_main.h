// `surge worker`: the process a local or remote worker runs.
#ifndef SURGE_WORKER_WORKER_MAIN_H_
#define SURGE_WORKER_WORKER_MAIN_H_

#include "surge/v1/roles.pb.h"

namespace surge::worker {

// Runs one worker with the options of `args` (their bounds already checked
// by the option table) to the end; returns the exit code (worker_session.h):
// kExitRejected (2) also for security flags that break the rule of
// CheckConnectSecurity (common/zmq_transport.h) or unreadable key files.
int WorkerCommand(const surge::v1::WorkerRoleConfig& args);

}  // namespace surge::worker

#endif  // SURGE_WORKER_WORKER_MAIN_H_
