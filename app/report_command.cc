#include "app/report_command.h"

#include <google/protobuf/util/json_util.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "app/exit_codes.h"
#include "app/run_results.h"
#include "common/failure_kind.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/time_units.h"
#include "common/version.h"
#include "coordinator/config/run_config.h"
#include "coordinator/plan/replay_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/report/run_context.h"
#include "coordinator/results/details_json.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"

namespace surge::app {

using coordinator::DefaultRunConfig;
using coordinator::LoadYamlConfig;
using coordinator::PageContext;
using coordinator::ParseDetailsLine;
using coordinator::ReadPlanCsv;
using coordinator::RecordFanOut;
using coordinator::ResolveReplayTraffic;
using coordinator::ResolveTraffic;
using coordinator::RunContextItems;
using coordinator::RunStartFromFolder;
using coordinator::SummaryAccumulator;

namespace fs = std::filesystem;
using surge::v1::RunConfig;

int ReportCommand(const std::string& folder_arg) {
  const fs::path folder(folder_arg);
  // The dataset stem comes from the one `{dataset}_plan.csv` in the folder.
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
      return Fail(
          absl::DataLossError(absl::StrCat("cannot read ", (folder / "run_config.json").string())),
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
  if (skipped > 0)
    LogWarning(absl::StrCat(skipped, " unreadable or duplicate details lines skipped"));
  if (missing > 0)
    LogWarning(absl::StrCat(missing, " planned requests have no record; counted as lost"));

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
