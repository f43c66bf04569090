#include "app/prepare.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "app/exit_codes.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/time_units.h"
#include "common/version.h"
#include "coordinator/config/run_config.h"
#include "coordinator/dataset/prompt_sizing.h"
#include "coordinator/dataset/session_starts.h"
#include "coordinator/plan/arrival_process.h"
#include "coordinator/plan/replay_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/plan/traffic_classes.h"
#include "coordinator/plan/traffic_config.h"
#include "coordinator/report/plot_pages.h"
#include "coordinator/report/run_context.h"
#include "coordinator/report/shaded_bands.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"

namespace surge::app {

using coordinator::ArrivalSchedule;
using coordinator::CheckOutputDir;
using coordinator::CheckTrafficConfig;
using coordinator::ConfigWarnings;
using coordinator::CreateRunFolder;
using coordinator::DefaultRunConfig;
using coordinator::ExpectedPlotFileName;
using coordinator::FormatLocalTime;
using coordinator::FormatUtcTime;
using coordinator::LoadYamlConfig;
using coordinator::MakePayloadSource;
using coordinator::PayloadSource;
using coordinator::PlanDefiningDifferences;
using coordinator::PlanWarnings;
using coordinator::ReadPlanCsv;
using coordinator::ResolvedTraffic;
using coordinator::ResolveReplayTraffic;
using coordinator::RunContextItems;
using coordinator::SafeFileName;
using coordinator::SavedConfigJson;
using coordinator::TraceTimeScale;
using coordinator::TrafficWarnings;
using coordinator::WriteExpectedPlotPage;
using coordinator::WritePlanCsv;
using coordinator::WriteTextFile;

namespace {

namespace fs = std::filesystem;
using surge::v1::RunConfig;

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

void LogBigPlanEstimate(uint64_t n) {
  LogInfo(absl::StrFormat(
      "large plan: %d requests; plan CSV about %s, memory about %s, about %.0f s to compute "
      "and write (progress follows)",
      n, HumanBytes(kCsvBytesPerRequest * n), HumanBytes(kMemoryBytesPerRequest * n),
      std::max(1.0, kSecondsPerRequest * n)));
}

// The schedule from the configuration (or the trace's offsets); its traffic
// describes itself (ResolvedTraffic::description). Errors: INVALID_ARGUMENT.
absl::StatusOr<ArrivalSchedule> BuildPlan(const RunConfig& config, const PayloadSource& payloads) {
  const bool replay = config.dataset().trace_replay();
  // One factory for every traffic model (docs/TRAFFIC.md): the seed's
  // AISBench plan, a composed profile × sampler, or the trace's offsets.
  auto process =
      coordinator::MakeArrivalProcess(config, replay ? payloads.replay_offsets_s() : nullptr);
  if (!process.ok()) return AsConfigError(process.status());
  auto plan = (*process)->Generate(config.seed());
  if (!plan.ok()) return AsConfigError(plan.status());
  return plan;
}

// Exact replay: `plan` becomes the plan file as written; the log says how
// many offsets differ from the configuration's own plan. Errors:
// INVALID_ARGUMENT (unreadable file, another request count).
absl::Status UsePlanFile(const RunConfig& config, const fs::path& plan_file,
                         ArrivalSchedule* plan) {
  auto from_file = ReadPlanCsv(plan_file, plan->traffic, config.seed(), plan->classes);
  if (!from_file.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(from_file.status().message(), " (flag --plan-file)"));
  }
  if (from_file->size() != plan->size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan file ", plan_file.string(), ": request count mismatch: it has ", from_file->size(),
        " requests, num_prompts is ", plan->size(), " (flags --plan-file, --num-prompts)"));
  }
  uint64_t differ = 0;
  for (size_t i = 0; i < plan->size(); ++i) {
    differ += SecondsToNanos(from_file->offset_s[i]) != SecondsToNanos(plan->offset_s[i]);
  }
  if (config.dataset().trace_replay()) {
    from_file->traffic = ResolveReplayTraffic(from_file->offset_s, TraceTimeScale(config));
  }
  LogInfo(
      absl::StrCat("exact replay of ", plan_file.string(), ": ", from_file->size(), " requests, ",
                   differ == 0 ? std::string("every offset equal to the configuration's own plan")
                               : absl::StrCat(differ,
                                              " offsets differ from the configuration's own plan "
                                              "(an edited plan: sent as written)")));
  *plan = *std::move(from_file);
  return absl::OkStatus();
}

