#include "app/run_job.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "app/exit_codes.h"
#include "app/prepare.h"
#include "client/metrics_getter.h"
#include "client/model_lister.h"
#include "common/log.h"
#include "common/version.h"
#include "coordinator/capacity/plan_hash.h"
#include "coordinator/metrics_http/metrics_http_server.h"
#include "coordinator/results/details_json.h"
#include "coordinator/results/live_metrics.h"
#include "coordinator/results/prefix_reuse_summary.h"
#include "coordinator/results/progress.h"
#include "coordinator/results/redirect_notice.h"
#include "coordinator/results/run_facts.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/run_results.h"
#include "coordinator/results/run_state.h"
#include "coordinator/results/summary.h"
#include "coordinator/telemetry/server_metrics_file.h"
#include "coordinator/telemetry/server_scraper.h"

namespace surge::app {

using coordinator::ActualPageInputs;
using coordinator::AddOutcomeFacts;
using coordinator::ArrivalSchedule;
using coordinator::AssignPolicyKind;
using coordinator::ConfiguredRunFacts;
using coordinator::DetailsWriter;
using coordinator::DetailsWriterOptions;
using coordinator::Dispatcher;
using coordinator::DispatcherOptions;
using coordinator::DispatchOutcome;
using coordinator::DispatchProgress;
using coordinator::LiveMetrics;
using coordinator::MetricsHttpServer;
using coordinator::ProgressReporter;
using coordinator::RecordFanOut;
using coordinator::SaturationOptions;
using coordinator::SummaryAccumulator;
using coordinator::WorkerPool;
using coordinator::WriteRunResults;
using coordinator::WriteTextFile;

namespace {

namespace fs = std::filesystem;
using surge::v1::RunConfig;

// The percentiles the summary shows (validated with the configuration).
MetricPercentiles MetricPercentilesOf(const RunConfig& config) {
  auto ps = ParseMetricPercentiles(config.metric_percentiles());
  return ps.ok() ? *ps : MetricPercentiles{};
}

std::atomic<bool> g_interrupted{false};
// The first stop signal (SIGINT or SIGTERM): the exit status is 128 + it.
std::atomic<int> g_stop_signal{0};
std::atomic<Dispatcher*> g_dispatcher{nullptr};

void OnSignal(int sig) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, sig);
  g_interrupted.store(true);
  if (Dispatcher* d = g_dispatcher.load()) d->RequestStop(sig == SIGTERM);
}

// 130 after SIGINT (Ctrl-C), 143 after SIGTERM: the shell's 128 + signal.
absl::Status Interrupted() { return InterruptedStatus(g_stop_signal.load()); }

// The dispatcher's settings from the configuration, for `workers` workers.
DispatcherOptions MakeDispatcherOptions(const RunConfig& config, int workers) {
  DispatcherOptions options;
  if (config.max_concurrency() > 0) {
    for (int k = 0; k < workers; ++k) {
      options.max_inflight.push_back(
          static_cast<uint32_t>(config.max_concurrency() / workers +
                                (static_cast<uint64_t>(k) < config.max_concurrency() % workers)));
    }
  }
  // Open sessions: the same split, but never a share of 0 (that would be
  // no cap): a worker holds at least one.
  if (config.sessions().has_max_sessions()) {
    const uint64_t cap = config.sessions().max_sessions();
    for (int k = 0; k < workers; ++k) {
      options.max_sessions.push_back(static_cast<uint32_t>(
          std::max<uint64_t>(1, cap / workers + (static_cast<uint64_t>(k) < cap % workers))));
    }
  }
  options.num_workers = workers;
  options.assign = config.assign() == surge::v1::ASSIGN_POLICY_LEAST_LOADED
                       ? AssignPolicyKind::kLeastLoaded
                       : AssignPolicyKind::kRoundRobin;
  options.abort_after_connect_failures = config.abort_after_connect_failures();
  // The lateness alarm (docs/DESIGN.md "Lateness alarm").
  options.lateness.threshold_ns = std::llround(config.lateness_alarm_ms() * 1e6);
  options.stop_on_alarm = config.stop_on_alarm();
  if (config.stop_on_saturation()) {
    options.saturation = SaturationOptions{.window_s = config.saturation_window_s()};
  }
  options.target = config.target();
  options.seed = config.seed();
  // Late-send policy (the configuration's enum travels in Welcome as it is).
  options.late_policy = config.late_policy();
  options.late_threshold_ns = static_cast<int64_t>(std::llround(config.late_threshold_ms() * 1e6));
  options.catch_up_rps = config.catch_up_rps();
  std::mt19937_64 id_source(std::random_device{}());
  options.run_id = absl::StrFormat("%016x", id_source());
  return options;
}

