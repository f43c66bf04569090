#include "app/run_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "app/exit_codes.h"
#include "app/prepare.h"
#include "app/run_results.h"
#include "app/sim_server_process.h"
#include "client/model_lister.h"
#include "common/clock.h"
#include "common/fd_limit.h"
#include "common/log.h"
#include "common/role_options.h"
#include "common/time_units.h"
#include "common/version.h"
#include "common/zmq_transport.h"
#include "coordinator/config/run_config.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/dispatch/worker_pool.h"
#include "coordinator/metrics_http/metrics_http_server.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/report/clock_summary.h"
#include "coordinator/report/run_context.h"
#include "coordinator/report/schedule_verdict.h"
#include "coordinator/results/details_json.h"
#include "coordinator/results/live_metrics.h"
#include "coordinator/results/progress.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"

namespace surge::app {

using coordinator::AssignPolicyKind;
using coordinator::ClockSyncJson;
using coordinator::DefaultRunConfig;
using coordinator::DetailsWriter;
using coordinator::DetailsWriterOptions;
using coordinator::Dispatcher;
using coordinator::DispatcherOptions;
using coordinator::DispatchProgress;
using coordinator::LiveMetrics;
using coordinator::LoadYamlConfig;
using coordinator::LocalProcessPool;
using coordinator::MetricsHttpServer;
using coordinator::PlanDefiningDifferences;
using coordinator::ProgressReporter;
using coordinator::RampStrategyTitle;
using coordinator::RecordFanOut;
using coordinator::RedactedUrl;
using coordinator::RemoteWorkerPool;
using coordinator::ScheduleJson;
using coordinator::SummaryAccumulator;
using coordinator::WorkerPool;
using coordinator::WriteTextFile;

namespace fs = std::filesystem;
using surge::v1::RunConfig;

std::string PlanConfigPath(const std::string& plan_file) {
  return (fs::path(plan_file).parent_path() / "run_config.json").string();
}

namespace {

std::atomic<bool> g_interrupted{false};
// The first stop signal (SIGINT or SIGTERM): the exit status is 128 + it.
std::atomic<int> g_stop_signal{0};
std::atomic<Dispatcher*> g_dispatcher{nullptr};

void OnSignal(int sig) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, sig);
  g_interrupted.store(true);
  if (Dispatcher* d = g_dispatcher.load()) d->RequestStop();
}

// 130 after SIGINT (Ctrl-C), 143 after SIGTERM: the shell's 128 + signal.
int InterruptedExitCode() {
  const int sig = g_stop_signal.load();
  return sig == SIGTERM ? kExitTerminated : kExitInterrupted;
}

// Exact replay: the configuration must make the same plan and payloads as
// the one the plan file was made with (its run_config.json). Errors:
// INVALID_ARGUMENT naming the file, or every differing key.
absl::Status CheckReplayConfig(const RunConfig& config, const fs::path& plan_file) {
  std::error_code ec;
  if (!fs::is_regular_file(plan_file, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan file ", plan_file.string(), ": ",
                     fs::exists(plan_file, ec) ? "is not a regular file" : "no such file",
                     " (flag --plan-file)"));
  }
  const fs::path saved_path = PlanConfigPath(plan_file.string());
  if (!fs::is_regular_file(saved_path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan file ", plan_file.string(), ": no run_config.json beside it (", saved_path.string(),
        "): exact replay rebuilds each request's prompt from the configuration the plan was "
        "made with (seed, dataset), so the plan must stay in its run folder (flag --plan-file)"));
  }
  RunConfig made_with = DefaultRunConfig();
  if (absl::Status s = LoadYamlConfig(saved_path.string(), &made_with); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan file's configuration ", saved_path.string(), ": ", s.message()));
  }
  RunConfig given = config;
  if (!given.dataset().dataset_path().empty()) {
    const fs::path full = fs::absolute(given.dataset().dataset_path(), ec);
    if (!ec) given.mutable_dataset()->set_dataset_path(full.lexically_normal().string());
  }
  const std::vector<std::string> differences = PlanDefiningDifferences(made_with, given);
  if (differences.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid configuration for --plan-file ", plan_file.string(),
      ": it would not send the same requests as the plan was made with (", saved_path.string(),
      "):\n  ", absl::StrJoin(differences, "\n  "),
      "\n  (leave these keys as saved; the target, workers, concurrency cap and late policy "
      "may differ)"));
}

}  // namespace

