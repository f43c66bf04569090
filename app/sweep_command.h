// `surge sweep` (docs/CAPACITY.md): a run per rate, each a complete run
// folder with the same seed and payloads, every point certified by its own
// schedule; or the SLO search for the highest rate within --goodput. Writes
// sweep.json, sweep.csv and sweep.html after every point.
#ifndef SURGE_APP_SWEEP_COMMAND_H_
#define SURGE_APP_SWEEP_COMMAND_H_

#include <string>

#include "surge/v1/config.pb.h"

namespace surge::app {

// Runs the sweep `sweep` of runs made from `config` (each point: its rate,
// its requests, its folder under the sweep folder, --stop-on-saturation and
// --stop-on-alarm on). With sweep.resume the sweep folder is that one and
// its finished points are kept. `self_exe` is the surge binary (built-in
// server, local workers). Returns the exit code: 0 when every point ran
// (whatever they measured), 2 for a configuration error (nothing sent),
// 130/143 when interrupted (a later --resume goes on), 1 when a point failed
// (e.g. the target became unreachable).
int SweepCommand(const surge::v1::RunConfig& config, const surge::v1::SweepConfig& sweep,
                 const std::string& self_exe);

}  // namespace surge::app

#endif  // SURGE_APP_SWEEP_COMMAND_H_