// The plan's mean rate, (N - 1) / its span, requests/s; 0 for a plan of one
// request or all at once.
double MeanRateRps(const ArrivalSchedule& plan) {
  if (plan.size() < 2) return 0;
  const double span = plan.offset_s.back() - plan.offset_s.front();
  return span > 0 ? static_cast<double>(plan.size() - 1) / span : 0;
}

// How the run's end maps to its status (after the files are written).
absl::Status OutcomeStatus(const absl::StatusOr<DispatchOutcome>& outcome) {
  if (!outcome.ok()) return AsRuntimeFailure(outcome.status());
  if (outcome->interrupted) return Interrupted();
  if (outcome->stopped_on_alarm) {
    return absl::AbortedError(
        absl::StrCat("stopped on the lateness alarm: ", outcome->stop_message));
  }
  if (outcome->target_unreachable) {
    return absl::UnavailableError(absl::StrCat("target unreachable: ", outcome->stop_message));
  }
  if (outcome->saturated) {
    return absl::ResourceExhaustedError(
        absl::StrCat("stopped on saturation: ", outcome->stop_message));
  }
  if (outcome->send_unknown > 0) {
    return absl::DataLossError(
        absl::StrCat(outcome->send_unknown, " requests are lost (possibly sent, outcome unknown: ",
                     outcome->workers_lost, " workers lost); see the details file"));
  }
  return absl::OkStatus();
}

// A run whose every sent request the server refused with 401 or 403 measured
// nothing: its API key is missing or wrong (where the requests were sent
// from). Errors: UNAUTHENTICATED (exit 1).
absl::Status AuthorizationStatus(const coordinator::RunSummary& s) {
  auto count = [&s](const char* key) {
    auto it = s.reasons.find(key);
    return it == s.reasons.end() ? uint64_t{0} : it->second;
  };
  const uint64_t refused = count("http_401") + count("http_403");
  if (s.succeeded > 0 || s.sent == 0 || refused < s.sent) return absl::OkStatus();
  return absl::UnauthenticatedError(absl::StrCat(
      "the server refused every one of the ", s.sent,
      " requests sent (HTTP 401/403): the API key is missing or wrong; give it with "
      "--api-key-file or OPENAI_API_KEY (with remote workers see SECURITY.md: how the key "
      "reaches them)"));
}

// One run, phase by phase; its members live as long as the run.
class Job {
 public:
  Job(const RunConfig& config, const std::string& self_exe, WorkerSide& side,
      const std::string& plan_file)
      : config_(config), self_exe_(self_exe), side_(side), plan_file_(plan_file) {}

  absl::Status Run();
  // The run folder and dataset once prepared (empty before).
  RunJobResult result() const { return {prepared_.folder, prepared_.dataset}; }

 private:
  absl::Status StartLiveMetrics();
  absl::Status BindWorkerPort();
  absl::Status StartBuiltInServer();
  absl::Status ResolveModel();
  // Runs the pre-flight `check` until it passes, fails with anything but
  // UNAVAILABLE, a stop signal comes, or wait_for_target_s has passed.
  absl::Status WaitForTarget(const std::function<absl::Status()>& check);
  absl::Status ResolveWorkers();
  absl::StatusOr<DispatchOutcome> Dispatch(DispatcherOptions& options, SummaryAccumulator& summary,
                                           ActualPageInputs& page, bool* nothing_recorded);
  void StartServerMetrics();
  void StopServerMetrics(const absl::StatusOr<DispatchOutcome>& outcome);
  coordinator::RunSummary ExactSummary(SummaryAccumulator& summary);
  coordinator::RunSummary WriteResults(const absl::StatusOr<DispatchOutcome>& outcome,
                                       const DispatcherOptions& options,
                                       SummaryAccumulator& summary, const ActualPageInputs& page);

