// The `surge` executable: parses the command line and hands over to one
// command (run, plan, coordinator, report, compare, keygen, worker,
// sim-server).
// Nothing else lives here.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "app/compare_command.h"
#include "app/coordinator_command.h"
#include "app/exit_codes.h"
#include "app/keygen.h"
#include "app/plan_command.h"
#include "app/prepare.h"
#include "app/report_command.h"
#include "app/run_command.h"
#include "app/run_options.h"
#include "app/sim_server_command.h"
#include "app/sweep_command.h"
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

// Every command's flags, declared on one CLI::App before the parse and read
// after it. Not movable: CLI11 keeps pointers to the members.
struct CommandLine {
  CLI::App app{
      "surge: a load generator for LLM inference services that sends every request on a "
      "controlled schedule (bursty, ramping) from many workers on one clock, and shows the "
      "intended and the actual sending rate."};
  CLI::App* run = nullptr;
  CLI::App* coordinator = nullptr;
  CLI::App* plan = nullptr;
  CLI::App* sweep = nullptr;
  CLI::App* report = nullptr;
  CLI::App* compare = nullptr;
  CLI::App* keygen = nullptr;
  CLI::App* worker = nullptr;
  CLI::App* sim = nullptr;
  // The job commands (run, coordinator, plan): RunConfig's options each.
  surge::app::RunOptions run_options;
  surge::app::RunOptions coordinator_options;
  surge::app::RunOptions plan_options;
  surge::app::RunOptions sweep_options;
  surge::app::RunTestOptions run_test_options;
  std::string plan_file;
  // The role commands' own options (roles.proto) and the built-in server's
  // (SimServerConfig in config.proto).
  surge::app::TableFlags role_flags{surge::v1::CoordinatorRoleConfig::descriptor()};
  surge::app::TableFlags worker_flags{surge::v1::WorkerRoleConfig::descriptor()};
  surge::app::TableFlags sweep_flags{surge::v1::SweepConfig::descriptor()};
  surge::app::TableFlags sim_flags{surge::v1::SimServerConfig::descriptor()};
  int sim_parent_pid = 0;
  std::string report_folder;
  surge::app::CompareOptions compare_options;
  std::string keygen_out;
  std::string keygen_name = "surge";
};

constexpr const char* kPlanFileHelp =
    "Exact replay: send this {dataset}_plan.csv as written (same offsets, order, sizes and "
    "prompts); without --config the run_config.json beside it is the configuration.";

// `surge run`, `surge coordinator` and `surge plan`: the job options of
// RunConfig's table, and for the coordinator its role's table beside them.
void DeclareJobCommands(CommandLine& c) {
  c.run = c.app.add_subcommand(
      "run", "Run the whole job on this machine (built-in simulated server when no --base-url).");
  c.run_options.Register(*c.run);
  // Test only (hidden): worker 0 of `surge run` runs on a skewed clock.
  c.run->add_option("--simulate-clock-offset-ms", c.run_test_options.worker0_clock_offset_ms)
      ->group("");
  c.run->add_option("--simulate-clock-drift-ppm", c.run_test_options.worker0_clock_drift_ppm)
      ->group("");
  // Exact replay (docs/REPLAY.md): send a saved plan as it is.
  c.run->add_option("--plan-file", c.plan_file, kPlanFileHelp);

  c.coordinator = c.app.add_subcommand(
      "coordinator",
      "Run the job as a coordinator: bind, wait for --expect-workers workers started with "
      "`surge worker --connect`, then pace them on one measured clock.");
  c.coordinator_options.Register(*c.coordinator);
  c.role_flags.Register(*c.coordinator);
  c.coordinator_options.AcceptAlso(c.role_flags.Names());
  c.coordinator->add_option("--plan-file", c.plan_file, kPlanFileHelp);

  c.plan = c.app.add_subcommand("plan", "Compute and plot the schedule; send nothing.");
  c.plan_options.Register(*c.plan);

  c.sweep = c.app.add_subcommand(
      "sweep",
      "Run the job at several rates (or search the highest rate within --goodput), each point a "
      "complete run certified by its own schedule; sweep.json, sweep.csv and sweep.html.");
  c.sweep_options.Register(*c.sweep);
  c.sweep_flags.Register(*c.sweep);
  c.sweep_options.AcceptAlso(c.sweep_flags.Names());
}

// `surge compare A B` (docs/COMPARE.md).
void DeclareCompareCommand(CommandLine& c) {
  surge::app::CompareOptions& o = c.compare_options;
  c.compare = c.app.add_subcommand(
      "compare",
      "Compare two runs of the same plan request by request (B − A): medians, p99s, the paired "
      "median difference with a bootstrap 95 % interval; no verdict unless both kept their "
      "schedule.");
  c.compare->add_option("a", o.a_folder, "Run folder A (.../performances/{model})")->required();
  c.compare->add_option("b", o.b_folder, "Run folder B, a run of the same plan")->required();
  c.compare->add_option("--output-dir", o.output_dir,
                        "Folder for compare.json and compare.html (default: "
                        "compare_<A stamp>_vs_<B stamp> beside A's timestamp folder)");
  c.compare
      ->add_option("--bootstrap-resamples", o.bootstrap_resamples,
                   "Bootstrap resamples of the pairs for the 95 % interval (default 2000)")
      ->check(CLI::Range(100, 100000));
  c.compare->add_option("--seed", o.seed, "Seed of the bootstrap's generator (default 0)");
  c.compare
      ->add_option("--min-pairs", o.min_pairs,
                   "Fewer requests ok in both runs than this: no verdict (default 30)")
      ->check(CLI::Range(1, 1000000000));
}

