#include "app/commands.h"

#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "app/sim_server_process.h"
#include "client/model_lister.h"
#include "common/clock.h"
#include "common/failure_kind.h"
#include "common/fd_limit.h"
#include "common/log.h"
#include "common/time_units.h"
#include "common/version.h"
#include "common/zmq_transport.h"
#include "coordinator/config/run_config.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/dispatch/worker_pool.h"
#include "coordinator/metrics_http/metrics_http_server.h"
#include "coordinator/plan/arrival_process.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/replay_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/plan/traffic_config.h"
#include "coordinator/report/clock_summary.h"
#include "coordinator/report/plot_pages.h"
#include "coordinator/report/run_context.h"
#include "coordinator/report/schedule_verdict.h"
#include "coordinator/report/worker_losses.h"
#include "coordinator/results/live_metrics.h"
#include "coordinator/results/progress.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"
#include "simserver/sim_server.h"

namespace surge::app {

// What the commands wire together: the coordinator's configuration, plan,
// datasets, dispatch, results and pages (coordinator/).
using coordinator::ActualPlotFileName;
using coordinator::ActualSend;
using coordinator::Anomaly;
using coordinator::ArrivalSchedule;
using coordinator::AssignPolicyKind;
using coordinator::CheckOutputDir;
using coordinator::CheckTraffic;
using coordinator::CheckTrafficConfig;
using coordinator::ClockSyncJson;
using coordinator::ClockSyncText;
using coordinator::ConfigWarnings;
using coordinator::CreateRunFolder;
using coordinator::DefaultRunConfig;
using coordinator::DetailsWriter;
using coordinator::DetailsWriterOptions;
using coordinator::Dispatcher;
using coordinator::DispatcherOptions;
using coordinator::DispatchOutcome;
using coordinator::DispatchProgress;
using coordinator::ExpectedPlotFileName;
using coordinator::FinishScheduleJson;
using coordinator::FormatLocalTime;
using coordinator::FormatSummaryTable;
using coordinator::IntendedRateRps;
using coordinator::kInstantModeBelowRps;
using coordinator::LateMark;
using coordinator::LiveMetrics;
using coordinator::LoadYamlConfig;
using coordinator::LocalProcessPool;
using coordinator::MakePayloadSource;
using coordinator::MetricsHttpServer;
using coordinator::PageContext;
using coordinator::ParseDetailsLine;
using coordinator::PayloadSource;
using coordinator::PlanDefiningDifferences;
using coordinator::PlanWarnings;
using coordinator::ProgressReporter;
using coordinator::RampStrategyTitle;
using coordinator::ReadPlanCsv;
using coordinator::RecordFanOut;
using coordinator::RecordSink;
using coordinator::RedactedUrl;
using coordinator::RemoteWorkerPool;
using coordinator::ResolvedTraffic;
using coordinator::ResolveReplayTraffic;
using coordinator::ResolveTraffic;
using coordinator::RunContextItems;
using coordinator::RunEvent;
using coordinator::RunStartFromFolder;
using coordinator::RunSummary;
using coordinator::SafeFileName;
using coordinator::SavedConfigJson;
using coordinator::ScheduleEvents;
using coordinator::ScheduleFacts;
using coordinator::ScheduleJson;
using coordinator::ScheduleSentence;
using coordinator::SummaryAccumulator;
using coordinator::SummaryToCsv;
using coordinator::SummaryToJson;
using coordinator::TraceTimeScale;
using coordinator::TrafficWarnings;
using coordinator::WorkerLoss;
using coordinator::WorkerLossEvents;
using coordinator::WorkerLossJson;
using coordinator::WorkerPool;
using coordinator::WriteActualPlotPage;
using coordinator::WriteExpectedPlotPage;
using coordinator::WriteJsonFile;
using coordinator::WritePlanCsv;
using coordinator::WriteTextFile;

namespace {

namespace fs = std::filesystem;
using surge::v1::RunConfig;

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

// Everything both commands compute before anything is sent.
struct Prepared {
  std::unique_ptr<PayloadSource> payloads;
  ArrivalSchedule plan;
  fs::path folder;
  std::string dataset;  // file-name stem, R-PLOT-1
  std::string started_at;  // local time, FormatLocalTime
  PageContext context;     // shown on both pages
};

// Plans this large get a size and time estimate before the work starts and
// progress lines while it runs.
constexpr uint64_t kBigPlanRequests = 1000000;

// Rough costs measured on a 2-core x86-64 machine (docs/DESIGN.md): about 62
// bytes of plan CSV per request, about 28 bytes of memory per request, and
// about 0.8 µs per request to compute and write plan, CSV and page.
constexpr double kCsvBytesPerRequest = 62;
constexpr double kMemoryBytesPerRequest = 28;
constexpr double kSecondsPerRequest = 0.8e-6;

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  return absl::StrFormat("%.3g %s", bytes, units[u]);
}

// R-PLOT-0 said aloud: why a plan in instant mode has no expected page.
std::string InstantModeNoExpectedPage(const ResolvedTraffic& traffic) {
  return absl::StrFormat(
      "expected page: none: no expected page is written because %s (instant mode, R-PLOT-0: "
      "every request is planned at once, there is no planned rate to draw); give --request-rate "
      "0.1 or more (or an active ramp-up) for one. The actual page is written after the run.",
      std::isinf(traffic.target_rate_rps)
          ? std::string("request_rate is inf (all at once)")
          : absl::StrFormat("the target rate %g RPS is below 0.1", traffic.target_rate_rps));
}

// Plan, folder, plan CSV, configuration and the expected page. Returns the
// exit code on failure through `exit_code`. `saved` is the configuration
// written to run_config.json (what `--config` needs to reproduce the run).
//
// Exact replay: with a `plan_file`, the plan is that file as written
// (ReadPlanCsv: every offset to the nanosecond) instead of the one built
// here; its row count must be num_prompts. The configuration's own plan is
// still built, to say in the log whether the file differs from it (an
// edited plan is sent as written).
absl::StatusOr<Prepared> Prepare(const RunConfig& config, const std::string& model,
                                 const RunConfig& saved, int* exit_code,
                                 const fs::path& plan_file = {}) {
  Prepared p;
  // The output folder first: a plan of 10^8 requests must not be computed
  // only to find that it cannot be written.
  if (absl::Status s = CheckOutputDir(config.output_dir()); !s.ok()) {
    *exit_code = kExitFailure;
    return s;
  }
  // From `saved`: its base_url is empty when the built-in server serves the
  // run (whose sim_* options then count), as the user gave it.
  for (const std::string& w : ConfigWarnings(saved)) LogWarning(w);
  // A configured ramp that is inactive and would fall back to instant mode
  // is refused; then the traffic's warnings (keys a trace replay overrides,
  // an inactive ramp, instant mode).
  const bool replay = config.dataset().trace_replay();
  if (absl::Status s = CheckTrafficConfig(config); !s.ok()) {
    *exit_code = kExitConfigError;
    return s;
  }
  for (const std::string& w : TrafficWarnings(config)) LogWarning(w);
  const uint64_t n = config.num_prompts();
  const bool big = n >= kBigPlanRequests;
  if (big) {
    LogInfo(absl::StrFormat(
        "large plan: %d requests; plan CSV about %s, memory about %s, about %.0f s to compute "
        "and write (progress follows)",
        n, HumanBytes(kCsvBytesPerRequest * n), HumanBytes(kMemoryBytesPerRequest * n),
        std::max(1.0, kSecondsPerRequest * n)));
  }
  auto payloads = MakePayloadSource(config.dataset(), config.num_prompts(), config.seed());
  if (!payloads.ok()) {
    *exit_code = kExitConfigError;
    return payloads.status();
  }
  p.payloads = *std::move(payloads);
  for (const auto& w : p.payloads->warnings()) LogWarning(w);
  // The stem names files in the run folder: never a path.
  p.dataset = SafeFileName(p.payloads->name());
  if (big) LogInfo("large plan: computing the schedule");
  // One factory for every traffic model (docs/TRAFFIC.md): the seed's
  // AISBench plan, a composed profile × sampler, or the trace's offsets.
  auto process =
      coordinator::MakeArrivalProcess(config, replay ? p.payloads->replay_offsets_s() : nullptr);
  if (!process.ok()) {
    *exit_code = kExitConfigError;
    return process.status();
  }
  auto plan = (*process)->Generate(config.seed());
  if (!plan.ok()) {
    *exit_code = kExitConfigError;
    return plan.status();
  }
  p.plan = *std::move(plan);
  if (!plan_file.empty()) {
    auto from_file = ReadPlanCsv(plan_file, p.plan.traffic, config.seed());
    if (!from_file.ok()) {
      *exit_code = kExitConfigError;
      return absl::Status(from_file.status().code(),
                          absl::StrCat(from_file.status().message(), " (flag --plan-file)"));
    }
    if (from_file->size() != p.plan.size()) {
      *exit_code = kExitConfigError;
      return absl::InvalidArgumentError(absl::StrCat(
          "plan file ", plan_file.string(), ": request count mismatch: it has ", from_file->size(),
          " requests, num_prompts is ", p.plan.size(), " (flags --plan-file, --num-prompts)"));
    }
    uint64_t differ = 0;
    for (size_t i = 0; i < p.plan.size(); ++i) {
      differ += SecondsToNanos(from_file->offset_s[i]) != SecondsToNanos(p.plan.offset_s[i]);
    }
    if (replay) {
      from_file->traffic = ResolveReplayTraffic(from_file->offset_s, TraceTimeScale(config));
    }
    LogInfo(
        absl::StrCat("exact replay of ", plan_file.string(), ": ", from_file->size(), " requests, ",
                     differ == 0 ? std::string("every offset equal to the configuration's own plan")
                                 : absl::StrCat(differ,
                                                " offsets differ from the configuration's own plan "
                                                "(an edited plan: sent as written)")));
    p.plan = *std::move(from_file);
  }
  for (const std::string& w : PlanWarnings(p.plan)) LogWarning(w);
  const coordinator::TrafficDescription& traffic = p.plan.traffic.description;
  if (!traffic.log_intro.empty()) LogInfo(traffic.log_intro);
  LogInfo(absl::StrFormat("plan: %d requests, seed %d, %s", p.plan.size(), config.seed(),
                          traffic.log_line));

  *exit_code = kExitFailure;
  const auto wall_now = RealClock().WallNow();
  auto folder = CreateRunFolder(config.output_dir(), model, wall_now);
  if (!folder.ok()) return folder.status();
  p.folder = *folder;
  // The context from the saved configuration (the built-in server's port of
  // this run left out), so `surge report` shows the same from run_config.json.
  RunConfig used = saved;
  used.mutable_target()->set_model(model);
  // The start as the folder's name gives it, so that `surge report` shows
  // the same from the folder alone (FormatLocalTime if the name differs).
  p.started_at = RunStartFromFolder(p.folder);
  if (p.started_at.empty()) p.started_at = FormatLocalTime(wall_now);
  p.context = RunContextItems(used, p.plan, p.dataset, p.started_at, kSurgeVersion);
  {
    // Files by absolute path, so the saved configuration works from any folder.
    RunConfig portable = saved;
    auto absolute = [](std::string* path) {
      std::error_code ec;
      if (!path->empty()) {
        const fs::path full = fs::absolute(*path, ec);
        if (!ec) *path = full.lexically_normal().string();
      }
    };
    absolute(portable.mutable_dataset()->mutable_dataset_path());
    absolute(portable.mutable_target()->mutable_api_key_file());
    absolute(portable.mutable_target()->mutable_ca_cert_path());
    std::vector<std::string> left_out;
    const std::string json = SavedConfigJson(portable, &left_out);
    if (absl::Status s = WriteTextFile(json, p.folder / "run_config.json"); !s.ok()) return s;
    if (!left_out.empty()) {
      LogInfo(absl::StrCat("run_config.json leaves out header(s) ", absl::StrJoin(left_out, ", "),
                           " (may hold a secret): give them again with --header"));
    }
  }
  std::function<void(uint64_t)> csv_progress;
  if (big) {
    const bool terminal = isatty(fileno(stderr)) != 0;
    csv_progress = [n, terminal, next = uint64_t{0}](uint64_t done) mutable {
      if (done < next && done < n) return;
      next = done + n / 10;  // plain lines: about every 10%
      const std::string line = absl::StrFormat("plan CSV: %d of %d rows (%.0f%%)", done, n,
                                               100.0 * static_cast<double>(done) / n);
      if (terminal) {
        std::fprintf(stderr, "\r[surge] %s%s", line.c_str(), done >= n ? "\n" : "");
      } else {
        LogInfo(line);
      }
    };
  }
  if (absl::Status s = WritePlanCsv(p.plan, p.folder / (p.dataset + "_plan.csv"), csv_progress);
      !s.ok()) {
    return s;
  }
  // R-PLOT-0: no expected page in instant mode; say so, and why.
  if (!p.plan.traffic.instant) {
    if (big) LogInfo("large plan: writing the expected page");
    const fs::path page = p.folder / ExpectedPlotFileName(p.dataset);
    if (absl::Status s = WriteExpectedPlotPage(p.plan, page, p.context); !s.ok()) return s;
    std::cout << "expected page: " << page.string() << "\n";
  } else {
    std::cout << InstantModeNoExpectedPage(p.plan.traffic) << "\n";
  }
  return p;
}

// TTFT and E2EL from actual vs from planned send, for the actual page's
// latency table: the summary's numbers (the page computes none).
std::vector<coordinator::LatencyView> LatencyViews(const RunSummary& s) {
  auto p = [](const coordinator::MetricStats& m) {
    return coordinator::LatencyPercentiles{m.p50, m.p90, m.p99};
  };
  return {{"TTFT", s.ttft_s.count, p(s.ttft_s), p(s.ttft_from_planned_s)},
          {"E2EL", s.e2el_s.count, p(s.e2el_s), p(s.e2el_from_planned_s)}};
}

// The actual page's inputs, collected as records arrive (a sink): the (plan
// index, actual send offset) of each sent request — 16 bytes per request,
// not the records themselves — and the late-send policy's marks
// (docs/DESIGN.md "Late-send policy").
class ActualPageInputs : public RecordSink {
 public:
  explicit ActualPageInputs(uint64_t plan_size) : plan_size_(plan_size) {
    sends_.reserve(plan_size);
  }
  void Add(const surge::v1::RequestRecord& r) override {
    if (r.sent() && r.index() < plan_size_) {
      sends_.push_back(ActualSend{r.index(), NanosToSeconds(r.sent_ns())});
    }
    const double when_s = NanosToSeconds(r.sent() ? r.sent_ns() : r.released_ns());
    if (r.status() == surge::v1::SKIPPED) {
      late_marks_.push_back({r.index(), LateMark::Kind::kSkipped, NanosToSeconds(r.planned_ns())});
    }
    if (r.late()) late_marks_.push_back({r.index(), LateMark::Kind::kLate, when_s});
    if (r.catch_up_delay_ns() > 0) {
      late_marks_.push_back({r.index(), LateMark::Kind::kDelayed, when_s});
    }
  }
  const std::vector<ActualSend>& sends() const { return sends_; }
  const std::vector<LateMark>& late_marks() const { return late_marks_; }