  RunConfig config_;
  const std::string self_exe_;
  WorkerSide& side_;
  const std::string plan_file_;
  Clock& clock_ = RealClock();
  LiveMetrics live_metrics_;
  std::unique_ptr<MetricsHttpServer> metrics_server_;
  // The workers' socket, bound before anything else is started.
  std::unique_ptr<ZmqRouterTransport> transport_;
  std::unique_ptr<SimServerProcess> sim_;
  int workers_ = 0;
  Prepared prepared_;
  // run_state.json in the run folder, from the moment it exists.
  std::unique_ptr<coordinator::RunStateWriter> state_;
  // The traffic classes' blocks of the summary; null without classes.
  std::unique_ptr<coordinator::ClassSummaries> class_summaries_;
  // Server telemetry (--server-metrics): where and how often, the GET, the
  // file and the scraper's thread; all null when off.
  std::optional<coordinator::ServerMetricsSource> server_metrics_;
  std::unique_ptr<surge::client::MetricsGetter> metrics_getter_;
  std::unique_ptr<coordinator::ServerMetricsFile> server_metrics_file_;
  std::unique_ptr<coordinator::ServerMetricsScraper> scraper_;
};

absl::Status Job::Run() {
  if (!plan_file_.empty()) {
    if (absl::Status s = CheckReplayConfig(config_, plan_file_); !s.ok()) return AsConfigError(s);
  }
  if (absl::Status s = side_.Check(config_); !s.ok()) return AsConfigError(s);
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  if (absl::Status s = StartLiveMetrics(); !s.ok()) return s;
  if (absl::Status s = BindWorkerPort(); !s.ok()) return s;
  if (absl::Status s = StartBuiltInServer(); !s.ok()) return s;
  if (absl::Status s = ResolveModel(); !s.ok()) return s;
  if (absl::Status s = ResolveWorkers(); !s.ok()) return s;
  // run_config.json: the resolved model and worker count, but not the
  // built-in server's port of this run (a replay starts its own).
  RunConfig saved = config_;
  if (sim_) saved.mutable_target()->clear_base_url();
  auto prepared = Prepare(config_, config_.target().model(), saved, plan_file_);
  if (!prepared.ok()) return prepared.status();
  prepared_ = *std::move(prepared);
  std::cout << "seed: " << config_.seed() << "\nresults: " << prepared_.folder.string()
            << "\nstarted: " << prepared_.started_at << " (" << prepared_.started_at_utc << ")"
            << std::endl;
  if (g_interrupted.load()) return Interrupted();

  DispatcherOptions options = MakeDispatcherOptions(config_, workers_);
  if (options.saturation) options.saturation->plan_rate_rps = MeanRateRps(prepared_.plan);
  state_ = std::make_unique<coordinator::RunStateWriter>(prepared_.folder, options.lease_ms);
  state_->Waiting();
  // Each record goes to the details file, the summary and the actual
  // page's send list; none keeps the records themselves.
  SummaryAccumulator summary(&config_.goodput());
  if (prepared_.steady_state) summary.SetSteadyState(*prepared_.steady_state);
  summary.SetPercentiles(MetricPercentilesOf(config_));
  options.warmup_offsets_ns = prepared_.warmups.offsets_ns;
  options.warmup_payloads = prepared_.warmups.payloads.get();
  // Multi-turn sessions (docs/SESSIONS.md): the ledger's turns and think
  // times, and each start's later turns.
  if (prepared_.sessions != nullptr) {
    options.session_turns = prepared_.session_shape.turns;
    options.session_think_ns = prepared_.session_shape.think_ns;
    options.add_session_turns = [sessions = prepared_.sessions.get()](
                                    uint64_t session, surge::v1::Assignment& start) {
      coordinator::AddLaterTurns(*sessions, session, start);
    };
  }
  ActualPageInputs page(prepared_.plan.size());
  // A block per traffic class (docs/TRAFFIC.md "Traffic classes").
  if (!prepared_.plan.classes.empty()) {
    class_summaries_ = std::make_unique<coordinator::ClassSummaries>(prepared_.plan, config_);
  }
  bool nothing_recorded = false;
  auto outcome = Dispatch(options, summary, page, &nothing_recorded);
  if (nothing_recorded) {
    state_->NeverStarted(std::string(outcome.status().message()));
    return AsRuntimeFailure(outcome.status());
  }
  const coordinator::RunSummary written = WriteResults(outcome, options, summary, page);
  if (absl::Status s = OutcomeStatus(outcome); !s.ok()) return s;
  return AuthorizationStatus(written);
}

