#include "app/report_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "app/exit_codes.h"
#include "app/warmup_prepare.h"
#include "common/failure_kind.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/time_units.h"
#include "common/version.h"
#include "coordinator/capacity/plan_hash.h"
#include "coordinator/config/run_config.h"
#include "coordinator/plan/arrival_process.h"  // ResolveTraffic
#include "coordinator/plan/replay_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/plan/traffic_classes.h"
#include "coordinator/report/run_context.h"
#include "coordinator/results/details_json.h"
#include "coordinator/results/run_facts_json.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/run_results.h"
#include "coordinator/results/run_state.h"
#include "coordinator/results/summary.h"
#include "coordinator/telemetry/server_metrics.h"

namespace surge::app {

using coordinator::ActualPageInputs;
using coordinator::ArrivalSchedule;
using coordinator::DefaultRunConfig;
using coordinator::ForEachDetailsLine;
using coordinator::LoadYamlConfig;
using coordinator::PageContext;
using coordinator::ReadPlanCsv;
using coordinator::RecordFanOut;
using coordinator::ResolveReplayTraffic;
using coordinator::ResolveTraffic;
using coordinator::RunContextItems;
using coordinator::RunFactsFromJson;
using coordinator::RunStartFromFolder;
using coordinator::RunStartUtcFromFolder;
using coordinator::SummaryAccumulator;
using coordinator::WriteRunResults;

namespace fs = std::filesystem;
using surge::v1::RunConfig;

namespace {

// The dataset stem: from the one `{dataset}_plan.csv` in the folder, which
// must also hold the details file. Errors: INVALID_ARGUMENT.
absl::StatusOr<std::string> FindDataset(const fs::path& folder, const std::string& folder_arg) {
  std::string dataset;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = "_plan.csv";
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      dataset = name.substr(0, name.size() - suffix.size());
    }
  }
  if (ec || dataset.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("run folder = \"", folder_arg,
                     "\": no {dataset}_plan.csv in it; give the folder that `surge run` printed "
                     "(.../performances/{model})"));
  }
  if (!fs::exists(folder / (dataset + "_details.jsonl"))) {
    return absl::InvalidArgumentError(
        absl::StrCat("run folder = \"", folder_arg, "\": has a plan but no ", dataset,
                     "_details.jsonl: it was written by `surge plan`, nothing was sent"));
  }
  return dataset;
}

// The configuration used, for the traffic facts the CSV does not hold.
// run_config.json is written in the --config format; folders written by
// surge before that hold the protobuf JSON form, which is still read.
// Errors: DATA_LOSS.
absl::StatusOr<RunConfig> ReadRunConfig(const fs::path& folder) {
  RunConfig config = DefaultRunConfig();
  if (LoadYamlConfig((folder / "run_config.json").string(), &config).ok()) return config;
  config = DefaultRunConfig();
  std::ifstream in(folder / "run_config.json");
  std::stringstream text;
  text << in.rdbuf();
  if (!in || !coordinator::ParseProtoJsonConfig(text.str(), &config).ok()) {
    return absl::DataLossError(absl::StrCat("cannot read ", (folder / "run_config.json").string()));
  }
  return config;
}

// What the run folder's run_state.json says about a run without its summary:
// nothing when the folder has no such mark (older surge) or the run ended.
struct CrashFacts {
  // Missing records of requests planned after this (s after t0) were never
  // sent: every worker had stopped (+inf: unknown, each is lost).
  double no_send_after_s = std::numeric_limits<double>::infinity();
  // The stop reason to keep when the summary was never written.
  std::string stop_reason;
};

// The run state's verdict: a run that never started is an error (nothing
// to report), a crashed one gives its cut-off and stop reason. Errors:
// INVALID_ARGUMENT.
absl::StatusOr<CrashFacts> ReadCrashFacts(const fs::path& folder, const std::string& folder_arg) {
  CrashFacts facts;
  auto mark = coordinator::ReadRunState(folder / "run_state.json");
  if (!mark.ok()) {
    if (!absl::IsNotFound(mark.status())) LogWarning(std::string(mark.status().message()));
    return facts;
  }
  if (mark->state == "never_started" || mark->state == "waiting_for_workers") {
    return absl::InvalidArgumentError(absl::StrCat(
        "run folder = \"", folder_arg, "\": the run never started (",
        mark->state == "never_started" ? mark->stop_reason
                                       : "the coordinator ended while it waited for its workers",
        "); nothing was sent, there is nothing to report"));
  }
  if (mark->state == "ended") return facts;
  facts.no_send_after_s = mark->no_send_after_s;
  facts.stop_reason = absl::StrFormat(
      "ended early: the coordinator's last mark of being alive was at %.2f s%s, and no summary "
      "was written (a crash or a kill)",
      mark->elapsed_s, mark->state == "stopping" ? ", while it was stopping" : "");
  return facts;
}

