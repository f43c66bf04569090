#include "coordinator/cli/commands.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/time_units.h"
#include "common/version.h"
#include "common/zmq_transport.h"
#include "coordinator/config/run_config.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/dispatch/worker_launcher.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/replay_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/report/plot_pages.h"
#include "coordinator/report/run_context.h"
#include "coordinator/results/progress.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"
#include "simserver/sim_server.h"
#include "worker/http/model_lister.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using surge::v1::RunConfig;

std::atomic<bool> g_interrupted{false};
std::atomic<Dispatcher*> g_dispatcher{nullptr};

void OnSignal(int) {
  g_interrupted.store(true);
  if (Dispatcher* d = g_dispatcher.load()) d->RequestStop();
}

// Everything both commands compute before anything is sent.
struct Prepared {
  std::unique_ptr<PayloadSource> payloads;
  ArrivalSchedule plan;
  fs::path folder;
  std::string dataset;  // file-name stem, R-PLOT-1
  std::string started_at;  // local time, FormatLocalTime
  PageContext context;     // shown on both pages
};

std::string ConfigJson(const RunConfig& config) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(config, &json, options);
  return json;
}

// R-PLOT-0 said aloud: why a plan in instant mode has no expected page.
std::string InstantModeNoExpectedPage(const ResolvedTraffic& traffic) {
  return absl::StrFormat(
      "expected page: none: no expected page is written because the target rate %g RPS is below "
      "0.1 (instant mode, R-PLOT-0: every request is planned at once, there is no planned rate to "
      "draw); give --request-rate 0.1 or more (or an active ramp-up) for one. The actual page is "
      "written after the run.",
      traffic.target_rate_rps);
}

