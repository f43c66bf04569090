// The `surge` executable: parses the command line and hands over to one
// command (run, plan, report, keygen, worker, sim-server). Nothing else
// lives here.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "app/coordinator_command.h"
#include "app/exit_codes.h"
#include "app/keygen.h"
#include "app/plan_command.h"
#include "app/prepare.h"
#include "app/report_command.h"
#include "app/run_command.h"
#include "app/run_options.h"
#include "app/sim_server_command.h"
#include "common/fd_limit.h"
#include "common/log.h"
#include "common/version.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/roles.pb.h"
#include "worker/worker_main.h"

namespace {

std::string SelfExe(const char* argv0) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) return std::string(buf, static_cast<size_t>(n));
  return argv0;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{
      "surge: a load generator for LLM inference services that sends every request on a "
      "controlled schedule (bursty, ramping) from many workers on one clock, and shows the "
      "intended and the actual sending rate."};
  app.set_version_flag("--version", std::string("surge ") + surge::kSurgeVersion);
  app.require_subcommand(1);

  surge::app::RunOptions run_options;
  CLI::App* run = app.add_subcommand(
      "run", "Run the whole job on this machine (built-in simulated server when no --base-url).");
  run_options.Register(*run);
  // Test only (hidden): worker 0 of `surge run` runs on a skewed clock.
  surge::app::RunTestOptions run_test_options;
  run->add_option("--simulate-clock-offset-ms", run_test_options.worker0_clock_offset_ms)
      ->group("");
  run->add_option("--simulate-clock-drift-ppm", run_test_options.worker0_clock_drift_ppm)
      ->group("");
  // Exact replay (docs/REPLAY.md): send a saved plan as it is.
  std::string plan_file;
  constexpr const char* kPlanFileHelp =
      "Exact replay: send this {dataset}_plan.csv as written (same offsets, order, sizes and "
      "prompts); without --config the run_config.json beside it is the configuration.";
  run->add_option("--plan-file", plan_file, kPlanFileHelp);

  // The coordinator role: the job options of `surge run` (and its
  // --plan-file), and the role's own options (CoordinatorRoleConfig in
  // roles.proto) for workers that join from elsewhere.
  surge::app::RunOptions coordinator_options;
  CLI::App* coordinator = app.add_subcommand(
      "coordinator",
      "Run the job as a coordinator: bind, wait for --expect-workers workers started with "
      "`surge worker --connect`, then pace them on one measured clock.");
  coordinator_options.Register(*coordinator);
  surge::app::TableFlags role_flags(surge::v1::CoordinatorRoleConfig::descriptor());
  role_flags.Register(*coordinator);
  coordinator_options.AcceptAlso(role_flags.Names());
  coordinator->add_option("--plan-file", plan_file, kPlanFileHelp);

  surge::app::RunOptions plan_options;
  CLI::App* plan = app.add_subcommand("plan", "Compute and plot the schedule; send nothing.");
  plan_options.Register(*plan);

  std::string report_folder;
  CLI::App* report = app.add_subcommand(
      "report", "Rebuild the summary and both pages of a run folder from its files.");
  report->add_option("folder", report_folder, "The run folder (.../performances/{model})")
      ->required();

  std::string keygen_out;
  std::string keygen_name = "surge";
  CLI::App* keygen = app.add_subcommand(
      "keygen",
      "Write a CurveZMQ key pair (DIR/NAME.key secret, DIR/NAME.pub public) for a "
      "coordinator or worker on a non-loopback address (docs/SECURITY.md).");
  keygen->add_option("--out", keygen_out, "Directory for the key files (created, mode 0700)")
      ->required();
  keygen->add_option("--name", keygen_name,
                     "Base name of the two files (default surge); existing files are never "
                     "overwritten");

  // Its options: WorkerRoleConfig's table (roles.proto).
  CLI::App* worker = app.add_subcommand("worker", "Run one worker connected to a coordinator.");
  surge::app::TableFlags worker_flags(surge::v1::WorkerRoleConfig::descriptor());
  worker_flags.Register(*worker);

  CLI::App* sim =
      app.add_subcommand("sim-server", "Run the simulated OpenAI-compatible server until Ctrl-C.");
  // Its options: the flags of SimServerConfig's table (config.proto): the
  // listen options (--host, --port, ...), then timing and fault injection
  // named as there (--ttft-ms, --fault-429, ...).
  surge::app::TableFlags sim_flags(surge::v1::SimServerConfig::descriptor());
  sim_flags.Register(*sim);
  int sim_parent_pid = 0;
  sim->add_option("--parent-pid", sim_parent_pid,
                  "Exit when this process (surge run, which started it) is gone; ignore Ctrl-C")
      ->group("");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    // `surge --version` prints the version and succeeds (exit 0).
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Unknown or malformed flags are configuration errors (R-CFG-1).
    app.exit(e);
    return surge::app::kExitConfigError;
  }

  if (*run || *plan || *coordinator) {
    auto& options = *run ? run_options : *plan ? plan_options : coordinator_options;
    // Exact replay: the plan's own run_config.json unless --config is given.
    // (When there is none, RunCommand says so.)
    if (!plan_file.empty()) {
      const std::string saved = surge::app::PlanConfigPath(plan_file);
      if (access(saved.c_str(), R_OK) == 0) options.UseConfigFileIfNone(saved);
    }
    auto config = options.Resolve();
    // The coordinator's role options are checked with its job options: one
    // list of problems.
    surge::v1::CoordinatorRoleConfig role;
    const absl::Status role_status = *coordinator ? role_flags.Resolve(&role) : absl::OkStatus();
    if (!config.ok() || !role_status.ok()) {
      std::cerr << "surge: " << surge::app::JoinProblems({config.status(), role_status}).message()
                << "\n";
      return surge::app::kExitConfigError;
    }
    for (const std::string& note : options.notes()) surge::LogInfo(note);
    if (*plan) return surge::app::PlanCommand(*config);
    if (*coordinator) {
      return surge::app::CoordinatorCommand(*config, SelfExe(argv[0]), role, plan_file);
    }
    return surge::app::RunCommand(*config, SelfExe(argv[0]), run_test_options, plan_file);
  }
  if (*report) return surge::app::ReportCommand(report_folder);
  if (*keygen) return surge::app::KeygenCommand(keygen_out, keygen_name);
  if (*worker) {
    surge::v1::WorkerRoleConfig worker_config;
    if (absl::Status s = worker_flags.Resolve(&worker_config); !s.ok()) {
      std::cerr << "surge worker: " << s.message() << "\n";
      return surge::app::kExitConfigError;
    }
    return surge::worker::WorkerCommand(worker_config);
  }
  if (*sim) {
    surge::v1::SimServerConfig sim_config;
    if (absl::Status s = sim_flags.Resolve(&sim_config); !s.ok()) {
      std::cerr << "surge sim-server: " << s.message() << "\n";
      return surge::app::kExitConfigError;
    }
    return surge::app::SimServerCommand(sim_config, sim_parent_pid);
  }
  return surge::app::kExitConfigError;
}

int main(int argc, char** argv) {
  // Last line of defence: every expected failure is a Status with a clear
  // message; anything thrown past the modules still ends as one line and
  // exit 1 instead of an abort.
  try {
    // Connections are file descriptors; the soft limit (often 1024) goes up
    // to the hard one for every role.
    if (absl::StatusOr<surge::FileLimit> limit = surge::RaiseOpenFileLimit(); !limit.ok()) {
      surge::LogWarning(absl::StrCat("open-file limit unchanged: ", limit.status().message()));
    } else if (limit->now != limit->before) {
      surge::LogDebug(
          absl::StrCat("open-file limit raised from ", limit->before, " to ", limit->now));
    }
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "surge: internal error: " << e.what() << "\n";
    return 1;
  }
}
