#include "app/run_command.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "app/exit_codes.h"
#include "app/run_job.h"
#include "common/cpu_budget.h"
#include "common/fd_limit.h"
#include "common/log.h"
#include "coordinator/plan/arrival_process.h"
#include "coordinator/plan/traffic_classes.h"

namespace surge::app {
namespace {

using coordinator::DispatcherOptions;
using coordinator::LocalProcessPool;
using coordinator::WorkerPool;
using surge::v1::RunConfig;

// `surge run`'s workers: processes of this binary on this machine.
class LocalWorkers : public WorkerSide {
 public:
  LocalWorkers(const std::string& self_exe, const RunTestOptions& test)
      : self_exe_(self_exe), test_(test) {}

  absl::Status Check(const RunConfig&) override { return absl::OkStatus(); }
  std::string bind() const override { return "tcp://127.0.0.1:0"; }
  ZmqRouterOptions transport_options() const override { return {}; }
  void OnBuiltInServer() const override {}

  // Chosen from the usable CPUs and the plan's peak rate by default
  // (common/cpu_budget.h); never more than the concurrency cap, which is
  // split over them (R-REQ-2). Far more processes than cores starve each
  // other (and their heartbeats); more workers than requests have nothing
  // to do.
  int Workers(const RunConfig& config) const override {
    int workers = config.workers() > 0 ? static_cast<int>(config.workers()) : AutoWorkers(config);
    if (config.workers() > 0) {
      const std::string warning = OversubscribedWarning(workers, BudgetFrom(ReadCpuSources()));
      if (!warning.empty()) LogWarning(warning);
    }
    if (config.max_concurrency() > 0) {
      workers = static_cast<int>(std::min<uint64_t>(workers, config.max_concurrency()));
    }
    if (config.workers_force()) return workers;
    const int cap = MaxUsefulWorkers(std::thread::hardware_concurrency(), config.num_prompts());
    if (workers <= cap) return workers;
    LogWarning(absl::StrCat(
        "--workers ", workers, " capped at ", cap, " (at most ", kWorkersPerCore, " per core on ",
        std::max(1u, std::thread::hardware_concurrency()), " cores, and no more than the ",
        config.num_prompts(), " requests); --workers-force keeps ", workers));
    return cap;
  }

  // `--workers 0` (the default): what the CPUs hold and the plan's peak
  // needs, said in one INFO line (and a WARNING when the peak needs more).
  static int AutoWorkers(const RunConfig& config) {
    // With traffic classes the peak is the sum of the classes' peaks.
    double peak_rps = 0;
    for (int c = 0; c < std::max(1, config.classes_size()); ++c) {
      const coordinator::ResolvedTraffic traffic = coordinator::ResolveTraffic(
          config.classes_size() > 0 ? coordinator::ClassRunConfig(config, c) : config);
      if (traffic.instant) {
        peak_rps = 0;  // instant mode: as many as the CPUs allow
        break;
      }
      peak_rps += traffic.target_rate_rps;
    }
    const WorkerChoice choice = ChooseWorkers(BudgetFrom(ReadCpuSources()), peak_rps);
    LogInfo(choice.reason);
    if (!choice.warning.empty()) LogWarning(choice.warning);
    return choice.workers;
  }

  // The planned connections must fit the open-file limit (raised to the
  // hard limit at start, app/main.cc): local workers share this process's
  // limit.
  absl::Status CheckFits(const RunConfig& config, int workers,
                         bool built_in_server) const override {
    auto limit = RaiseOpenFileLimit();
    if (!limit.ok()) return absl::OkStatus();
    return CheckConnectionsFit(config.max_concurrency(), static_cast<uint64_t>(workers),
                               built_in_server, *limit);
  }

  std::unique_ptr<WorkerPool> MakePool(Clock& clock, const RunConfig& config, int workers,
                                       const std::string&, SimServerProcess* sim,
                                       DispatcherOptions* options) const override {
    // The lateness alarm names "more workers than CPUs" when it is that.
    options->lateness.local_workers = workers;
    options->lateness.usable_cpus = BudgetFrom(ReadCpuSources()).usable_cpus;
    auto local = std::make_unique<LocalProcessPool>(clock, self_exe_);
    std::vector<std::vector<std::string>> extra_args(workers);
    if (test_.worker0_clock_offset_ms != 0 || test_.worker0_clock_drift_ppm != 0) {
      extra_args[0] = {"--simulate-clock-offset-ms", absl::StrCat(test_.worker0_clock_offset_ms),
                       "--simulate-clock-drift-ppm", absl::StrCat(test_.worker0_clock_drift_ppm)};
    }
    const std::vector<bool> pacer_cpu_used = AddPacerArgs(config, workers, &extra_args);
    local->SetExtraArgs(std::move(extra_args));
    if (sim && config.has_pacer_cpu()) KeepServerOffPacers(pacer_cpu_used, workers, *sim);
    return local;
  }

 private:
  // The pacer threads' scheduling (docs/PERFORMANCE.md "Pacer thread"):
  // worker k's pacer on CPU (pacer_cpu + k) mod cpus, and SCHED_FIFO when
  // asked. Returns which CPUs the pacers use.
  static std::vector<bool> AddPacerArgs(const RunConfig& config, int workers,
                                        std::vector<std::vector<std::string>>* extra_args) {
    const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<bool> pacer_cpu_used(cpus, false);
    for (int k = 0; k < workers; ++k) {
      std::vector<std::string>& args = (*extra_args)[k];
      if (config.has_pacer_cpu()) {
        const int cpu = static_cast<int>((config.pacer_cpu() + k) % cpus);
        pacer_cpu_used[cpu] = true;
        args.insert(args.end(), {"--pacer-cpu", absl::StrCat(cpu)});
      }
      if (config.pacer_realtime()) args.push_back("--pacer-realtime");
    }
    return pacer_cpu_used;
  }

  // The built-in server is kept off the pacers' CPUs (when any is left).
  static void KeepServerOffPacers(const std::vector<bool>& pacer_cpu_used, int workers,
                                  SimServerProcess& sim) {
    const int cpus = static_cast<int>(pacer_cpu_used.size());
    std::vector<int> others;
    for (int cpu = 0; cpu < cpus; ++cpu) {
      if (!pacer_cpu_used[cpu]) others.push_back(cpu);
    }
    if (others.empty()) {
      LogWarning(absl::StrCat("--pacer-cpu: the ", workers, " pacers use every CPU (", cpus,
                              "); the built-in server shares them"));
    } else if (absl::Status s = sim.KeepOnCpus(others); !s.ok()) {
      LogWarning(absl::StrCat("the built-in server could not be kept off the pacers' CPUs: ",
                              s.message()));
    } else {
      LogInfo(absl::StrCat("built-in server on CPUs ", absl::StrJoin(others, ","),
                           ", off the pacers' CPUs"));
    }
  }

  const std::string self_exe_;
  const RunTestOptions test_;
};

}  // namespace

int RunCommand(const RunConfig& config, const std::string& self_exe, const RunTestOptions& test,
               const std::string& plan_file) {
  LocalWorkers workers(self_exe, test);
  return ExitWith(RunJob(config, self_exe, workers, plan_file));
}

absl::Status RunLocally(const RunConfig& config, const std::string& self_exe,
                        RunJobResult* result) {
  LocalWorkers workers(self_exe, RunTestOptions{});
  return RunJob(config, self_exe, workers, "", result);
}

}  // namespace surge::app