// Live metrics on --metrics-port, listening before anything is started or
// created, so a port in use stops here. Errors: INVALID_ARGUMENT.
absl::Status Job::StartLiveMetrics() {
  if (config_.metrics_port() == 0) return absl::OkStatus();
  const std::string host =
      config_.metrics_host().empty() ? std::string("127.0.0.1") : config_.metrics_host();
  auto server = MetricsHttpServer::Start(host, static_cast<uint16_t>(config_.metrics_port()),
                                         [this] { return live_metrics_.Render(); });
  if (!server.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-port ", config_.metrics_port(), " (--metrics-host ", host,
        "): ", server.status().message(), "; choose another port, or 0 for no live metrics"));
  }
  metrics_server_ = *std::move(server);
  LogInfo(absl::StrCat("live metrics on http://", host, ":", metrics_server_->port(),
                       "/metrics (docs/METRICS.md)"));
  return absl::OkStatus();
}

// The socket the workers join, bound right after the live metrics' port so
// that a port in use stops the run before the built-in server, the wait
// for the target or the run folder. Workers that connect early queue their
// Hello until the dispatcher reads it. Errors: INVALID_ARGUMENT.
absl::Status Job::BindWorkerPort() {
  auto transport = ZmqRouterTransport::Create(side_.bind(), side_.transport_options());
  if (!transport.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(transport.status().message(),
                     " (the workers' port: is another coordinator still running there? choose "
                     "another --bind); nothing was started"));
  }
  transport_ = *std::move(transport);
  return absl::OkStatus();
}

// R-UI-1: no target → the built-in simulated server, started and stopped
// here, in a process of its own (its threads are not the coordinator's,
// docs/PERFORMANCE.md).
absl::Status Job::StartBuiltInServer() {
  if (!config_.target().base_url().empty()) return absl::OkStatus();
  auto server =
      SimServerProcess::Start(clock_, self_exe_, BuiltInServerConfig(config_.sim_server()));
  if (!server.ok()) return AsRuntimeFailure(server.status());
  sim_ = *std::move(server);
  config_.mutable_target()->set_base_url(absl::StrCat("http://127.0.0.1:", sim_->port()));
  LogInfo(absl::StrCat("built-in simulated server on ", config_.target().base_url(), " (",
                       BuiltInServerTiming(config_.sim_server()), "; process ", sim_->pid(), ")"));
  side_.OnBuiltInServer();
  return absl::OkStatus();
}

// The model: given, or the first the target lists. A given model on an
// outside target gets a pre-flight check instead: a target that does not
// even accept a connection fails the run now, not after N failed requests
// (only connect/TLS failures count; any HTTP answer, even 404 at
// /v1/models, is fine).
absl::Status Job::WaitForTarget(const std::function<absl::Status()>& check) {
  const Clock::TimePoint give_up =
      clock_.Now() + std::chrono::milliseconds(
                         static_cast<int64_t>((sim_ ? 0.0 : config_.wait_for_target_s()) * 1000));
  bool said = false;
  while (true) {
    absl::Status s = check();
    if (s.ok() || !absl::IsUnavailable(s) || g_interrupted.load() || clock_.Now() >= give_up) {
      if (said && s.ok()) LogInfo("the target answers");
      return s;
    }
    if (!said) {
      said = true;
      LogInfo(
          absl::StrFormat("the target does not answer yet (%s); retrying every second for up "
                          "to %.0f s (--wait-for-target)",
                          s.message(), config_.wait_for_target_s()));
    }
    clock_.SleepUntilCoarse(std::min(give_up, clock_.Now() + std::chrono::seconds(1)));
  }
}

