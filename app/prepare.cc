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
#include "coordinator/plan/arrival_process.h"
#include "coordinator/plan/replay_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/report/plot_pages.h"
#include "coordinator/report/run_context.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"

namespace surge::app {

using coordinator::Anomaly;
using coordinator::CheckOutputDir;
using coordinator::CheckTraffic;
using coordinator::ConfigWarnings;
using coordinator::CreateRunFolder;
using coordinator::ExpectedPlotFileName;
using coordinator::FormatLocalTime;
using coordinator::kInstantModeBelowRps;
using coordinator::MakePayloadSource;
using coordinator::RampStrategyTitle;
using coordinator::ReadPlanCsv;
using coordinator::ResolvedTraffic;
using coordinator::ResolveReplayTraffic;
using coordinator::ResolveTraffic;
using coordinator::RunContextItems;
using coordinator::RunStartFromFolder;
using coordinator::SafeFileName;
using coordinator::SavedConfigJson;
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

}  // namespace

absl::StatusOr<Prepared> Prepare(const RunConfig& config, const std::string& model,
                                 const RunConfig& saved, int* exit_code,
                                 const fs::path& plan_file) {
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
    if (t.stages_size() > 0) ignored.push_back("traffic_cfg.stages");
    if (t.spikes_size() > 0) ignored.push_back("traffic_cfg.spikes");
    if (!t.sampler().empty()) ignored.push_back("traffic_cfg.sampler");
    if (!ignored.empty()) {
      LogWarning(absl::StrCat("trace replay: the trace's timestamps set the schedule, so ",
                              absl::StrJoin(ignored, ", "),
                              " (flags --request-rate, "
                              "--burstiness, --ramp-up-*) are ignored"));
    }
  } else {
    // A configured ramp that is inactive and would fall back to instant mode
    // is refused (validation does it too; this keeps the rule in one place).
    if (absl::Status s = CheckTraffic(traffic, config.num_prompts()); !s.ok()) {
      *exit_code = kExitConfigError;
      return s;
    }
    for (const auto& w : traffic.warnings) LogWarning(w);  // R-RAMP: one warning
    if (traffic.instant) {
      // R-INST is the seed's rule, but never silent: say how many go at once.
      LogWarning(absl::StrCat(
          "request_rate ", traffic.request_rate_rps,
          std::isinf(traffic.request_rate_rps) ? std::string()
                                               : absl::StrCat(" < ", kInstantModeBelowRps),
          ": instant mode, all ", config.num_prompts(), " requests are sent at once",
          config.max_concurrency() > 0
              ? absl::StrCat(" (at most ", config.max_concurrency(), " in flight)")
              : std::string(),
          "; give --request-rate (>= 0.1) or a ramp-up for paced traffic"));
    }
  }
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
    if (replay) from_file->traffic = ResolveReplayTraffic(from_file->offset_s);
    LogInfo(
        absl::StrCat("exact replay of ", plan_file.string(), ": ", from_file->size(), " requests, ",
                     differ == 0 ? std::string("every offset equal to the configuration's own plan")
                                 : absl::StrCat(differ,
                                                " offsets differ from the configuration's own plan "
                                                "(an edited plan: sent as written)")));
    p.plan = *std::move(from_file);
  }
  // A small β that does not collapse the plan can still turn most of it into
  // bursts; said plainly when intervals of 2 ms and more were to be expected.
  if (!replay && !traffic.instant && traffic.burstiness > 0 && traffic.target_rate_rps < 500 &&
      p.plan.size() >= 10) {
    const size_t timing = p.plan.Count(Anomaly::kTiming);
    if (2 * timing >= p.plan.size()) {
      LogWarning(absl::StrFormat(
          "burstiness %g: %d of %d planned intervals are under 1 ms (timing anomalies), so the "
          "requests go out in bursts rather than at about %g RPS; a larger burstiness (0.5 is "
          "already bursty, 1 = Poisson) spreads them",
          traffic.burstiness, timing, p.plan.size(), traffic.target_rate_rps));
    }
  }
  if (replay) {
    traffic = p.plan.traffic;
    LogInfo(absl::StrFormat(
        "trace replay: %d requests over %g s (time scale %g), mean rate %g RPS, first request "
        "at offset 0",
        p.plan.size(), p.plan.offset_s.back(),
        config.dataset().has_trace_time_scale() ? config.dataset().trace_time_scale() : 1.0,
        traffic.target_rate_rps));
  }
  if (traffic.profile != nullptr) {
    LogInfo(absl::StrFormat(
        "plan: %d requests, seed %d, traffic %s (expected %.0f requests over "
        "%g s, mean %g RPS, peak %g RPS)",
        p.plan.size(), config.seed(), (*process)->Title(), traffic.profile->TotalCount(),
        traffic.profile->DurationS(), traffic.request_rate_rps, traffic.target_rate_rps));
  } else {
    LogInfo(absl::StrFormat(
        "plan: %d requests, seed %d, target rate %g RPS%s, burstiness %g%s", p.plan.size(),
        config.seed(), traffic.target_rate_rps,
        traffic.ramp_active
            ? absl::StrCat(" (", std::string(RampStrategyTitle(traffic.strategy)), " ramp-up ",
                           traffic.ramp_start_rps, "->", traffic.ramp_end_rps, ")")
            : std::string(),
        traffic.burstiness, traffic.instant ? ", instant mode" : ""));
  }

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
  if (!traffic.instant) {
    if (big) LogInfo("large plan: writing the expected page");
    const fs::path page = p.folder / ExpectedPlotFileName(p.dataset);
    if (absl::Status s = WriteExpectedPlotPage(p.plan, page, p.context); !s.ok()) return s;
    std::cout << "expected page: " << page.string() << "\n";
  } else {
    std::cout << InstantModeNoExpectedPage(traffic) << "\n";
  }
  return p;
}

}  // namespace surge::app
