#include "coordinator/cli/commands.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/time_units.h"
#include "common/zmq_transport.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/dispatch/worker_launcher.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/report/plot_pages.h"
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

// Plan, folder, plan CSV, configuration and the expected page. Returns the
// exit code on failure through `exit_code`.
absl::StatusOr<Prepared> Prepare(const RunConfig& config, const std::string& model,
                                 int* exit_code) {
  Prepared p;
  const ResolvedTraffic traffic = ResolveTraffic(config);
  for (const auto& w : traffic.warnings) LogWarning(w);  // R-RAMP: one warning
  auto payloads = MakePayloadSource(config.dataset(), config.num_prompts(), config.seed());
  if (!payloads.ok()) {
    *exit_code = kExitConfigError;
    return payloads.status();
  }
  p.payloads = *std::move(payloads);
  for (const auto& w : p.payloads->warnings()) LogWarning(w);
  p.dataset = p.payloads->name();
  auto plan = BuildArrivalSchedule(traffic, config.num_prompts(), config.seed());
  if (!plan.ok()) {
    *exit_code = kExitConfigError;
    return plan.status();
  }
  p.plan = *std::move(plan);
  LogInfo(absl::StrFormat(
      "plan: %d requests, seed %d, target rate %g RPS%s, burstiness %g%s", p.plan.size(),
      config.seed(), traffic.target_rate_rps,
      traffic.ramp_active ? absl::StrCat(" (", std::string(RampStrategyTitle(traffic.strategy)), " ramp-up ",
                                         traffic.ramp_start_rps, "->", traffic.ramp_end_rps, ")")
                          : std::string(),
      traffic.burstiness, traffic.instant ? ", instant mode" : ""));

  *exit_code = kExitFailure;
  auto folder = CreateRunFolder(config.output_dir(), model, RealClock().WallNow());
  if (!folder.ok()) return folder.status();
  p.folder = *folder;
  RunConfig used = config;
  used.mutable_target()->set_model(model);
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
  // R-PLOT-0: no expected page in instant mode.
  if (!traffic.instant) {
    if (absl::Status s = WriteExpectedPlotPage(
            p.plan, p.folder / (p.dataset + "_rps_distribution_plot.html"));
        !s.ok()) {
      return s;
    }
  }
  return p;
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
    surge::simserver::SimServerOptions options;
    options.ttft_ms = config.sim_server().ttft_ms();
    options.itl_ms = config.sim_server().itl_ms();
    auto server = surge::simserver::SimServer::Create(options);
    if (!server.ok()) return Fail(server.status(), kExitFailure);
    sim = *std::move(server);
    sim->Start();
    config.mutable_target()->set_base_url(absl::StrCat("http://127.0.0.1:", sim->port()));
    LogInfo(absl::StrCat("built-in simulated server on ", config.target().base_url(),
                         " (TTFT ", options.ttft_ms, " ms, ", options.itl_ms, " ms per token)"));
  }
  if (config.target().model().empty()) {
    auto model = surge::worker::FetchFirstModel(config.target().base_url(),
                                                std::chrono::milliseconds(10000));
    if (!model.ok()) return Fail(model.status(), kExitFailure);
    config.mutable_target()->set_model(*model);
    LogInfo(absl::StrCat("model: ", *model, " (first listed at /v1/models)"));
  }

  int code = kExitOk;
  auto prepared = Prepare(config, config.target().model(), &code);
  if (!prepared.ok()) return Fail(prepared.status(), code);
  Prepared& p = *prepared;
  std::cout << "seed: " << config.seed() << "\nresults: " << p.folder.string() << std::endl;
  if (g_interrupted.load()) return kExitInterrupted;

  // Workers: one per core by default; never more than the concurrency cap,
  // which is split over them (R-REQ-2).
  int workers = config.workers() > 0 ? static_cast<int>(config.workers())
                                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  DispatcherOptions options;
  if (config.max_concurrency() > 0) {
    workers = static_cast<int>(std::min<uint64_t>(workers, config.max_concurrency()));
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
        records.back().clear_itl_ns();  // kept in the details file only
      },
      [&launcher](int32_t index) { return launcher.Exited(index); });
  g_dispatcher.store(&dispatcher);
  if (g_interrupted.load()) dispatcher.RequestStop();
  auto outcome = dispatcher.Run();
  g_dispatcher.store(nullptr);
  launcher.Stop(std::chrono::milliseconds(3000));
  if (sim) sim->Stop();
  if (!outcome.ok() && records.empty()) return Fail(outcome.status(), kExitFailure);

  // Summary and the actual page, also after an interrupt or worker loss (R-ACT-1).
  const RunSummary summary = Summarize(records);
  nlohmann::json context = {
      {"seed", config.seed()},
      {"dataset", p.dataset},
      {"num_prompts", config.num_prompts()},
      {"target_rate_rps", p.plan.traffic.target_rate_rps},
      {"burstiness", p.plan.traffic.burstiness},
      {"ramp_up_active", p.plan.traffic.ramp_active},
      {"ramp_up_strategy", std::string(RampStrategyTitle(p.plan.traffic.strategy))},
      {"instant_mode", p.plan.traffic.instant},
      {"base_url", config.target().base_url()},
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
  };
  if (absl::Status s = WriteJsonFile(SummaryToJson(summary, context), p.folder / (p.dataset + ".json"));
      !s.ok()) {
    LogError(s.ToString());
  }
  std::vector<ActualSend> sends;
  for (const auto& r : records) {
    if (r.sent()) sends.push_back(ActualSend{r.index(), NanosToSeconds(r.sent_ns())});
  }
  if (absl::Status s = WriteActualPlotPage(
          p.plan, sends, p.folder / (p.dataset + "_rps_distribution_plot_with_actual_rps.html"));
      !s.ok()) {
    LogError(s.ToString());
  }
  std::cout << FormatSummaryTable(summary) << "results: " << p.folder.string() << std::endl;
  if (!outcome.ok()) return Fail(outcome.status(), kExitFailure);
  return outcome->interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace surge::coordinator
