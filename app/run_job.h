// The job of `surge run` and `surge coordinator`, one sequence for both:
// check the configuration, start the live metrics and the built-in server,
// resolve the model and the workers, prepare the plan and its folder, send
// it, and write the results. Where the workers come from is the one thing
// that differs (WorkerSide): started here (`surge run`) or joining from
// elsewhere (`surge coordinator`).
#ifndef SURGE_APP_RUN_JOB_H_
#define SURGE_APP_RUN_JOB_H_

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "app/sim_server_process.h"
#include "common/clock.h"
#include "common/zmq_transport.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/dispatch/worker_pool.h"
#include "surge/v1/config.pb.h"

namespace surge::app {

// Where a run's workers come from.
class WorkerSide {
 public:
  virtual ~WorkerSide() = default;
  // Checks this side's own options against the configuration, before
  // anything starts. Errors: INVALID_ARGUMENT naming the flag.
  virtual absl::Status Check(const surge::v1::RunConfig& config) = 0;
  // The endpoint the coordinator binds, and its transport's options.
  virtual std::string bind() const = 0;
  virtual ZmqRouterOptions transport_options() const = 0;
  // Called once the built-in server serves the run (on 127.0.0.1).
  virtual void OnBuiltInServer() const = 0;
  // The number of workers for `config` (any cap said in the log).
  virtual int Workers(const surge::v1::RunConfig& config) const = 0;
  // Checks that the planned connections fit this machine once the worker
  // count is known. Errors: INVALID_ARGUMENT.
  virtual absl::Status CheckFits(const surge::v1::RunConfig& config, int workers,
                                 bool built_in_server) const = 0;
  // The pool of `workers` for the transport bound at `endpoint`; may adjust
  // the dispatcher's options (how long to wait for the workers). `sim` is
  // the built-in server, or null.
  virtual std::unique_ptr<coordinator::WorkerPool> MakePool(
      Clock& clock, const surge::v1::RunConfig& config, int workers, const std::string& endpoint,
      SimServerProcess* sim, coordinator::DispatcherOptions* options) const = 0;
};

// Runs the whole job with `workers`; `self_exe` is the surge binary (for the
// built-in server and local workers); `plan_file` non-empty = exact replay
// (see RunCommand). Installs the SIGINT/SIGTERM handlers that drain the run.
// Returns OK when the run completed; else the status whose ExitCodeFor is
// the documented exit code (the files are written first whenever anything
// was sent): INVALID_ARGUMENT for configuration errors, ABORTED when
// --stop-on-alarm stopped it, InterruptedStatus after a signal, another code
// for runtime failures (target unreachable, a request lost, ...).
// Where the run wrote its files: the run folder and the dataset stem of its
// file names; empty when it stopped before the folder existed.
struct RunJobResult {
  std::filesystem::path folder;
  std::string dataset;
};
absl::Status RunJob(const surge::v1::RunConfig& config, const std::string& self_exe,
                    WorkerSide& workers, const std::string& plan_file,
                    RunJobResult* result = nullptr);

}  // namespace surge::app

#endif  // SURGE_APP_RUN_JOB_H_