absl::Status Job::ResolveModel() {
  if (config_.target().model().empty()) {
    std::string model;
    absl::Status listed = WaitForTarget([&]() {
      auto first =
          surge::client::FetchFirstModel(config_.target(), std::chrono::milliseconds(10000));
      if (!first.ok()) return first.status();
      model = *std::move(first);
      return absl::OkStatus();
    });
    if (!listed.ok()) return AsRuntimeFailure(listed);
    config_.mutable_target()->set_model(model);
    LogInfo(absl::StrCat("model: ", model, " (first listed at /v1/models)"));
    return absl::OkStatus();
  }
  if (sim_) return absl::OkStatus();
  if (absl::Status s = WaitForTarget([&]() {
        return surge::client::CheckTargetConnects(config_.target(),
                                                  std::chrono::milliseconds(10000));
      });
      !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat(s.message(), " (pre-flight check of --base-url; nothing was sent)"));
  }
  return absl::OkStatus();
}

// The worker count, resolved before run_config.json is written so the file
// holds the count actually used, and checked against this machine.
absl::Status Job::ResolveWorkers() {
  workers_ = side_.Workers(config_);
  config_.set_workers(static_cast<uint32_t>(workers_));
  if (absl::Status s = side_.CheckFits(config_, workers_, sim_ != nullptr); !s.ok()) {
    if (sim_) sim_->Stop();
    return AsConfigError(s);
  }
  return absl::OkStatus();
}

// Binds, starts (or waits for) the workers, and sends the plan; every
// record reaches the sinks and the details file is flushed before this
// returns. `nothing_recorded`: the run failed before any record came back
// (nothing to write).
absl::StatusOr<DispatchOutcome> Job::Dispatch(DispatcherOptions& options,
                                              SummaryAccumulator& summary, ActualPageInputs& page,
                                              bool* nothing_recorded) {
  *nothing_recorded = true;
  std::unique_ptr<WorkerPool> pool =
      side_.MakePool(clock_, config_, workers_, transport_->endpoint(), sim_.get(), &options);
  if (absl::Status s = pool->Start(workers_, transport_->endpoint()); !s.ok()) {
    return AsRuntimeFailure(s);
  }
  ProgressReporter progress(stderr, isatty(fileno(stderr)) != 0);
  live_metrics_.SetPlan(&prepared_.plan);
  const bool live = metrics_server_ != nullptr;
  options.on_progress = [&progress, &summary, this, live](const DispatchProgress& p) {
    progress.Update(p);
    if (server_metrics_file_ != nullptr && p.t0_ns != 0) server_metrics_file_->SetT0(p.t0_ns);
    state_->Update(p.elapsed_s, p.stopping, summary.records());
    if (live) live_metrics_.OnProgress(p);
  };
  // The details file is formatted and written on the writer's own thread
  // (docs/PERFORMANCE.md): the dispatcher's loop only queues a copy of each
  // record. Written within milliseconds; an interrupted run writes
  // everything before the summary (R-OUT-1).
  DetailsWriterOptions details_options;
  details_options.writer_thread = true;
  auto details = DetailsWriter::Create(prepared_.folder / (prepared_.dataset + "_details.jsonl"),
                                       details_options);
  if (!details.ok()) return AsRuntimeFailure(details.status());
  // surge does not follow redirects: the first one is named, once.
  coordinator::RedirectNotice redirects;
  RecordFanOut sinks({details->get(), &summary, &page, &progress, &redirects});
  if (live) sinks.Attach(&live_metrics_);
  if (class_summaries_ != nullptr) sinks.Attach(class_summaries_.get());
  StartServerMetrics();
  Dispatcher dispatcher(
      clock_, *transport_, prepared_.plan, *prepared_.payloads, options,
      [&sinks](const surge::v1::RequestRecord& r) { sinks.Add(r); }, pool.get());
  g_dispatcher.store(&dispatcher);
  if (g_interrupted.load()) dispatcher.RequestStop(g_stop_signal.load() == SIGTERM);
  auto outcome = dispatcher.Run();
  StopServerMetrics(outcome);
  // Every record on disk before anything reads the folder.
  if (absl::Status s = (*details)->Flush(); !s.ok()) {
    LogError(absl::StrCat(s.message(),
                          ": some records may be missing from it (the summary "
                          "counts them all)"));
  }
  progress.Finish();
  live_metrics_.OnRunEnded();
  g_dispatcher.store(nullptr);
  pool->Stop(std::chrono::milliseconds(3000));
  if (sim_) sim_->Stop();
  *nothing_recorded = !outcome.ok() && summary.records() == 0;
  return outcome;
}