// The record of a planned request that has none: NOT_SENT when it was due
// after every worker had stopped, else LOST (it may have been sent).
surge::v1::RequestRecord MissingRecord(uint64_t index, double offset_s, const CrashFacts& crash) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_worker(-1);
  r.set_planned_ns(SecondsToNanos(offset_s));
  if (offset_s > crash.no_send_after_s) {
    SetFailure(r, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
               "not_sent: no record (the run ended early, before this request was due)");
  } else {
    SetFailure(r, surge::v1::LOST, surge::v1::FAILURE_KIND_NO_RECORD,
               "no_record: the run ended before this request's record was written");
  }
  return r;
}

// Records as written; a line cut by a crash is skipped. Requests without a
// record get one from MissingRecord. Streamed into `sinks`; the records are
// not kept.
void StreamRecords(const fs::path& details, const ArrivalSchedule& plan, const CrashFacts& crash,
                   RecordFanOut& sinks) {
  std::vector<bool> seen(plan.size(), false);
  std::unordered_set<uint64_t> turns_seen;
  uint64_t skipped = 0;
  ForEachDetailsLine(details, [&](absl::StatusOr<surge::v1::RequestRecord> r) {
    if (r.ok() && r->warmup()) {
      sinks.Add(*r);  // counted as a warm-up, in no metric
      return;
    }
    // A session's turns (docs/SESSIONS.md): the plan holds its start, and
    // each turn has an index of its own.
    if (r.ok() && r->in_session()) {
      if (r->session() >= plan.size() || !turns_seen.insert(r->index()).second) {
        ++skipped;
        return;
      }
      if (r->turn() == 0) seen[r->session()] = true;
      sinks.Add(*r);
      return;
    }
    if (!r.ok() || r->index() >= plan.size() || seen[r->index()]) {
      ++skipped;
      return;
    }
    seen[r->index()] = true;
    sinks.Add(*r);
  });
  uint64_t lost = 0, not_sent = 0;
  for (uint64_t i = 0; i < plan.size(); ++i) {
    if (seen[i]) continue;
    const surge::v1::RequestRecord r = MissingRecord(i, plan.offset_s[i], crash);
    ++(r.status() == surge::v1::NOT_SENT ? not_sent : lost);
    sinks.Add(r);
  }
  if (skipped > 0) {
    LogWarning(absl::StrCat(skipped, " unreadable or duplicate details lines skipped"));
  }
  if (lost > 0) {
    LogWarning(absl::StrCat(lost, " planned requests have no record; counted as lost"));
  }
  if (not_sent > 0) {
    LogWarning(absl::StrCat(not_sent,
                            " planned requests have no record and were due after the run ended "
                            "(run_state.json); counted as not sent"));
  }
}

// The run's facts as its summary recorded them (none after a crash), marked
// as rebuilt by this surge. The start time and version are the run's (else
// the start from the folder's name and this surge's version).
surge::v1::RunFacts ReportFacts(const fs::path& folder, const std::string& dataset,
                                const RunConfig& config, const CrashFacts& crash) {
  surge::v1::RunFacts facts;
  {
    std::ifstream in(folder / (dataset + ".json"));
    nlohmann::json old = nlohmann::json::parse(in, nullptr, false);
    if (old.is_object() && old.contains("run")) {
      auto read = RunFactsFromJson(old["run"]);
      if (read.ok()) {
        facts = *std::move(read);
      } else {
        LogWarning(absl::StrCat(read.status().message(), ": its run facts are left out"));
      }
    }
  }
  if (!facts.has_stop_reason() && !crash.stop_reason.empty()) {
    facts.set_stop_reason(crash.stop_reason);
  }
  facts.set_seed(config.seed());
  facts.set_dataset(dataset);
  facts.set_rebuilt_by_report(true);
  if (!facts.has_plan_hash()) {
    auto hash = coordinator::PlanFileHash(folder / (dataset + "_plan.csv"));
    if (hash.ok()) facts.set_plan_hash(*hash);
  }
  std::error_code ec;
  if (facts.started_at().empty()) {
    facts.set_started_at(RunStartFromFolder(fs::absolute(folder, ec)));
    const std::string utc = RunStartUtcFromFolder(fs::absolute(folder, ec));
    if (!utc.empty()) facts.set_started_at_utc(utc);
  }
  if (facts.surge_version().empty()) facts.set_surge_version(kSurgeVersion);
  facts.set_report_surge_version(kSurgeVersion);
  return facts;
}