// `surge report`, `surge keygen`, `surge worker` and `surge sim-server`.
void DeclareToolCommands(CommandLine& c) {
  c.report = c.app.add_subcommand(
      "report", "Rebuild the summary and both pages of a run folder from its files.");
  c.report->add_option("folder", c.report_folder, "The run folder (.../performances/{model})")
      ->required();

  DeclareCompareCommand(c);

  c.keygen = c.app.add_subcommand(
      "keygen",
      "Write a CurveZMQ key pair (DIR/NAME.key secret, DIR/NAME.pub public) for a "
      "coordinator or worker on a non-loopback address (docs/SECURITY.md).");
  c.keygen->add_option("--out", c.keygen_out, "Directory for the key files (created, mode 0700)")
      ->required();
  c.keygen->add_option("--name", c.keygen_name,
                       "Base name of the two files (default surge); existing files are never "
                       "overwritten");

  c.worker = c.app.add_subcommand("worker", "Run one worker connected to a coordinator.");
  c.worker_flags.Register(*c.worker);

  c.sim = c.app.add_subcommand("sim-server",
                               "Run the simulated OpenAI-compatible server until Ctrl-C.");
  // The listen options (--host, --port, ...), then timing and fault
  // injection named as in a run's --sim-* flags without the prefix.
  c.sim_flags.Register(*c.sim);
  c.sim
      ->add_option("--parent-pid", c.sim_parent_pid,
                   "Exit when this process (surge run, which started it) is gone; ignore Ctrl-C")
      ->group("");
}

// Parses the command line; returns the exit code when that is all there is
// to do (help, version, a flag CLI11 refuses), else nothing.
std::optional<int> Parse(CommandLine& c, int argc, char** argv) {
  try {
    c.app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return c.app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return c.app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    // `surge --version` prints the version and succeeds (exit 0).
    return c.app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Unknown or malformed flags are configuration errors (R-CFG-1).
    c.app.exit(e);
    return surge::app::kExitConfigError;
  }
  return std::nullopt;
}

// Resolves the job command's configuration (and the coordinator's role)
// and starts it.
int StartJobCommand(CommandLine& c, const std::string& self_exe) {
  auto& options = *c.run     ? c.run_options
                  : *c.plan  ? c.plan_options
                  : *c.sweep ? c.sweep_options
                             : c.coordinator_options;
  // Exact replay: the plan's own run_config.json unless --config is given.
  // (When there is none, RunCommand says so.)
  if (!c.plan_file.empty()) {
    const std::string saved = surge::app::PlanConfigPath(c.plan_file);
    if (access(saved.c_str(), R_OK) == 0) options.UseConfigFileIfNone(saved);
  }
  // A resumed sweep: the run options it saved, unless --config is given.
  surge::v1::SweepConfig sweep;
  const absl::Status sweep_status = *c.sweep ? c.sweep_flags.Resolve(&sweep) : absl::OkStatus();
  if (sweep_status.ok() && !sweep.resume().empty()) {
    const std::string saved = sweep.resume() + "/run_config.json";
    if (access(saved.c_str(), R_OK) == 0) options.UseConfigFileIfNone(saved);
  }
  auto config = options.Resolve();
  // The coordinator's role options are checked with its job options: one
  // list of problems.
  surge::v1::CoordinatorRoleConfig role;
  const absl::Status role_status = *c.coordinator ? c.role_flags.Resolve(&role) : absl::OkStatus();
  if (!config.ok() || !role_status.ok() || !sweep_status.ok()) {
    std::cerr << "surge: "
              << surge::app::JoinProblems({config.status(), role_status, sweep_status}).message()
              << "\n";
    return surge::app::kExitConfigError;
  }
  for (const std::string& note : options.notes()) surge::LogInfo(note);
  if (*c.plan) return surge::app::PlanCommand(*config);
  if (*c.sweep) return surge::app::SweepCommand(*config, sweep, self_exe);
  if (*c.coordinator) return surge::app::CoordinatorCommand(*config, self_exe, role, c.plan_file);
  return surge::app::RunCommand(*config, self_exe, c.run_test_options, c.plan_file);
}

// Resolves the options of the table `flags` into `message`; prints the
// problems and returns false when there are any.
bool ResolveTable(const surge::app::TableFlags& flags, const char* command,
                  google::protobuf::Message* message) {
  if (absl::Status s = flags.Resolve(message); !s.ok()) {
    std::cerr << "surge " << command << ": " << s.message() << "\n";
    return false;
  }
  return true;
}

int StartToolCommand(CommandLine& c) {
  if (*c.report) return surge::app::ReportCommand(c.report_folder);
  if (*c.compare) return surge::app::CompareCommand(c.compare_options);
  if (*c.keygen) return surge::app::KeygenCommand(c.keygen_out, c.keygen_name);
  if (*c.worker) {
    surge::v1::WorkerRoleConfig worker;
    if (!ResolveTable(c.worker_flags, "worker", &worker)) return surge::app::kExitConfigError;
    return surge::worker::WorkerCommand(worker);
  }
  if (*c.sim) {
    surge::v1::SimServerConfig sim;
    if (!ResolveTable(c.sim_flags, "sim-server", &sim)) return surge::app::kExitConfigError;
    return surge::app::SimServerCommand(sim, c.sim_parent_pid);
  }
  return surge::app::kExitConfigError;
}

}  // namespace

int Main(int argc, char** argv) {
  CommandLine c;
  c.app.set_version_flag("--version", std::string("surge ") + surge::kSurgeVersion);
  c.app.require_subcommand(1);
  DeclareJobCommands(c);
  DeclareToolCommands(c);
  if (std::optional<int> done = Parse(c, argc, argv)) return *done;
  if (*c.run || *c.plan || *c.coordinator || *c.sweep) return StartJobCommand(c, SelfExe(argv[0]));
  return StartToolCommand(c);
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
