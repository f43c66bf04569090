#include "app/sweep_command.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "app/exit_codes.h"
#include "app/run_command.h"
#include "common/atomic_file.h"
#include "common/cpu_budget.h"
#include "common/log.h"
#include "common/version.h"
#include "coordinator/config/run_config.h"
#include "coordinator/report/sweep_page.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"
#include "coordinator/sweep/slo_search.h"
#include "coordinator/sweep/sweep_point.h"
#include "coordinator/sweep/sweep_rates.h"
#include "coordinator/sweep/sweep_report.h"

namespace surge::app {
namespace {

namespace fs = std::filesystem;
using coordinator::PointOutcome;
using coordinator::PointStatus;
using coordinator::SweepPoint;
using surge::v1::RunConfig;
using surge::v1::SweepConfig;

// A sweep varies one constant rate: options that make the rate vary, or
// take it from elsewhere, cannot be swept. Errors: INVALID_ARGUMENT naming
// each.
absl::Status CheckSweepable(const RunConfig& c) {
  std::vector<std::string> problems;
  const auto& t = c.traffic_cfg();
  if (c.classes_size() > 0) {
    problems.push_back(
        "classes: a sweep sets one request rate per point; traffic classes have "
        "their own (sweep one class at a time)");
  }
  if (t.has_ramp_up_strategy() || t.stages_size() > 0 || t.spikes_size() > 0) {
    problems.push_back(
        "--ramp-up-strategy/--stage/--spike: a sweep runs each point at one "
        "constant target rate; leave the rate's shape out");
  }
  if (c.dataset().trace_replay()) {
    problems.push_back(
        "--trace-replay: a trace's own timestamps set its rate; a sweep needs "
        "the generated schedule");
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

std::string RateName(double rate) { return absl::StrFormat("%.6g", rate); }

class Sweep {
 public:
  Sweep(const RunConfig& config, const SweepConfig& sweep, const std::string& self_exe)
      : config_(config), sweep_(sweep), self_exe_(self_exe) {}

  absl::Status Run();

 private:
  absl::Status Prepare();
  absl::Status LoadResumed();
  absl::Status RunList(const std::vector<double>& rates);
  absl::Status RunSearch(const std::vector<double>& rates);
  // The point at `rate`: a finished one of the resumed sweep, else a run
  // (and, with --sweep-retry-invalid, a second one for an invalid point).
  absl::StatusOr<SweepPoint> Point(double rate, int planned_total);
  absl::StatusOr<SweepPoint> RunPoint(double rate, int attempt, uint32_t workers);
  absl::StatusOr<SweepPoint> Retry(SweepPoint first, int planned_total);
  void Progress(const SweepPoint& p, int planned_total) const;
  absl::Status Save();
  void Answer();

  RunConfig config_;
  SweepConfig sweep_;
  const std::string self_exe_;
  fs::path folder_;
  std::vector<SweepPoint> resumed_;
  coordinator::SweepReport report_;
  // The last point's run status (an interruption's carries its signal).
  absl::Status last_run_;
};

absl::Status Sweep::Prepare() {
  report_.sweep = sweep_;
  report_.goodput = config_.goodput();
  report_.objective.has_goodput = coordinator::HasGoodputObjective(config_.goodput());
  report_.objective.goodput_fraction = sweep_.goodput_fraction();
  report_.surge_version = kSurgeVersion;
  report_.started_at_utc = coordinator::FormatUtcTime(std::chrono::system_clock::now());
  if (!sweep_.resume().empty()) {
    LogInfo(absl::StrCat("resuming the sweep in ", folder_.string(), ": ", resumed_.size(),
                         " finished points kept"));
    return absl::OkStatus();
  }
  if (absl::Status s = coordinator::CheckOutputDir(config_.output_dir()); !s.ok()) {
    return AsConfigError(s);
  }
  folder_ = fs::path(config_.output_dir()) /
            ("sweep_" + coordinator::RunFolderStamp(std::chrono::system_clock::now()));
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("cannot create ", folder_.string(), ": ", ec.message()));
  // The run options, as --config reads them back: what --resume starts from.
  const std::string saved = coordinator::SavedConfigJson(config_, nullptr);
  if (absl::Status s = WriteFileAtomically(folder_ / "run_config.json", {saved}); !s.ok()) {
    return s;
  }
  return Save();
}

// A resumed sweep's own options are those it saved (the folder stays).
absl::Status Sweep::LoadResumed() {
  folder_ = sweep_.resume();
  absl::StatusOr<coordinator::SavedSweep> saved = coordinator::ReadSavedSweep(folder_);
  if (!saved.ok()) return AsConfigError(saved.status());
  sweep_ = saved->sweep;
  sweep_.set_resume(folder_.string());
  resumed_ = saved->finished;
  return absl::OkStatus();
}

absl::StatusOr<SweepPoint> Sweep::RunPoint(double rate, int attempt, uint32_t workers) {
  const int number = static_cast<int>(report_.points.size()) + 1;
  RunConfig point = config_;
  point.set_request_rate(rate);
  if (sweep_.sweep_point_s() > 0) {
    point.set_num_prompts(std::max<uint64_t>(1, std::llround(rate * sweep_.sweep_point_s())));
  }
  if (workers > 0) point.set_workers(workers);
  const std::string name =
      absl::StrFormat("point_%02d_%srps%s", number, RateName(rate), attempt > 0 ? "_retry" : "");
  point.set_output_dir((folder_ / name).string());
  point.set_stop_on_saturation(true);
  point.set_stop_on_alarm(true);
  LogInfo(absl::StrFormat("sweep point %d: %s RPS, %d requests%s", number, RateName(rate),
                          point.num_prompts(), attempt > 0 ? " (again, more workers)" : ""));
  RunJobResult result;
  const absl::Status status = RunLocally(point, self_exe_, &result);
  last_run_ = status;
  if (status.code() == absl::StatusCode::kInvalidArgument) return status;
  if (result.folder.empty()) {
    return status.ok() ? absl::InternalError("the point's run wrote no folder") : status;
  }
  const bool interrupted = status.code() == absl::StatusCode::kCancelled;
  // Stops by surge (the alarm, saturation) and lost requests are judged by
  // the certificate; other errors fail the point.
  const bool judged = status.ok() || interrupted || status.code() == absl::StatusCode::kAborted ||
                      status.code() == absl::StatusCode::kResourceExhausted ||
                      status.code() == absl::StatusCode::kDataLoss;
  absl::StatusOr<SweepPoint> p = coordinator::ReadSweepPoint(result.folder, interrupted, !judged,
                                                             std::string(status.message()));
  if (!p.ok()) return p.status();
  p->number = number;
  p->rate_rps = rate;
  p->attempt = attempt;
  p->folder = fs::relative(result.folder, folder_).string();
  return p;
}

// An invalid point once more with twice the workers, when the CPUs hold
// their busy threads: the first try goes into the report and the second is
// returned; without the CPUs, the first, saying why.
absl::StatusOr<SweepPoint> Sweep::Retry(SweepPoint first, int planned_total) {
  const CpuBudget budget = BudgetFrom(ReadCpuSources());
  const uint32_t more = 2 * std::max<uint32_t>(1, first.workers);
  if (static_cast<int>(more) * kThreadsPerWorker > budget.usable_cpus) {
    absl::StrAppend(
        &first.note,
        absl::StrFormat("; not run again: %u workers need %d CPUs, this machine has %s", more,
                        static_cast<int>(more) * kThreadsPerWorker, budget.description));
    return first;
  }
  report_.points.push_back(first);
  Progress(first, planned_total);
  return RunPoint(first.rate_rps, 1, more);
}

absl::StatusOr<SweepPoint> Sweep::Point(double rate, int planned_total) {
  for (const SweepPoint& r : resumed_) {
    if (r.rate_rps != rate) continue;
    absl::StatusOr<SweepPoint> p =
        coordinator::ReadSweepPoint(folder_ / r.folder, false, false, "");
    if (!p.ok()) break;  // its folder is gone: run it again
    p->number = static_cast<int>(report_.points.size()) + 1;
    p->rate_rps = rate;
    p->attempt = r.attempt;
    p->folder = r.folder;
    LogInfo(absl::StrCat("sweep point ", p->number, ": ", RateName(rate), " RPS finished before (",
                         r.folder, "), kept"));
    return p;
  }
  absl::StatusOr<SweepPoint> p = RunPoint(rate, 0, 0);
  if (p.ok() && p->status == PointStatus::kInvalid && sweep_.sweep_retry_invalid()) {
    return Retry(*std::move(p), planned_total);
  }
  return p;
}

void Sweep::Progress(const SweepPoint& p, int planned_total) const {
  const coordinator::RunCertificate& c = p.certificate;
  std::string total = planned_total > 0 ? absl::StrCat("/", planned_total) : "";
  std::string measured = absl::StrFormat("TTFT p99 %.4g ms", p.ttft_p99_ms);
  if (std::isfinite(p.goodput_fraction)) {
    absl::StrAppend(&measured, absl::StrFormat(", goodput %.1f %%", p.goodput_fraction * 100));
  }
  std::cout << absl::StrFormat(
                   "sweep point %d%s: %s RPS %s (%s); certificate: achieved/intended %.4f, "
                   "lateness p99 %.3g ms (limit %.3g), KS D %.3g (critical %.3g), clock ± %.3g "
                   "ms%s",
                   p.number, total, coordinator::RateText(p.rate_rps), PointStatusName(p.status),
                   measured, c.achieved_vs_intended, c.lateness_p99_ms, c.lateness_limit_ms,
                   c.ks_distance, c.ks_critical, c.clock_uncertainty_ms,
                   p.note.empty() ? "" : absl::StrCat("; ", p.note))
            << std::endl;
}

absl::Status Sweep::Save() {
  if (absl::Status s = coordinator::WriteSweepFiles(report_, folder_); !s.ok()) return s;
  return coordinator::WriteSweepPage(coordinator::SweepJson(report_), folder_ / "sweep.html");
}

// The point's end for the sweep: OK to go on, else the status it stops
// with (`run`: the point's run status).
absl::Status Ended(const SweepPoint& p, const absl::Status& run) {
  if (p.status == PointStatus::kInterrupted) return run;
  if (p.status == PointStatus::kFailed) {
    return absl::UnavailableError(absl::StrCat("sweep point ", p.number, " failed: ", p.note));
  }
  return absl::OkStatus();
}

absl::Status Sweep::RunList(const std::vector<double>& rates) {
  for (double rate : rates) {
    absl::StatusOr<SweepPoint> p = Point(rate, static_cast<int>(rates.size()));
    if (!p.ok()) return p.status();
    report_.points.push_back(*p);
    Progress(*p, static_cast<int>(rates.size()));
    if (report_.objective.has_goodput) {
      report_.answer = coordinator::ListAnswer(report_.points, report_.objective);
      report_.answer_text = coordinator::AnswerText(*report_.answer, report_.points);
    }
    if (absl::Status s = Save(); !s.ok()) return s;
    if (absl::Status s = Ended(*p, last_run_); !s.ok()) return s;
  }
  report_.finished = true;
  return Save();
}

absl::Status Sweep::RunSearch(const std::vector<double>& rates) {
  const double start = sweep_.has_search_start_rps() ? sweep_.search_start_rps()
                       : !rates.empty()              ? rates.front()
                                                     : 1.0;
  const coordinator::SearchResolution resolution =
      *coordinator::ParseSearchResolution(sweep_.search_resolution());
  coordinator::SloSearch search(start, resolution, sweep_.search_max_points());
  while (std::optional<double> rate = search.Next()) {
    absl::StatusOr<SweepPoint> p = Point(*rate, 0);
    if (!p.ok()) return p.status();
    report_.points.push_back(*p);
    Progress(*p, 0);
    if (absl::Status s = Ended(*p, last_run_); !s.ok()) {
      (void)Save();
      return s;
    }
    search.Report(*rate, coordinator::OutcomeOf(*p, report_.objective), p->note);
    report_.answer = search.answer();
    report_.answer_text = coordinator::AnswerText(*report_.answer, report_.points);
    if (absl::Status s = Save(); !s.ok()) return s;
  }
  report_.finished = true;
  return Save();
}

absl::Status Sweep::Run() {
  if (!sweep_.resume().empty()) {
    if (absl::Status s = LoadResumed(); !s.ok()) return s;
  }
  if (absl::Status s = CheckSweepable(config_); !s.ok()) return s;
  if (absl::Status s = coordinator::CheckSweepConfig(
          sweep_, coordinator::HasGoodputObjective(config_.goodput()));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Prepare(); !s.ok()) return s;
  std::cout << "sweep: " << folder_.string() << std::endl;
  const std::vector<double> rates = *coordinator::SweepRates(sweep_);
  absl::Status status = sweep_.slo_search() ? RunSearch(rates) : RunList(rates);
  if (report_.answer) std::cout << report_.answer_text << std::endl;
  std::cout << "sweep: " << (folder_ / "sweep.html").string() << std::endl;
  return status;
}

}  // namespace

int SweepCommand(const RunConfig& config, const SweepConfig& sweep, const std::string& self_exe) {
  const absl::Status status = Sweep(config, sweep, self_exe).Run();
  if (status.code() == absl::StatusCode::kCancelled) {
    std::cerr << "surge: the sweep was interrupted; `surge sweep --resume SWEEP_FOLDER` goes on\n";
  }
  return ExitWith(status);
}

}  // namespace surge::app
