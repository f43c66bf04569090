// `surge sim-server`: the simulated OpenAI-compatible server until Ctrl-C or
// SIGTERM (or, as `surge run`'s built-in server, until its parent is gone).
#ifndef SURGE_APP_SIM_SERVER_COMMAND_H_
#define SURGE_APP_SIM_SERVER_COMMAND_H_

#include "surge/v1/config.pb.h"

namespace surge::app {

// Serves `config` (every field as given: the flags over the table's
// defaults) until stopped. With `parent_pid` > 0 (started by
// `surge run`): dies with that process and ignores Ctrl-C. Returns 0; 2 for
// bad option values; 1 when the server cannot start (e.g. a busy port).
int SimServerCommand(const surge::v1::SimServerConfig& config, int parent_pid);

}  // namespace surge::app

#endif  // SURGE_APP_SIM_SERVER_COMMAND_H_