int RunCommand(const RunConfig& input_config, const std::string& self_exe,
               const RunTestOptions& test, const CoordinatorRole* role,
               const std::string& plan_file) {
  RunConfig config = input_config;
  if (!plan_file.empty()) {
    if (absl::Status s = CheckReplayConfig(config, plan_file); !s.ok()) {
      return Fail(s, kExitConfigError);
    }
  }
  ZmqRouterOptions transport_options;
  if (role != nullptr) {
    auto checked = CoordinatorTransportOptions(*role, config);
    if (!checked.ok()) return Fail(checked.status(), kExitConfigError);
    transport_options = *std::move(checked);
  }
  Clock& clock = RealClock();
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  // Issue 10 item 7: live metrics on --metrics-port, listening before
  // anything is started or created, so a port in use stops here.
  LiveMetrics live_metrics;
  std::unique_ptr<MetricsHttpServer> metrics_server;
  if (config.metrics_port() > 0) {
    const std::string host =
        config.metrics_host().empty() ? std::string("127.0.0.1") : config.metrics_host();
    auto server = MetricsHttpServer::Start(host, static_cast<uint16_t>(config.metrics_port()),
                                           [&live_metrics] { return live_metrics.Render(); });
    if (!server.ok()) {
      return Fail(
          absl::Status(server.status().code(),
                       absl::StrCat("--metrics-port ", config.metrics_port(), " (--metrics-host ",
                                    host, "): ", server.status().message(),
                                    "; choose another port, or 0 for no live metrics")),
          kExitConfigError);
    }
    metrics_server = *std::move(server);
    LogInfo(absl::StrCat("live metrics on http://", host, ":", metrics_server->port(),
                         "/metrics (docs/METRICS.md)"));
  }

  // R-UI-1: no target → the built-in simulated server, started and stopped
  // here, in a process of its own (issue 9 item 2: its threads are not the
  // coordinator's, docs/PERFORMANCE.md).
  std::unique_ptr<SimServerProcess> sim;
  if (config.target().base_url().empty()) {
    auto server =
        SimServerProcess::Start(clock, self_exe, BuiltInServerConfig(config.sim_server()));
    if (!server.ok()) return Fail(server.status(), kExitFailure);
    sim = *std::move(server);
    config.mutable_target()->set_base_url(absl::StrCat("http://127.0.0.1:", sim->port()));
    LogInfo(absl::StrCat("built-in simulated server on ", config.target().base_url(), " (TTFT ",
                         config.sim_server().ttft_ms(), " ms, ", config.sim_server().itl_ms(),
                         " ms per token; process ", sim->pid(), ")"));
    if (role != nullptr && !IsLoopbackEndpoint(role->bind)) {
      LogWarning(
          absl::StrCat("the built-in server listens on 127.0.0.1 only: workers on other "
                       "machines cannot reach it; give --base-url for them"));
    }
  }
  if (config.target().model().empty()) {
    auto model = surge::client::FetchFirstModel(config.target(), std::chrono::milliseconds(10000));
    if (!model.ok()) return Fail(model.status(), kExitFailure);
    config.mutable_target()->set_model(*model);
    LogInfo(absl::StrCat("model: ", *model, " (first listed at /v1/models)"));
  } else if (!sim) {
    // Pre-flight: a target that does not even accept a connection fails the
    // run now, not after N failed requests. Only connect/TLS failures count;
    // any HTTP answer (even 404 at /v1/models) is fine.
    if (absl::Status s =
            surge::client::CheckTargetConnects(config.target(), std::chrono::milliseconds(10000));
        !s.ok()) {
      return Fail(absl::UnavailableError(absl::StrCat(
                      s.message(), " (pre-flight check of --base-url; nothing was sent)")),
                  kExitFailure);
    }
  }

  // Workers: one per core by default; never more than the concurrency cap,
  // which is split over them (R-REQ-2). Resolved before run_config.json is
  // written, so the file holds the count actually used.
  int workers = 0;
  if (role != nullptr) {
    // The workers that join; their own machines' cores are theirs.
    workers = role->expect_workers;
  } else {
    workers = config.workers() > 0
                  ? static_cast<int>(config.workers())
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (config.max_concurrency() > 0) {
      workers = static_cast<int>(std::min<uint64_t>(workers, config.max_concurrency()));
    }
    // Far more processes than cores starve each other (and their heartbeats);
    // more workers than requests have nothing to do.
    if (!config.workers_force()) {
      const int cap = MaxUsefulWorkers(std::thread::hardware_concurrency(), config.num_prompts());
      if (workers > cap) {
        LogWarning(absl::StrCat("--workers ", workers, " capped at ", cap, " (at most ",
                                kWorkersPerCore, " per core on ",
                                std::max(1u, std::thread::hardware_concurrency()),
                                " cores, and no more than the ", config.num_prompts(),
                                " requests); --workers-force keeps ", workers));
        workers = cap;
      }
    }
  }
  config.set_workers(static_cast<uint32_t>(workers));
  // Issue 9 item 1: the planned connections must fit the open-file limit
  // (raised to the hard limit at start, app/main.cc). Local workers share
  // this process's limit; remote ones check their own (worker_session).
  if (role == nullptr) {
    auto limit = RaiseOpenFileLimit();
    if (limit.ok()) {
      if (absl::Status s = CheckConnectionsFit(
              config.max_concurrency(), static_cast<uint64_t>(workers), sim != nullptr, *limit);
          !s.ok()) {
        if (sim) sim->Stop();
        return Fail(s, kExitConfigError);
      }
    }
  }

  int code = kExitOk;
  // run_config.json: the resolved model and worker count, but not the
  // built-in server's port of this run (a replay starts its own).
  RunConfig saved = config;
  if (sim) saved.mutable_target()->clear_base_url();
  auto prepared = Prepare(config, config.target().model(), saved, &code, plan_file);
  if (!prepared.ok()) return Fail(prepared.status(), code);
  Prepared& p = *prepared;
  std::cout << "seed: " << config.seed() << "\nresults: " << p.folder.string() << std::endl;
  if (g_interrupted.load()) return InterruptedExitCode();

  DispatcherOptions options;
  if (config.max_concurrency() > 0) {
    for (int k = 0; k < workers; ++k) {
      options.max_inflight.push_back(
          static_cast<uint32_t>(config.max_concurrency() / workers +
                                (static_cast<uint64_t>(k) < config.max_concurrency() % workers)));
    }
  }
  options.num_workers = workers;
  options.assign = config.assign() == "least-loaded" ? AssignPolicyKind::kLeastLoaded
                                                     : AssignPolicyKind::kRoundRobin;
  options.abort_after_connect_failures = config.abort_after_connect_failures();
  // Issue 9 item 1: the lateness alarm (docs/DESIGN.md "Lateness alarm").
  options.lateness.threshold_ns = std::llround(config.lateness_alarm_ms() * 1e6);
  options.stop_on_alarm = config.stop_on_alarm();
  options.target = config.target();
  options.seed = config.seed();
  // Late-send policy (validated: "send", "skip" or "cap").
  options.late_policy = config.late_policy() == "skip"  ? surge::v1::LATE_POLICY_SKIP
                        : config.late_policy() == "cap" ? surge::v1::LATE_POLICY_CAP
                                                        : surge::v1::LATE_POLICY_SEND;
  options.late_threshold_ns = static_cast<int64_t>(std::llround(config.late_threshold_ms() * 1e6));
  options.catch_up_rps = config.catch_up_rps();
  std::mt19937_64 id_source(std::random_device{}());
  options.run_id = absl::StrFormat("%016x", id_source());

  auto transport = ZmqRouterTransport::Create(role != nullptr ? role->bind : "tcp://127.0.0.1:0",
                                              transport_options);
  if (!transport.ok()) return Fail(transport.status(), kExitFailure);
  // surge run: local worker processes; surge coordinator: workers that join.
  std::unique_ptr<WorkerPool> pool;
  if (role != nullptr) {
    pool = std::make_unique<RemoteWorkerPool>();
    if (config.has_pacer_cpu() || config.pacer_realtime()) {
      LogWarning(
          "pacer_cpu / pacer_realtime apply to the workers `surge run` starts; give "
          "--pacer-cpu / --pacer-realtime to each `surge worker` instead");
    }
    // Checked by CoordinatorTransportOptions.
    options.hello_timeout = *JoinTimeout(role->join_timeout_s);
    // A wildcard bind is no address to connect to: name the host instead.
    std::string connect = (*transport)->endpoint();
    for (const char* any : {"tcp://0.0.0.0:", "tcp://*:", "tcp://[::]:"}) {
      if (absl::StartsWith(connect, any)) {
        connect = absl::StrCat("tcp://<this host's address>:", connect.substr(strlen(any)));
      }
    }
    LogInfo(absl::StrFormat(
        "coordinator on %s (%s): waiting up to %g s for %d workers: surge worker --connect %s",
        (*transport)->endpoint(), transport_options.curve ? "CurveZMQ" : "no CurveZMQ",
        role->join_timeout_s, workers, connect));
  } else {
    auto local = std::make_unique<LocalProcessPool>(clock, self_exe);
    std::vector<std::vector<std::string>> extra_args(workers);
    if (test.worker0_clock_offset_ms != 0 || test.worker0_clock_drift_ppm != 0) {
      extra_args[0] = {"--simulate-clock-offset-ms", absl::StrCat(test.worker0_clock_offset_ms),
                       "--simulate-clock-drift-ppm", absl::StrCat(test.worker0_clock_drift_ppm)};
    }
    // Issue 9 item 2: the pacer threads' scheduling (docs/PERFORMANCE.md
    // "Pacer thread"); the built-in server is kept off the pacers' CPUs.
    const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<bool> pacer_cpu_used(cpus, false);
    for (int k = 0; k < workers; ++k) {
      if (config.has_pacer_cpu()) {
        const int cpu = static_cast<int>((config.pacer_cpu() + k) % cpus);
        pacer_cpu_used[cpu] = true;
        extra_args[k].insert(extra_args[k].end(), {"--pacer-cpu", absl::StrCat(cpu)});
      }
      if (config.pacer_realtime()) extra_args[k].push_back("--pacer-realtime");
    }
    local->SetExtraArgs(std::move(extra_args));
    if (sim && config.has_pacer_cpu()) {
      std::vector<int> others;
      for (int cpu = 0; cpu < cpus; ++cpu) {
        if (!pacer_cpu_used[cpu]) others.push_back(cpu);
      }
      if (others.empty()) {
        LogWarning(absl::StrCat("--pacer-cpu: the ", workers, " pacers use every CPU (", cpus,
                                "); the built-in server shares them"));
      } else if (absl::Status s = sim->KeepOnCpus(others); !s.ok()) {
        LogWarning(absl::StrCat("the built-in server could not be kept off the pacers' CPUs: ",
                                s.message()));
      } else {
        LogInfo(absl::StrCat("built-in server on CPUs ", absl::StrJoin(others, ","),
                             ", off the pacers' CPUs"));
      }
    }
    pool = std::move(local);
  }
  if (absl::Status s = pool->Start(workers, (*transport)->endpoint()); !s.ok()) {
    return Fail(s, kExitFailure);
  }

  ProgressReporter progress(stderr, isatty(fileno(stderr)) != 0);
  live_metrics.SetPlan(&p.plan);
  const bool live = metrics_server != nullptr;
  options.on_progress = [&progress, &live_metrics, live](const DispatchProgress& p) {
    progress.Update(p);
    if (live) live_metrics.OnProgress(p);
  };
  // The details file is formatted and written on the writer's own thread
  // (issue 9 item 3, docs/PERFORMANCE.md): the dispatcher's loop only
  // queues a copy of each record. Written within milliseconds; an
  // interrupted run writes everything before the summary (R-OUT-1).
  DetailsWriterOptions details_options;
  details_options.writer_thread = true;
  auto details = DetailsWriter::Create(p.folder / (p.dataset + "_details.jsonl"), details_options);
  if (!details.ok()) return Fail(details.status(), kExitFailure);
  // Each record goes to the details file, the summary and the actual
  // page's send list; none keeps the records themselves.
  SummaryAccumulator summary(&config.goodput());
  ActualPageInputs page(p.plan.size());
  RecordFanOut sinks({details->get(), &summary, &page, &progress});
  if (live) sinks.Attach(&live_metrics);
  Dispatcher dispatcher(
      clock, **transport, p.plan, *p.payloads, options,
      [&sinks](const surge::v1::RequestRecord& r) { sinks.Add(r); }, pool.get());
  g_dispatcher.store(&dispatcher);
  if (g_interrupted.load()) dispatcher.RequestStop();
  auto outcome = dispatcher.Run();
  // Every record on disk before anything reads the folder.
  if (absl::Status s = (*details)->Flush(); !s.ok()) {
    LogError(absl::StrCat(s.message(),
                          ": some records may be missing from it (the summary "
                          "counts them all)"));
  }
  progress.Finish();
  live_metrics.OnRunEnded();
  g_dispatcher.store(nullptr);
  pool->Stop(std::chrono::milliseconds(3000));
  if (sim) sim->Stop();
  if (!outcome.ok() && summary.records() == 0) return Fail(outcome.status(), kExitFailure);

  // Summary and the actual page, also after an interrupt or worker loss (R-ACT-1).
  const bool interrupted = outcome.ok() ? outcome->interrupted : true;
  std::string stop_reason = "completed";
  nlohmann::json interrupted_at_s = nullptr;
  if (outcome.ok() && outcome->interrupted) {
    interrupted_at_s = std::round(NanosToSeconds(outcome->interrupted_at_ns) * 100) / 100;
    stop_reason = absl::StrFormat("interrupted by the user at %.2f s",
                                  NanosToSeconds(outcome->interrupted_at_ns));
  } else if (outcome.ok() && outcome->stopped_on_alarm) {
    stop_reason = absl::StrCat("stopped by surge (--stop-on-alarm): ", outcome->stop_message);
  } else if (outcome.ok() && outcome->target_unreachable) {
    stop_reason = absl::StrCat("stopped by surge: target unreachable: ", outcome->stop_message);
  } else if (!outcome.ok()) {
    stop_reason = absl::StrCat("stopped: ", outcome.status().message());
  }
  nlohmann::json context = {
      {"seed", config.seed()},
      {"dataset", p.dataset},
      {"num_prompts", config.num_prompts()},
      // JSON has no infinity: request_rate inf is written "inf".
      {"target_rate_rps", std::isinf(p.plan.traffic.target_rate_rps)
                              ? nlohmann::json("inf")
                              : nlohmann::json(p.plan.traffic.target_rate_rps)},
      {"burstiness", p.plan.traffic.burstiness},
      {"ramp_up_active", p.plan.traffic.ramp_active},
      {"ramp_up_strategy", std::string(RampStrategyTitle(p.plan.traffic.strategy))},
      {"instant_mode", p.plan.traffic.instant},
      {"trace_replay", p.plan.traffic.trace_replay},
      {"base_url", RedactedUrl(config.target().base_url())},
      {"endpoint", config.target().endpoint()},
      {"model", config.target().model()},
      {"workers", workers},
      {"assign", config.assign().empty() ? std::string("round-robin") : config.assign()},
      {"run_id", options.run_id},
      {"interrupted", interrupted},
      {"interrupted_at_s", interrupted_at_s},
      {"stop_reason", stop_reason},
      {"send_unknown", outcome.ok() ? outcome->send_unknown : 0},
      {"reassigned", outcome.ok() ? outcome->reassigned : 0},
      {"rejected_records", outcome.ok() ? outcome->rejected_records : 0},
      {"workers_lost", outcome.ok() ? outcome->workers_lost : 0},
      {"workers_fenced", outcome.ok() ? outcome->workers_fenced : 0},
      {"worker_losses", WorkerLossesJson(outcome)},
      {"undecodable_frames", outcome.ok() ? outcome->undecodable_frames : 0},
      {"records_lost_in_transit", outcome.ok() ? outcome->records_lost_in_transit : 0},
      // R-DIST-4: each worker's last estimate of its clock against the
      // coordinator's (docs/DESIGN.md "Shared clock").
      {"clock_sync", outcome.ok() ? ClockSyncJson(outcome->clocks) : nlohmann::json::array()},
      {"clock_note",
       "offset = worker clock - coordinator clock at at_coord_ns (NTP-style probes and heartbeats, "
       "minimum-RTT filtering, least-squares drift); every deadline is mapped through it"},
      {"started_at", p.started_at},
      {"surge_version", kSurgeVersion},
      {"max_concurrency", config.max_concurrency()},
      {"plan_file",
       plan_file.empty() ? nlohmann::json() : nlohmann::json(fs::absolute(plan_file).string())},
      {"late_policy", config.late_policy().empty() ? std::string("send") : config.late_policy()},
      {"late_threshold_ms", config.late_threshold_ms()},
      {"catch_up_rps",
       config.has_catch_up_rps() ? nlohmann::json(config.catch_up_rps()) : nlohmann::json()},
      // Issue 9 item 1: whether the schedule was kept (completed with the
      // run's lateness p99 in WriteRunResults).
      {"schedule", ScheduleJson(ScheduleFactsOf(outcome, config))},
  };
  if (outcome.ok() && outcome->undecodable_frames > 0) {
    LogWarning(absl::StrCat(
        outcome->undecodable_frames, " undecodable messages from workers were skipped (",
        outcome->records_lost_in_transit, " requests recorded as record_lost)"));
  }
  WriteRunResults(p.folder, p.dataset, p.plan, summary.Finish(), page, context, p.context);
  if (live) {
    // The metrics as a last scrape would read them, beside the summary.
    const fs::path last = p.folder / (p.dataset + "_metrics.prom");
    if (absl::Status s = WriteTextFile(live_metrics.Render(), last); !s.ok()) {
      LogWarning(std::string(s.message()));
    }
  }
  std::cout << "results: " << p.folder.string() << std::endl;
  if (!outcome.ok()) return Fail(outcome.status(), kExitFailure);
  if (outcome->interrupted) return InterruptedExitCode();
  if (outcome->stopped_on_alarm) {
    return Fail(
        absl::AbortedError(absl::StrCat("stopped on the lateness alarm: ", outcome->stop_message)),
        kExitLatenessAlarm);
  }
  if (outcome->target_unreachable) {
    return Fail(absl::UnavailableError(absl::StrCat("target unreachable: ", outcome->stop_message)),
                kExitFailure);
  }
  if (outcome->send_unknown > 0) {
    return Fail(absl::DataLossError(absl::StrCat(
                    outcome->send_unknown, " requests are lost (possibly sent, outcome unknown: ",
                    outcome->workers_lost, " workers lost); see the details file")),
                kExitFailure);
  }
  return kExitOk;
}

}  // namespace surge::app