// Plan, folder, plan CSV, configuration and the expected page. Returns the
// exit code on failure through `exit_code`.
absl::StatusOr<Prepared> Prepare(const RunConfig& config, const std::string& model,
                                 int* exit_code) {
  Prepared p;
  // Trace replay (docs/DATASETS.md): the trace's timestamps replace the
  // generated schedule, so the traffic keys are ignored, with one warning.
  const bool replay = config.dataset().trace_replay();
  ResolvedTraffic traffic = ResolveTraffic(config);
  if (replay) {
    const auto& t = config.traffic_cfg();
    std::vector<std::string> ignored;
    if (config.request_rate() != 0) ignored.push_back("request_rate");
    if (t.burstiness() != 0) ignored.push_back("traffic_cfg.burstiness");
    if (!t.ramp_up_strategy().empty() && t.ramp_up_strategy() != "none") {
      ignored.push_back("traffic_cfg.ramp_up_strategy");
    }
    if (t.has_ramp_up_start_rps()) ignored.push_back("traffic_cfg.ramp_up_start_rps");
    if (t.has_ramp_up_end_rps()) ignored.push_back("traffic_cfg.ramp_up_end_rps");
    if (!ignored.empty()) {
      LogWarning(absl::StrCat("trace replay: the trace's timestamps set the schedule, so ",
                              absl::StrJoin(ignored, ", "), " (flags --request-rate, "
                              "--burstiness, --ramp-up-*) are ignored"));
    }
  } else {
    for (const auto& w : traffic.warnings) LogWarning(w);  // R-RAMP: one warning
  }
  auto payloads = MakePayloadSource(config.dataset(), config.num_prompts(), config.seed());
  if (!payloads.ok()) {
    *exit_code = kExitConfigError;
    return payloads.status();
  }
  p.payloads = *std::move(payloads);
  for (const auto& w : p.payloads->warnings()) LogWarning(w);
  p.dataset = p.payloads->name();
  auto plan = replay && p.payloads->replay_offsets_s() != nullptr
                  ? BuildReplaySchedule(*p.payloads->replay_offsets_s(), config.seed())
                  : BuildArrivalSchedule(traffic, config.num_prompts(), config.seed());
  if (!plan.ok()) {
    *exit_code = kExitConfigError;
    return plan.status();
  }
  p.plan = *std::move(plan);
  if (replay) {
    traffic = p.plan.traffic;
    LogInfo(absl::StrFormat(
        "trace replay: %d requests over %g s (time scale %g), mean rate %g RPS, first request "
        "at offset 0",
        p.plan.size(), p.plan.offset_s.back(),
        config.dataset().has_trace_time_scale() ? config.dataset().trace_time_scale() : 1.0,
        traffic.target_rate_rps));
  }
  LogInfo(absl::StrFormat(
      "plan: %d requests, seed %d, target rate %g RPS%s, burstiness %g%s", p.plan.size(),
      config.seed(), traffic.target_rate_rps,
      traffic.ramp_active ? absl::StrCat(" (", std::string(RampStrategyTitle(traffic.strategy)), " ramp-up ",
                                         traffic.ramp_start_rps, "->", traffic.ramp_end_rps, ")")
                          : std::string(),
      traffic.burstiness, traffic.instant ? ", instant mode" : ""));

  *exit_code = kExitFailure;
  const auto wall_now = RealClock().WallNow();
  auto folder = CreateRunFolder(config.output_dir(), model, wall_now);
  if (!folder.ok()) return folder.status();
  p.folder = *folder;
  RunConfig used = config;
  used.mutable_target()->set_model(model);
  // The start as the folder's name gives it, so that `surge report` shows
  // the same from the folder alone (FormatLocalTime if the name differs).
  p.started_at = RunStartFromFolder(p.folder);
  if (p.started_at.empty()) p.started_at = FormatLocalTime(wall_now);
  p.context = RunContextItems(used, p.plan, p.dataset, p.started_at, kSurgeVersion);
  {
    FILE* f = std::fopen((p.folder / "run_config.json").c_str(), "wb");
    if (f == nullptr) return absl::InternalError("cannot write run_config.json");
    const std::string json = ConfigJson(used);
    std::fwrite(json.data(), 1, json.size(), f);
    std::fclose(f);
  }
  if (absl::Status s = WritePlanCsv(p.plan, p.folder / (p.dataset + "_plan.csv")); !s.ok()) {
    return s;
  }
  // R-PLOT-0: no expected page in instant mode; say so, and why.
  if (!traffic.instant) {
    const fs::path page = p.folder / ExpectedPlotFileName(p.dataset);
    if (absl::Status s = WriteExpectedPlotPage(p.plan, page, p.context); !s.ok()) return s;
    std::cout << "expected page: " << page.string() << "\n";
  } else {
    std::cout << InstantModeNoExpectedPage(traffic) << "\n";
  }
  return p;
}

// The summary JSON, the printed table and the actual page: the end of
// `surge run` and all of `surge report`. Failures are logged, not fatal: the
// details file stays the source of truth.
void WriteRunResults(const fs::path& folder, const std::string& dataset,
                     const ArrivalSchedule& plan,
                     const std::vector<surge::v1::RequestRecord>& records,
                     const RunConfig& config, const nlohmann::json& context,
                     const PageContext& page_context) {
  const RunSummary summary = Summarize(records, &config.goodput());
  if (absl::Status s = WriteJsonFile(SummaryToJson(summary, context), folder / (dataset + ".json"));
      !s.ok()) {
    LogError(s.ToString());
  }
  if (absl::Status s = WriteTextFile(SummaryToCsv(summary), folder / (dataset + ".csv")); !s.ok()) {
    LogError(s.ToString());
  }
  std::vector<ActualSend> sends;
  for (const auto& r : records) {
    if (r.sent() && r.index() < plan.size()) {
      sends.push_back(ActualSend{r.index(), NanosToSeconds(r.sent_ns())});
    }
  }
  if (absl::Status s =
          WriteActualPlotPage(plan, sends, folder / ActualPlotFileName(dataset), page_context);
      !s.ok()) {
    LogError(s.ToString());
  }
  std::cout << FormatSummaryTable(summary);
}