// A plan with traffic classes (docs/TRAFFIC.md "Traffic classes"): the
// merged plan (or the plan file's), then each class's payloads from its own
// dataset keys and seed, sized as a run of its own, tagged with its class.
// Errors: INVALID_ARGUMENT.
absl::Status MakeClassPayloadsAndPlan(const RunConfig& config, const fs::path& plan_file,
                                      Prepared* p) {
  auto plan = coordinator::BuildClassesPlan(config);
  if (!plan.ok()) return AsConfigError(plan.status());
  p->plan = *std::move(plan);
  if (!plan_file.empty()) {
    if (absl::Status s = UsePlanFile(config, plan_file, &p->plan); !s.ok()) return s;
  }
  std::vector<std::unique_ptr<PayloadSource>> sources;
  std::vector<coordinator::TrafficClassTag> tags;
  for (int c = 0; c < config.classes_size(); ++c) {
    const RunConfig one = coordinator::ClassRunConfig(config, c);
    const uint64_t n = std::max<uint64_t>(p->plan.classes[c].requests, 1);
    auto source = MakePayloadSource(one.dataset(), n, one.seed());
    if (!source.ok()) {
      return AsConfigError(absl::InvalidArgumentError(
          absl::StrCat("classes[", c, "]: ", source.status().message())));
    }
    auto sized = coordinator::SizePrompts(one, *std::move(source), RealClock());
    if (!sized.ok()) {
      return sized.status().code() == absl::StatusCode::kInvalidArgument
                 ? AsConfigError(sized.status())
                 : AsRuntimeFailure(sized.status());
    }
    sources.push_back(*std::move(sized));
    const surge::v1::TrafficClass& k = config.classes(c);
    tags.push_back({k.name(), k.model(), {k.headers().begin(), k.headers().end()}});
  }
  p->payloads = coordinator::MakeClassPayloadSource(std::move(sources), std::move(tags),
                                                    p->plan.class_index, p->plan.class_request);
  for (const auto& w : p->payloads->warnings()) LogWarning(w);
  p->dataset = SafeFileName(p->payloads->name());
  return absl::OkStatus();
}

// The plan's prefix reuse, when it has shared prefixes, and its log line.
void LogPlannedReuse(const RunConfig& config, Prepared* p) {
  const uint32_t block = config.dataset().prefix_block_tokens();
  p->planned_reuse = coordinator::PlanPrefixReuse(*p->payloads, p->plan.size(), block);
  if (!p->planned_reuse.has_value()) return;
  const coordinator::PlannedReuse& r = *p->planned_reuse;
  LogInfo(absl::StrFormat(
      "planned prefix reuse: %.1f%% of prompt tokens (%d of %d repeat, in blocks of %d tokens, "
      "a prefix sent earlier in the plan: what an unbounded prefix cache would hit)",
      100.0 * r.share(), r.shared_tokens, r.prompt_tokens, block));
}

// The plan's warnings and log lines (its traffic's description), and its
// prefix reuse.
absl::Status LogPlan(const RunConfig& config, Prepared* p) {
  for (const std::string& w : PlanWarnings(p->plan)) LogWarning(w);
  for (size_t c = 0; c < p->plan.classes.size(); ++c) {
    for (const std::string& w : PlanWarnings(coordinator::ClassSubPlan(p->plan, c))) {
      LogWarning(absl::StrCat("class ", p->plan.classes[c].name, ": ", w));
    }
  }
  const coordinator::TrafficDescription& traffic = p->plan.traffic.description;
  if (!traffic.log_intro.empty()) LogInfo(traffic.log_intro);
  const std::string what = p->sessions == nullptr
                               ? absl::StrCat(p->plan.size(), " requests")
                               : absl::StrCat(p->plan.size(), " session starts (",
                                              p->session_shape.think_ns.size(), " turns)");
  LogInfo(absl::StrFormat("plan: %s, seed %d, %s", what, config.seed(), traffic.log_line));
  LogPlannedReuse(config, p);
  return absl::OkStatus();
}

// The dataset's file stem and the plan of `p`'s payloads (the plan file's,
// for an exact replay). Errors: INVALID_ARGUMENT.
absl::Status PlanFromPayloads(const RunConfig& config, const fs::path& plan_file, bool big,
                              Prepared* p) {
  // The stem names files in the run folder: never a path.
  p->dataset = SafeFileName(p->payloads->name());
  if (big) LogInfo("large plan: computing the schedule");
  auto plan = BuildPlan(config, *p->payloads);
  if (!plan.ok()) return plan.status();
  p->plan = *std::move(plan);
  if (!plan_file.empty()) return UsePlanFile(config, plan_file, &p->plan);
  return absl::OkStatus();
}