// Server telemetry: the source of a run folder that has the telemetry file,
// as its summary named it (else as its configuration did); none without the
// file.
std::optional<coordinator::ServerMetricsSource> ReportServerMetricsSource(
    const fs::path& folder, const std::string& dataset, const RunConfig& config) {
  if (!fs::exists(folder / coordinator::ServerMetricsFileName(dataset))) return std::nullopt;
  coordinator::ServerMetricsSource source{
      config.server_metrics() == "auto" ? "the target's /metrics" : config.server_metrics(),
      config.server_metrics_interval_s()};
  std::ifstream in(folder / (dataset + ".json"));
  const nlohmann::json old = nlohmann::json::parse(in, nullptr, false);
  if (old.is_object() && old.contains("server_metrics") && old["server_metrics"].is_object()) {
    const nlohmann::json& block = old["server_metrics"];
    if (block.contains("url") && block["url"].is_string()) source.url = block["url"];
    if (block.contains("interval_s") && block["interval_s"].is_number()) {
      source.interval_s = block["interval_s"];
    }
  }
  return source;
}

absl::Status Report(const std::string& folder_arg) {
  const fs::path folder(folder_arg);
  auto dataset = FindDataset(folder, folder_arg);
  if (!dataset.ok()) return dataset.status();
  auto crash = ReadCrashFacts(folder, folder_arg);
  if (!crash.ok()) return crash.status();
  auto config = ReadRunConfig(folder);
  if (!config.ok()) return config.status();
  // With traffic classes the plan's classes and traffic are the
  // configuration's own merged plan's (the CSV holds each request's class).
  coordinator::ArrivalSchedule own;
  if (config->classes_size() > 0) {
    auto merged = coordinator::BuildClassesPlan(*config);
    if (!merged.ok()) return AsConfigError(merged.status());
    own = *std::move(merged);
  } else {
    own.traffic = ResolveTraffic(*config);
  }
  auto plan =
      ReadPlanCsv(folder / (*dataset + "_plan.csv"), own.traffic, config->seed(), own.classes);
  if (!plan.ok()) return AsRuntimeFailure(plan.status());
  // A replayed trace's traffic facts come from its offsets, not the keys.
  if (config->dataset().trace_replay()) plan->traffic = ResolveReplayTraffic(plan->offset_s);
  // Every percentile exact: the details file holds every value.
  SummaryAccumulator summary(&config->goodput(), StreamingStats::kUnlimited);
  auto window = ResolveSteadyStateOption(*config, *plan);
  if (!window.ok()) return window.status();
  if (*window) summary.SetSteadyState(**window);
  // An older run_config.json has no metric_percentiles: the default set.
  auto percentiles = ParseMetricPercentiles(config->metric_percentiles());
  if (!percentiles.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("run_config.json: metric_percentiles: ", percentiles.status().message()));
  }
  summary.SetPercentiles(*percentiles);
  ActualPageInputs page(plan->size());
  RecordFanOut sinks({&summary, &page});
  coordinator::ClassSummaries classes(*plan, *config);
  sinks.Attach(&classes);
  StreamRecords(folder / (*dataset + "_details.jsonl"), *plan, *crash, sinks);
  const surge::v1::RunFacts facts = ReportFacts(folder, *dataset, *config, *crash);
  // The pages' context from the run folder's files.
  const PageContext page_context =
      RunContextItems(*config, *plan, *dataset, facts.started_at(), facts.surge_version());
  // WriteRunResults rewrites the expected page too (rebuilt_by_report).
  const auto server_metrics = ReportServerMetricsSource(folder, *dataset, *config);
  WriteRunResults(folder, *dataset, *plan, summary.Finish(), page, facts, page_context,
                  classes.Finish(), server_metrics ? &*server_metrics : nullptr);
  std::cout << "results: " << folder.string() << std::endl;
  return absl::OkStatus();
}

}  // namespace

int ReportCommand(const std::string& folder_arg) { return ExitWith(Report(folder_arg)); }

}  // namespace surge::app