 private:
  uint64_t plan_size_;
  std::vector<ActualSend> sends_;
  std::vector<LateMark> late_marks_;
};

// The summary JSON, the printed table and the actual page: the end of
// `surge run` and all of `surge report`. Failures are logged, not fatal: the
// details file stays the source of truth.
//
// How the run ended is read from `context`: "stop_reason" (text, e.g.
// "interrupted by the user at 4.97 s"; "completed" for a normal end) goes on
// the actual page and under the printed table, as do the worker-loss counts
// ("workers_lost", "reassigned", "send_unknown") when not zero, and each
// lost worker ("worker_losses": a line under the table, a red line on the
// actual page's time axes).
void WriteRunResults(const fs::path& folder, const std::string& dataset,
                     const ArrivalSchedule& plan, RunSummary summary,
                     const ActualPageInputs& page, const nlohmann::json& context_in,
                     const PageContext& page_context) {
  const std::vector<ActualSend>& sends = page.sends();
  // The plan's rate, also when the run stopped early or fell behind
  // (R-MET-2): from the plan itself, not from the records that came back.
  summary.intended_rate_rps = IntendedRateRps(plan.offset_s);
  // Issue 9 item 1: whether the schedule was kept, with the run's p99.
  nlohmann::json context = context_in;
  if (context.contains("schedule")) {
    FinishScheduleJson(context["schedule"], summary.lateness_s.p99);
    context["schedule_kept"] = context["schedule"].value("schedule_kept", true);
  }
  const std::string schedule_text =
      context.contains("schedule") ? ScheduleSentence(context["schedule"]) : std::string();
  const std::string stop_reason = context.value("stop_reason", std::string());
  const std::string note =
      stop_reason.empty() || stop_reason == "completed"
          ? std::string()
          : absl::StrCat("Run ", stop_reason, ": ", summary.sent, " of ", summary.total,
                         " requests were sent (", summary.interrupted,
                         " of them cut off: interrupted), ", summary.not_sent, " not sent");
  if (absl::Status s = WriteJsonFile(SummaryToJson(summary, context), folder / (dataset + ".json"));
      !s.ok()) {
    LogError(s.ToString());
  }
  if (absl::Status s = WriteTextFile(SummaryToCsv(summary), folder / (dataset + ".csv")); !s.ok()) {
    LogError(s.ToString());
  }
  // The expected page is written before the run; after a stop it is
  // written again with the same note (and `surge report` rebuilds it).
  if (!plan.traffic.instant && (!note.empty() || context.value("rebuilt_by_report", false))) {
    if (absl::Status s =
            WriteExpectedPlotPage(plan, folder / ExpectedPlotFileName(dataset), page_context, note);
        !s.ok()) {
      LogError(s.ToString());
    }
  }
  // The actual page also says how well the workers' clocks were aligned.
  PageContext actual_context = page_context;
  const std::string clock_text =
      context.contains("clock_sync") ? ClockSyncText(context["clock_sync"]) : std::string();
  if (!clock_text.empty()) {
    actual_context.push_back({"Clock sync (worker − coordinator)", clock_text});
  }
  if (!schedule_text.empty()) actual_context.push_back({"Schedule", schedule_text});
  // Lost workers: a red line at each loss on the actual page's time axes.
  const nlohmann::json no_losses = nlohmann::json::array();
  const nlohmann::json& losses =
      context.contains("worker_losses") ? context["worker_losses"] : no_losses;
  const std::vector<RunEvent> loss_events = WorkerLossEvents(losses);
  // The moment the generator fell behind: a red line like a lost worker's
  // (its sentence is printed once, as the "schedule:" line).
  std::vector<RunEvent> page_events = loss_events;
  if (context.contains("schedule")) {
    for (RunEvent& e : ScheduleEvents(context["schedule"])) page_events.push_back(std::move(e));
    std::stable_sort(page_events.begin(), page_events.end(),
                     [](const RunEvent& a, const RunEvent& b) { return a.at_s < b.at_s; });
  }
  if (absl::Status s =
          WriteActualPlotPage(plan, sends, folder / ActualPlotFileName(dataset), actual_context,
                              note, page_events, LatencyViews(summary), page.late_marks());
      !s.ok()) {
    LogError(s.ToString());
  }
  std::cout << FormatSummaryTable(summary);
  if (!clock_text.empty()) std::cout << "clock sync (worker − coordinator): " << clock_text << "\n";
  if (!schedule_text.empty()) std::cout << "schedule: " << schedule_text << "\n";
  if (!note.empty()) std::cout << note << "\n";
  auto count = [&context](const char* key) {
    auto it = context.find(key);
    return it != context.end() && it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t{0};
  };
  if (count("workers_lost") > 0 || count("send_unknown") > 0) {
    std::cout << "workers lost: " << count("workers_lost")
              << ", reassigned: " << count("reassigned")
              << ", send_unknown: " << count("send_unknown")
              << " (requests possibly sent by a lost worker: status lost)";
    if (count("workers_fenced") > 0) {
      std::cout << "; told to stop when heard again (fenced): " << count("workers_fenced");
    }
    std::cout << "\n";
  }
  for (const RunEvent& e : loss_events) std::cout << e.text << "\n";
}

// The lateness monitor's verdict as report facts (run.schedule).
ScheduleFacts ScheduleFactsOf(const absl::StatusOr<DispatchOutcome>& outcome,
                              const RunConfig& config) {
  ScheduleFacts f;
  f.judged = config.lateness_alarm_ms() > 0;
  f.lateness_alarm_ms = config.lateness_alarm_ms();
  if (!outcome.ok()) return f;
  const coordinator::ScheduleVerdict& v = outcome->schedule;
  if (!v.kept) {
    f.fell_behind_at_s = std::max(0.0, NanosToSeconds(v.fell_behind_at_ns));
    f.worker = v.worker;
    f.lateness_ms = static_cast<double>(v.lateness_ns) / 1e6;
    f.cause = std::string(coordinator::LatenessCauseKey(v.diagnosis.cause));
    f.cause_text = v.diagnosis.text;
  }
  f.worst_window_p99_ms = static_cast<double>(v.worst_p99_ns) / 1e6;
  f.alarm_reports = v.over_reports;
  f.alarm_lines = outcome->alarm_lines;
  f.stopped_on_alarm = outcome->stopped_on_alarm;
  return f;
}

// run.worker_losses: one object per lost worker (WorkerLossJson).
nlohmann::json WorkerLossesJson(const absl::StatusOr<DispatchOutcome>& outcome) {
  nlohmann::json out = nlohmann::json::array();
  if (!outcome.ok()) return out;
  for (const WorkerLoss& l : outcome->worker_losses) {
    out.push_back(
        WorkerLossJson(l.worker, l.at_ns, l.why, l.send_unknown, l.not_sent, l.reassigned));
  }
  return out;
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
  if (config.metrics_port() > 0) {
    LogWarning("--metrics-port is unused by surge plan: nothing is sent, so there are no live "
               "metrics (surge run and surge coordinator serve them)");
  }
  // Saved as given: the folder's placeholder model name is not a setting.
  auto prepared = Prepare(config, model, config, &code);
  if (!prepared.ok()) return Fail(prepared.status(), code);
  const Prepared& p = *prepared;
  std::cout << "plan: " << p.plan.size() << " requests (normal " << p.plan.Count(Anomaly::kNormal)
            << ", timing anomalies " << p.plan.Count(Anomaly::kTiming)
            << ", burstiness anomalies " << p.plan.Count(Anomaly::kBurstiness) << ")\n"
            << "seed: " << config.seed() << "\n"
            << "results: " << p.folder.string() << "\n";
  return kExitOk;
}

// The coordinator role's flags: the bind rule and the key files. Errors name
// the flag (exit 2 for the caller).
absl::StatusOr<ZmqRouterOptions> CoordinatorTransportOptions(const CoordinatorRole& role,
                                                             const RunConfig& config) {
  if (role.expect_workers < 1 || role.expect_workers > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--expect-workers ", role.expect_workers, ": must be 1 to 1024 (the workers to wait for)"));
  }
  if (!(role.join_timeout_s > 0) || role.join_timeout_s > 86400) {
    return absl::InvalidArgumentError(absl::StrCat("--join-timeout ", role.join_timeout_s,
                                                   ": must be > 0 and at most 86400 seconds"));
  }
  if (config.max_concurrency() > 0 &&
      config.max_concurrency() < static_cast<uint64_t>(role.expect_workers)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-concurrency ", config.max_concurrency(), ": must be at least --expect-workers (",
        role.expect_workers, "): the cap is split over the workers, each needs one slot"));
  }
  if (absl::Status s = CheckBindSecurity(
          {role.bind, role.curve_secret_key_file, role.curve_allow_dir, role.insecure});
      !s.ok()) {
    return s;
  }
  ZmqRouterOptions options;
  if (!role.curve_secret_key_file.empty()) {
    auto secret = ReadCurveKeyFile(role.curve_secret_key_file);
    if (!secret.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--curve-secret-key: ", secret.status().message()));
    }
    auto allowed = ReadCurveAllowList(role.curve_allow_dir);
    if (!allowed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--curve-allow: ", allowed.status().message()));
    }
    options.curve = CurveServerOptions{*secret, *allowed};
  }
  return options;
}