// Multi-turn sessions (docs/SESSIONS.md): the sessions, and the plan of
// their starts (the plan file's, for an exact replay), whose payloads are
// the sessions' first turns. Errors: INVALID_ARGUMENT.
absl::Status MakeSessionsAndPlan(const RunConfig& config, const fs::path& plan_file, Prepared* p) {
  auto sessions = coordinator::MakeSessionSource(config.dataset(), config.sessions(),
                                                 config.num_prompts(), config.seed());
  if (!sessions.ok()) return AsConfigError(sessions.status());
  p->sessions = *std::move(sessions);
  p->payloads = coordinator::MakeSessionStartPayloads(*p->sessions);
  p->session_shape = coordinator::ShapeOf(*p->sessions);
  for (const auto& w : p->payloads->warnings()) LogWarning(w);
  if (!config.dataset().tokenizer().empty()) {
    LogWarning(
        "--tokenizer: the turns of a session are sized by the estimate (4 characters per "
        "token), not fitted");
  }
  if (absl::Status s = PlanFromPayloads(config, plan_file, /*big=*/false, p); !s.ok()) return s;
  // The plan is the sessions' starts: both pages say so in their title.
  coordinator::TrafficDescription& d = p->plan.traffic.description;
  d.short_title = absl::StrCat("Session Starts | ", d.short_title);
  return absl::OkStatus();
}

// Payloads and plan (the plan file's, for an exact replay), with their log
// lines, which the plan's traffic description gives. Errors:
// INVALID_ARGUMENT.
absl::Status MakePayloadsAndPlan(const RunConfig& config, const fs::path& plan_file, bool big,
                                 Prepared* p) {
  if (config.classes_size() > 0) {
    if (absl::Status s = MakeClassPayloadsAndPlan(config, plan_file, p); !s.ok()) return s;
    return LogPlan(config, p);
  }
  if (config.sessions().multi_turn()) {
    if (absl::Status s = MakeSessionsAndPlan(config, plan_file, p); !s.ok()) return s;
    return LogPlan(config, p);
  }
  auto payloads = MakePayloadSource(config.dataset(), config.num_prompts(), config.seed());
  if (!payloads.ok()) return AsConfigError(payloads.status());
  p->payloads = *std::move(payloads);
  for (const auto& w : p->payloads->warnings()) LogWarning(w);
  // --tokenizer server / FILE.model: every prompt fitted to its exact
  // length before anything is sent.
  auto sized = coordinator::SizePrompts(config, std::move(p->payloads), RealClock());
  if (!sized.ok()) {
    return sized.status().code() == absl::StatusCode::kInvalidArgument
               ? AsConfigError(sized.status())
               : AsRuntimeFailure(sized.status());
  }
  p->payloads = *std::move(sized);
  if (absl::Status s = PlanFromPayloads(config, plan_file, big, p); !s.ok()) return s;
  return LogPlan(config, p);
}

// run_config.json: `saved` with its files by absolute path, so the saved
// configuration works from any folder; headers that may hold a secret are
// left out (and said so).
absl::Status SaveRunConfig(const RunConfig& saved, const fs::path& folder) {
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
  if (absl::Status s = WriteTextFile(json, folder / "run_config.json"); !s.ok()) return s;
  if (!left_out.empty()) {
    LogInfo(absl::StrCat("run_config.json leaves out header(s) ", absl::StrJoin(left_out, ", "),
                         " (may hold a secret): give them again with --header"));
  }
  return absl::OkStatus();
}