int Fail(const absl::Status& status, int code) {
  std::cerr << "surge: " << status.message() << "\n";
  return code;
}

}  // namespace

int PlanCommand(const RunConfig& config) {
  const std::string model = !config.target().model().empty() ? config.target().model()
                            : config.target().base_url().empty() ? "surge-sim"
                                                                 : "model";
  int code = kExitOk;
  auto prepared = Prepare(config, model, &code);
  if (!prepared.ok()) return Fail(prepared.status(), code);
  const Prepared& p = *prepared;
  std::cout << "plan: " << p.plan.size() << " requests (normal " << p.plan.Count(Anomaly::kNormal)
            << ", timing anomalies " << p.plan.Count(Anomaly::kTiming)
            << ", burstiness anomalies " << p.plan.Count(Anomaly::kBurstiness) << ")\n"
            << "seed: " << config.seed() << "\n"
            << "results: " << p.folder.string() << "\n";
  return kExitOk;
}

int RunCommand(const RunConfig& input_config, const std::string& self_exe) {
  RunConfig config = input_config;
  Clock& clock = RealClock();
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  // R-UI-1: no target → the built-in simulated server, started and stopped here.
  std::unique_ptr<surge::simserver::SimServer> sim;
  if (config.target().base_url().empty()) {
    const surge::simserver::SimServerOptions options =
        surge::simserver::SimServerOptionsFromConfig(config.sim_server());
    auto server = surge::simserver::SimServer::Create(options);
    if (!server.ok()) return Fail(server.status(), kExitFailure);
    sim = *std::move(server);
    sim->Start();
    config.mutable_target()->set_base_url(absl::StrCat("http://127.0.0.1:", sim->port()));
    LogInfo(absl::StrCat("built-in simulated server on ", config.target().base_url(),
                         " (TTFT ", options.ttft_ms, " ms, ", options.itl_ms, " ms per token)"));
  }
  if (config.target().model().empty()) {
    auto model = surge::worker::FetchFirstModel(config.target(),
                                                std::chrono::milliseconds(10000));
    if (!model.ok()) return Fail(model.status(), kExitFailure);
    config.mutable_target()->set_model(*model);
    LogInfo(absl::StrCat("model: ", *model, " (first listed at /v1/models)"));
  }

  // Workers: one per core by default; never more than the concurrency cap,
  // which is split over them (R-REQ-2). Resolved before run_config.json is
  // written, so the file holds the count actually used.
  int workers = config.workers() > 0 ? static_cast<int>(config.workers())
                                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (config.max_concurrency() > 0) {
    workers = static_cast<int>(std::min<uint64_t>(workers, config.max_concurrency()));
  }
  config.set_workers(static_cast<uint32_t>(workers));

  int code = kExitOk;
  auto prepared = Prepare(config, config.target().model(), &code);
  if (!prepared.ok()) return Fail(prepared.status(), code);
  Prepared& p = *prepared;
  std::cout << "seed: " << config.seed() << "\nresults: " << p.folder.string() << std::endl;
  if (g_interrupted.load()) return kExitInterrupted;

  DispatcherOptions options;
  if (config.max_concurrency() > 0) {
    for (int k = 0; k < workers; ++k) {
      options.max_inflight.push_back(static_cast<uint32_t>(
          config.max_concurrency() / workers + (static_cast<uint64_t>(k) < config.max_concurrency() % workers)));
    }
  }
  options.num_workers = workers;
  options.target = config.target();
  options.seed = config.seed();
  std::mt19937_64 id_source(std::random_device{}());
  options.run_id = absl::StrFormat("%016x", id_source());

  auto transport = ZmqRouterTransport::Create("tcp://127.0.0.1:0");
  if (!transport.ok()) return Fail(transport.status(), kExitFailure);
  WorkerLauncher launcher(clock, self_exe);
  if (absl::Status s = launcher.Start(workers, (*transport)->endpoint()); !s.ok()) {
    return Fail(s, kExitFailure);
  }

  ProgressReporter progress(stderr, isatty(fileno(stderr)) != 0);
  options.on_progress = [&progress](const DispatchProgress& p) { progress.Update(p); };
  auto details = DetailsWriter::Create(p.folder / (p.dataset + "_details.jsonl"));
  if (!details.ok()) return Fail(details.status(), kExitFailure);
  std::vector<surge::v1::RequestRecord> records;
  records.reserve(p.plan.size());
  Dispatcher dispatcher(
      clock, **transport, p.plan, *p.payloads, options,
      [&](const surge::v1::RequestRecord& r) {
        (*details)->Append(r);
        // Flushed per record: an interrupted or crashed run leaves every
        // record received so far readable (R-OUT-1).
        (void)(*details)->Flush();
        records.push_back(r);
      },
      [&launcher](int32_t index) { return launcher.Exited(index); });
  g_dispatcher.store(&dispatcher);
  if (g_interrupted.load()) dispatcher.RequestStop();
  auto outcome = dispatcher.Run();
  progress.Finish();
  g_dispatcher.store(nullptr);
  launcher.Stop(std::chrono::milliseconds(3000));
  if (sim) sim->Stop();
  if (!outcome.ok() && records.empty()) return Fail(outcome.status(), kExitFailure);

  // Summary and the actual page, also after an interrupt or worker loss (R-ACT-1).
  nlohmann::json context = {
      {"seed", config.seed()},
      {"dataset", p.dataset},
      {"num_prompts", config.num_prompts()},
      {"target_rate_rps", p.plan.traffic.target_rate_rps},
      {"burstiness", p.plan.traffic.burstiness},
      {"ramp_up_active", p.plan.traffic.ramp_active},
      {"ramp_up_strategy", std::string(RampStrategyTitle(p.plan.traffic.strategy))},
      {"instant_mode", p.plan.traffic.instant},
      {"trace_replay", p.plan.traffic.trace_replay},
      {"base_url", RedactedUrl(config.target().base_url())},
      {"endpoint", config.target().endpoint()},
      {"model", config.target().model()},
      {"workers", workers},
      {"run_id", options.run_id},
      {"interrupted", outcome.ok() ? outcome->interrupted : true},
      {"reassigned", outcome.ok() ? outcome->reassigned : 0},
      {"rejected_records", outcome.ok() ? outcome->rejected_records : 0},
      {"workers_lost", outcome.ok() ? outcome->workers_lost : 0},
      {"clock_offsets_ns", std::vector<int64_t>(workers, 0)},
      {"clock_note", "local workers share the coordinator's CLOCK_MONOTONIC: offset 0 exactly"},
      {"started_at", p.started_at},
      {"surge_version", kSurgeVersion},
      {"max_concurrency", config.max_concurrency()},
  };
  WriteRunResults(p.folder, p.dataset, p.plan, records, config, context, p.context);
  std::cout << "results: " << p.folder.string() << std::endl;
  if (!outcome.ok()) return Fail(outcome.status(), kExitFailure);
  return outcome->interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace surge::coordinator

namespace surge::coordinator {

int ReportCommand(const std::string& folder_arg) {
  const fs::path folder(folder_arg);
  // The dataset stem comes from the one `{dataset}_plan.csv` in the folder.
  std::string dataset;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = "_plan.csv";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(),
                                                    suffix) == 0) {
      dataset = name.substr(0, name.size() - suffix.size());
    }
  }
  if (ec || dataset.empty()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
                    "run folder = \"", folder_arg,
                    "\": no {dataset}_plan.csv in it; give the folder that `surge run` printed "
                    "(.../performances/{model})")),
                kExitConfigError);
  }
  if (!fs::exists(folder / (dataset + "_details.jsonl"))) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
                    "run folder = \"", folder_arg, "\": has a plan but no ", dataset,
                    "_details.jsonl: it was written by `surge plan`, nothing was sent")),
                kExitConfigError);
  }
  // The configuration used, for the traffic facts the CSV does not hold.
  RunConfig config = DefaultRunConfig();
  {
    std::ifstream in(folder / "run_config.json");
    std::stringstream text;
    text << in.rdbuf();
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    if (!in || !google::protobuf::util::JsonStringToMessage(text.str(), &config, options).ok()) {
      return Fail(absl::DataLossError(absl::StrCat("cannot read ", (folder / "run_config.json").string())),
                  kExitFailure);
    }
  }
  auto plan = ReadPlanCsv(folder / (dataset + "_plan.csv"), ResolveTraffic(config), config.seed());
  if (!plan.ok()) return Fail(plan.status(), kExitFailure);
  // A replayed trace's traffic facts come from its offsets, not the keys.
  if (config.dataset().trace_replay()) plan->traffic = ResolveReplayTraffic(plan->offset_s);

  // Records as written; a line cut by a crash is skipped. Requests without a
  // record (the run ended before it arrived) are counted as lost.
  std::vector<surge::v1::RequestRecord> records;
  std::vector<bool> seen(plan->size(), false);
  uint64_t skipped = 0;
  {
    std::ifstream in(folder / (dataset + "_details.jsonl"));
    std::string line;
    while (std::getline(in, line)) {
      auto r = ParseDetailsLine(line);
      if (!r.ok() || r->index() >= plan->size() || seen[r->index()]) {
        ++skipped;
        continue;
      }
      seen[r->index()] = true;
      records.push_back(*std::move(r));
    }
  }
  uint64_t missing = 0;
  for (uint64_t i = 0; i < plan->size(); ++i) {
    if (seen[i]) continue;
    ++missing;
    surge::v1::RequestRecord r;
    r.set_index(i);
    r.set_worker(-1);
    r.set_planned_ns(SecondsToNanos(plan->offset_s[i]));
    r.set_status(surge::v1::LOST);
    r.set_error("no_record: the run ended before this request's record was written");
    records.push_back(std::move(r));
  }
  if (skipped > 0) LogWarning(absl::StrCat(skipped, " unreadable or duplicate details lines skipped"));
  if (missing > 0) LogWarning(absl::StrCat(missing, " planned requests have no record; counted as lost"));

  nlohmann::json context = nlohmann::json::object();
  {
    std::ifstream in(folder / (dataset + ".json"));
    nlohmann::json old = nlohmann::json::parse(in, nullptr, false);
    if (old.is_object() && old.contains("run")) context = old["run"];
  }
  context["seed"] = config.seed();
  context["dataset"] = dataset;
  context["rebuilt_by_report"] = true;
  // The pages' context from the run folder's files: the configuration used,
  // and the start time and version the run recorded in its summary (else
  // the start from the folder's name and this surge's version).
  std::string started_at;
  if (context.contains("started_at") && context["started_at"].is_string()) {
    started_at = context["started_at"].get<std::string>();
  } else {
    started_at = RunStartFromFolder(fs::absolute(folder, ec));
  }
  std::string version = kSurgeVersion;
  if (context.contains("surge_version") && context["surge_version"].is_string()) {
    version = context["surge_version"].get<std::string>();
  } else {
    context["surge_version"] = version;
  }
  context["started_at"] = started_at;
  context["report_surge_version"] = kSurgeVersion;
  const PageContext page_context = RunContextItems(config, *plan, dataset, started_at, version);
  if (!plan->traffic.instant) {
    if (absl::Status s =
            WriteExpectedPlotPage(*plan, folder / ExpectedPlotFileName(dataset), page_context);
        !s.ok()) {
      LogError(s.ToString());
    }
  }
  WriteRunResults(folder, dataset, *plan, records, config, context, page_context);
  std::cout << "results: " << folder.string() << std::endl;
  return kExitOk;
}

}  // namespace surge::coordinator