// Server telemetry (docs/METRICS.md "Server telemetry"): the scraper on
// its own thread from before t0, writing {dataset}_server_metrics.jsonl as
// it goes. A source that cannot be set up is a warning, never a failure.
void Job::StartServerMetrics() {
  if (config_.server_metrics().empty()) return;
  auto url = coordinator::ServerMetricsUrl(config_.server_metrics(), config_.target().base_url());
  const double interval_s = config_.server_metrics_interval_s();
  // A GET waits at most one interval (and 2 s): the next deadline stays.
  const auto timeout = std::chrono::milliseconds(
      std::max<int64_t>(1, std::llround(std::min(interval_s, 2.0) * 1000)));
  absl::StatusOr<std::unique_ptr<surge::client::MetricsGetter>> getter =
      url.ok() ? surge::client::MetricsGetter::Create(*url, config_.target(), timeout)
               : absl::StatusOr<std::unique_ptr<surge::client::MetricsGetter>>(url.status());
  const fs::path path = prepared_.folder / coordinator::ServerMetricsFileName(prepared_.dataset);
  auto file =
      getter.ok()
          ? coordinator::ServerMetricsFile::Create(path)
          : absl::StatusOr<std::unique_ptr<coordinator::ServerMetricsFile>>(getter.status());
  if (!file.ok()) {
    LogWarning(absl::StrCat("server metrics: ", file.status().message(),
                            "; the run goes on without them"));
    return;
  }
  metrics_getter_ = *std::move(getter);
  server_metrics_file_ = *std::move(file);
  server_metrics_ = coordinator::ServerMetricsSource{*url, interval_s};
  scraper_ = std::make_unique<coordinator::ServerMetricsScraper>(
      clock_, *url, std::chrono::nanoseconds(std::llround(interval_s * 1e9)),
      [this] { return metrics_getter_->Get(); },
      [this](const coordinator::ServerMetricsSample& s) { server_metrics_file_->Add(s); });
  scraper_->Start();
  LogInfo(absl::StrFormat("server metrics: scraping %s every %g s into %s", *url, interval_s,
                          path.filename().string()));
}

// Stops the scraper (a GET under way ends within its timeout) and closes
// the file, every line relative to the run's t0.
void Job::StopServerMetrics(const absl::StatusOr<DispatchOutcome>& outcome) {
  if (scraper_ == nullptr) return;
  scraper_->Stop();
  if (outcome.ok() && outcome->t0_ns != 0) server_metrics_file_->SetT0(outcome->t0_ns);
  if (absl::Status s = server_metrics_file_->Close(); !s.ok()) {
    LogWarning(std::string(s.message()));
  }
}