// The plan CSV's progress for a big plan: on a terminal one line redrawn,
// else a plain line about every 10%.
std::function<void(uint64_t)> CsvProgress(uint64_t n) {
  const bool terminal = isatty(fileno(stderr)) != 0;
  return [n, terminal, next = uint64_t{0}](uint64_t done) mutable {
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

// The run folder and what goes into it before anything is sent: the
// context both pages show, run_config.json, the plan CSV and (R-PLOT-0:
// not in instant mode; said so, and why) the expected page.
absl::Status WriteRunFolder(const RunConfig& config, const std::string& model,
                            const RunConfig& saved, bool big, Prepared* p) {
  const auto wall_now = RealClock().WallNow();
  auto folder = CreateRunFolder(config.output_dir(), model, wall_now);
  if (!folder.ok()) return AsRuntimeFailure(folder.status());
  p->folder = *folder;
  // The context from the saved configuration (the built-in server's port of
  // this run left out), so `surge report` shows the same from run_config.json.
  RunConfig used = saved;
  used.mutable_target()->set_model(model);
  // The start in local time with its UTC offset, and in UTC (the folder's
  // name, RunFolderStamp, is the same UTC second).
  p->started_at = FormatLocalTime(wall_now);
  p->started_at_utc = FormatUtcTime(wall_now);
  p->context = RunContextItems(used, p->plan, p->dataset, p->started_at, kSurgeVersion);
  if (absl::Status s = SaveRunConfig(saved, p->folder); !s.ok()) return AsRuntimeFailure(s);
  const std::function<void(uint64_t)> csv_progress =
      big ? CsvProgress(p->plan.size()) : std::function<void(uint64_t)>();
  if (absl::Status s = WritePlanCsv(p->plan, p->folder / (p->dataset + "_plan.csv"), csv_progress);
      !s.ok()) {
    return AsRuntimeFailure(s);
  }
  if (p->plan.traffic.instant) {
    std::cout << InstantModeNoExpectedPage(p->plan.traffic) << "\n";
    return absl::OkStatus();
  }
  if (big) LogInfo("large plan: writing the expected page");
  const fs::path page = p->folder / ExpectedPlotFileName(p->dataset);
  std::vector<coordinator::ShadedBand> bands;
  if (p->steady_state) bands.push_back(coordinator::SteadyStateBand(*p->steady_state));
  if (absl::Status s = WriteExpectedPlotPage(p->plan, page, p->context, {}, bands); !s.ok()) {
    return AsRuntimeFailure(s);
  }
  std::cout << "expected page: " << page.string() << "\n";
  return absl::OkStatus();
}

}  // namespace

std::string PlanConfigPath(const std::string& plan_file) {
  return (fs::path(plan_file).parent_path() / "run_config.json").string();
}

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

absl::StatusOr<Prepared> Prepare(const RunConfig& config, const std::string& model,
                                 const RunConfig& saved, const fs::path& plan_file) {
  Prepared p;
  // The output folder first: a plan of 10^8 requests must not be computed
  // only to find that it cannot be written.
  if (absl::Status s = CheckOutputDir(config.output_dir()); !s.ok()) return AsRuntimeFailure(s);
  // From `saved`: its base_url is empty when the built-in server serves the
  // run (whose sim_* options then count), as the user gave it.
  for (const std::string& w : ConfigWarnings(saved)) LogWarning(w);
  // A configured ramp that is inactive and would fall back to instant mode
  // is refused; then the traffic's warnings (keys a trace replay overrides,
  // an inactive ramp, instant mode).
  // With traffic classes each class's traffic is its own (and the top
  // level's is unused).
  if (config.classes_size() == 0) {
    if (absl::Status s = CheckTrafficConfig(config); !s.ok()) return AsConfigError(s);
    for (const std::string& w : TrafficWarnings(config)) LogWarning(w);
  }
  for (int c = 0; c < config.classes_size(); ++c) {
    const RunConfig one = coordinator::ClassRunConfig(config, c);
    if (absl::Status s = CheckTrafficConfig(one); !s.ok()) return AsConfigError(s);
    for (const std::string& w : TrafficWarnings(one)) {
      LogWarning(absl::StrCat("class ", config.classes(c).name(), ": ", w));
    }
  }
  const uint64_t n = config.num_prompts();
  const bool big = n >= kBigPlanRequests;
  if (big) LogBigPlanEstimate(n);
  if (absl::Status s = MakePayloadsAndPlan(config, plan_file, big, &p); !s.ok()) {
    return s;
  }
  // Warm-ups and the steady-state window, checked against the plan before
  // the folder exists.
  auto window = ResolveSteadyStateOption(config, p.plan);
  if (!window.ok()) return AsConfigError(window.status());
  p.steady_state = *window;
  auto warmups = MakeWarmups(config, p.plan);
  if (!warmups.ok()) return AsConfigError(warmups.status());
  p.warmups = *std::move(warmups);
  if (absl::Status s = WriteRunFolder(config, model, saved, big, &p); !s.ok()) return s;
  return p;
}

}  // namespace surge::app
