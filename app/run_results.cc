#include "app/run_results.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "coordinator/dispatch/lateness_monitor.h"
#include "coordinator/report/clock_summary.h"
#include "coordinator/report/plot_pages.h"
#include "coordinator/report/worker_losses.h"

namespace surge::app {

using coordinator::ActualPlotFileName;
using coordinator::ActualSend;
using coordinator::ArrivalSchedule;
using coordinator::ClockSyncText;
using coordinator::DispatchOutcome;
using coordinator::ExpectedPlotFileName;
using coordinator::FinishScheduleJson;
using coordinator::FormatSummaryTable;
using coordinator::IntendedRateRps;
using coordinator::PageContext;
using coordinator::RunEvent;
using coordinator::RunSummary;
using coordinator::ScheduleEvents;
using coordinator::ScheduleFacts;
using coordinator::ScheduleSentence;
using coordinator::SummaryToCsv;
using coordinator::SummaryToJson;
using coordinator::WorkerLoss;
using coordinator::WorkerLossEvents;
using coordinator::WorkerLossJson;
using coordinator::WriteActualPlotPage;
using coordinator::WriteExpectedPlotPage;
using coordinator::WriteJsonFile;
using coordinator::WriteTextFile;

namespace fs = std::filesystem;
using surge::v1::RunConfig;

std::vector<coordinator::LatencyView> LatencyViews(const RunSummary& s) {
  auto p = [](const coordinator::MetricStats& m) {
    return coordinator::LatencyPercentiles{m.p50, m.p90, m.p99};
  };
  return {{"TTFT", s.ttft_s.count, p(s.ttft_s), p(s.ttft_from_planned_s)},
          {"E2EL", s.e2el_s.count, p(s.e2el_s), p(s.e2el_from_planned_s)}};
}

void WriteRunResults(const fs::path& folder, const std::string& dataset,
                     const ArrivalSchedule& plan, RunSummary summary, const ActualPageInputs& page,
                     const nlohmann::json& context_in, const PageContext& page_context) {
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

nlohmann::json WorkerLossesJson(const absl::StatusOr<DispatchOutcome>& outcome) {
  nlohmann::json out = nlohmann::json::array();
  if (!outcome.ok()) return out;
  for (const WorkerLoss& l : outcome->worker_losses) {
    out.push_back(
        WorkerLossJson(l.worker, l.at_ns, l.why, l.send_unknown, l.not_sent, l.reassigned));
  }
  return out;
}

}  // namespace surge::app