// The run's summary with every percentile exact: the accumulator's own
// when each metric stayed within its exact limit, else the same summary
// recomputed from the details file with no limit (as `surge report` does).
// Keeps the accumulator's estimates, with a warning, when the details file
// does not give back every record.
coordinator::RunSummary Job::ExactSummary(SummaryAccumulator& summary) {
  coordinator::RunSummary s = summary.Finish();
  if (s.percentiles_exact) return s;
  const fs::path details = prepared_.folder / (prepared_.dataset + "_details.jsonl");
  SummaryAccumulator exact(&config_.goodput(), StreamingStats::kUnlimited);
  if (prepared_.steady_state) exact.SetSteadyState(*prepared_.steady_state);
  exact.SetPercentiles(s.percentiles);
  coordinator::ForEachDetailsLine(details, [&exact](absl::StatusOr<surge::v1::RequestRecord> r) {
    if (r.ok()) exact.Add(*r);
  });
  if (exact.records() != summary.records()) {
    LogWarning(absl::StrCat(details.string(), " gave back ", exact.records(), " of ",
                            summary.records(),
                            " records: the summary keeps its histogram percentile estimates"));
    return s;
  }
  return exact.Finish();
}

// Summary and the actual page, also after an interrupt or worker loss
// (R-ACT-1), and the last scrape of the live metrics.
coordinator::RunSummary Job::WriteResults(const absl::StatusOr<DispatchOutcome>& outcome,
                                          const DispatcherOptions& options,
                                          SummaryAccumulator& summary,
                                          const ActualPageInputs& page) {
  const Prepared& p = prepared_;
  surge::v1::RunFacts facts = ConfiguredRunFacts(config_, p.plan.traffic, p.dataset);
  facts.set_run_id(options.run_id);
  facts.set_started_at(p.started_at);
  facts.set_started_at_utc(p.started_at_utc);
  facts.set_surge_version(kSurgeVersion);
  if (!plan_file_.empty()) facts.set_plan_file(fs::absolute(plan_file_).string());
  // The plan's fingerprint, from the CSV as written (`surge compare`).
  if (auto hash = coordinator::PlanFileHash(p.folder / (p.dataset + "_plan.csv")); hash.ok()) {
    facts.set_plan_hash(*hash);
  }
  if (p.planned_reuse.has_value()) {
    *facts.mutable_prefix_reuse() = coordinator::PrefixReuseFactOf(p.planned_reuse->block_tokens,
                                                                   p.planned_reuse->shared_tokens,
                                                                   p.planned_reuse->prompt_tokens);
  }
  AddOutcomeFacts(outcome, config_, &facts);
  if (outcome.ok() && outcome->undecodable_frames > 0) {
    LogWarning(absl::StrCat(
        outcome->undecodable_frames, " undecodable messages from workers were skipped (",
        outcome->records_lost_in_transit, " requests recorded as record_lost)"));
  }
  coordinator::RunSummary written = ExactSummary(summary);
  coordinator::AddWorkerFacts(outcome, written, &facts);
  if (facts.has_failures_concentrate()) LogWarning(facts.failures_concentrate());
  WriteRunResults(p.folder, p.dataset, p.plan, written, page, facts, p.context,
                  class_summaries_ != nullptr ? class_summaries_->Finish()
                                              : std::vector<coordinator::ClassSummary>(),
                  server_metrics_ ? &*server_metrics_ : nullptr);
  state_->Ended(facts.stop_reason(), summary.records());
  if (metrics_server_ != nullptr) {
    // The metrics as a last scrape would read them, beside the summary.
    const fs::path last = p.folder / (p.dataset + "_metrics.prom");
    if (absl::Status s = WriteTextFile(live_metrics_.Render(), last); !s.ok()) {
      LogWarning(std::string(s.message()));
    }
  }
  std::cout << "results: " << p.folder.string() << std::endl;
  return written;
}

}  // namespace

absl::Status RunJob(const RunConfig& config, const std::string& self_exe, WorkerSide& workers,
                    const std::string& plan_file, RunJobResult* result) {
  Job job(config, self_exe, workers, plan_file);
  absl::Status status = job.Run();
  if (result != nullptr) *result = job.result();
  return status;
}

}  // namespace surge::app