std::string PlanConfigPath(const std::string& plan_file) {
  return (fs::path(plan_file).parent_path() / "run_config.json").string();
}

namespace {

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
    const surge::simserver::SimServerOptions options =
        surge::simserver::SimServerOptionsFromConfig(config.sim_server());
    auto server = SimServerProcess::Start(clock, self_exe, options);
    if (!server.ok()) return Fail(server.status(), kExitFailure);
    sim = *std::move(server);
    config.mutable_target()->set_base_url(absl::StrCat("http://127.0.0.1:", sim->port()));
    LogInfo(absl::StrCat("built-in simulated server on ", config.target().base_url(),
                         " (TTFT ", options.ttft_ms, " ms, ", options.itl_ms,
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
      options.max_inflight.push_back(static_cast<uint32_t>(
          config.max_concurrency() / workers + (static_cast<uint64_t>(k) < config.max_concurrency() % workers)));
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
    options.hello_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(std::ceil(role->join_timeout_s * 1000)));
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
  auto details =
      DetailsWriter::Create(p.folder / (p.dataset + "_details.jsonl"), details_options);
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
    LogError(absl::StrCat(s.message(), ": some records may be missing from it (the summary "
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

namespace surge::app {

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
  // run_config.json is written in the --config format; folders written by
  // surge before that hold the protobuf JSON form, which is still read.
  RunConfig config = DefaultRunConfig();
  if (!LoadYamlConfig((folder / "run_config.json").string(), &config).ok()) {
    config = DefaultRunConfig();
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
  // record (the run ended before it arrived) are counted as lost. Streamed
  // into the summary (every percentile exact: the details file holds every
  // value) and the send list; the records are not kept.
  SummaryAccumulator summary(&config.goodput(), StreamingStats::kUnlimited);
  ActualPageInputs page(plan->size());
  RecordFanOut sinks({&summary, &page});
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
      sinks.Add(*r);
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
    SetFailure(r, surge::v1::LOST, surge::v1::FAILURE_KIND_NO_RECORD,
               "no_record: the run ended before this request's record was written");
    sinks.Add(r);
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
  // WriteRunResults rewrites the expected page too (rebuilt_by_report).
  WriteRunResults(folder, dataset, *plan, summary.Finish(), page, context, page_context);
  std::cout << "results: " << folder.string() << std::endl;
  return kExitOk;
}

}  // namespace surge::app
