#include "coordinator/results/run_results.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "coordinator/report/clock_summary.h"
#include "coordinator/report/plot_pages.h"
#include "coordinator/report/schedule_verdict.h"
#include "coordinator/report/shaded_bands.h"
#include "coordinator/report/worker_losses.h"
#include "coordinator/results/prefix_reuse_summary.h"
#include "coordinator/results/run_facts_json.h"
#include "coordinator/results/server_metrics_results.h"

namespace surge::coordinator {

namespace fs = std::filesystem;

std::vector<LatencyView> LatencyViews(const RunSummary& s) {
  auto p = [](const MetricStats& m) { return LatencyPercentiles{m.p50, m.p90, m.p99}; };
  return {{"TTFT", s.ttft_s.count, p(s.ttft_s), p(s.ttft_from_planned_s)},
          {"E2EL", s.e2el_s.count, p(s.e2el_s), p(s.e2el_from_planned_s)}};
}

SendLatenessPercentiles SendLateness(const RunSummary& s) {
  return {.p50_s = s.lateness_s.p50,
          .p90_s = s.lateness_s.p90,
          .p99_s = s.lateness_s.p99,
          .max_s = s.lateness_s.max};
}

namespace {

using surge::v1::RunFacts;

// "Run <stop reason>: 12 of 40 requests were sent (...)"; empty for a run
// that completed.
std::string StopNote(const RunFacts& facts, const RunSummary& summary) {
  const std::string& stop_reason = facts.stop_reason();
  if (stop_reason.empty() || stop_reason == "completed") return "";
  return absl::StrCat("Run ", stop_reason, ": ", summary.sent, " of ", summary.total,
                      " requests were sent (", summary.interrupted,
                      " of them cut off: interrupted), ", summary.not_sent, " not sent");
}

// The summary JSON and the CSV.
void WriteSummaryFiles(const fs::path& folder, const std::string& dataset,
                       const RunSummary& summary, const RunFacts& facts,
                       const std::vector<ClassSummary>& classes,
                       const std::optional<ServerMetricsResults>& server) {
  nlohmann::json json = SummaryToJson(summary, RunFactsToJson(facts));
  AddPrefixReuseJson(summary, facts, &json);
  if (!classes.empty()) json["classes"] = ClassSummariesToJson(classes);
  if (server) json["server_metrics"] = server->summary;
  if (absl::Status s = WriteJsonFile(json, folder / (dataset + ".json")); !s.ok()) {
    LogError(s.ToString());
  }
  if (absl::Status s = WriteTextFile(
          SummaryToCsv(summary) + PrefixReuseCsvRows(summary, facts) + ClassSummariesCsv(classes),
          folder / (dataset + ".csv"));
      !s.ok()) {
    LogError(s.ToString());
  }
}

// The actual page's red lines: each lost worker, and the moment the
// generator fell behind, in time order.
std::vector<RunEvent> PageEvents(const RunFacts& facts) {
  std::vector<RunEvent> events = WorkerLossEvents(facts.worker_losses());
  if (facts.has_schedule()) {
    for (RunEvent& e : ScheduleEvents(facts.schedule())) events.push_back(std::move(e));
    std::stable_sort(events.begin(), events.end(),
                     [](const RunEvent& a, const RunEvent& b) { return a.at_s < b.at_s; });
  }
  return events;
}

// The console lines under the summary table.
void PrintRunLines(const RunFacts& facts, const std::string& clock_text,
                   const std::string& schedule_text, const std::string& note) {
  if (!clock_text.empty()) std::cout << "clock sync (worker − coordinator): " << clock_text << "\n";
  if (!schedule_text.empty()) std::cout << "schedule: " << schedule_text << "\n";
  if (!note.empty()) std::cout << note << "\n";
  if (facts.workers_lost() > 0 || facts.send_unknown() > 0) {
    std::cout << "workers lost: " << facts.workers_lost() << ", reassigned: " << facts.reassigned()
              << ", send_unknown: " << facts.send_unknown()
              << " (requests possibly sent by a lost worker: status lost)";
    if (facts.workers_fenced() > 0) {
      std::cout << "; told to stop when heard again (fenced): " << facts.workers_fenced();
    }
    std::cout << "\n";
  }
  if (facts.workers_left() > 0) {
    std::cout << "workers that left on their own (a stop signal): " << facts.workers_left()
              << ", requests they handed back: " << facts.handed_back()
              << " (reassigned to the others, or not sent when already due)\n";
  }
  for (const RunEvent& e : WorkerLossEvents(facts.worker_losses())) std::cout << e.text << "\n";
}

}  // namespace

void WriteRunResults(const fs::path& folder, const std::string& dataset,
                     const ArrivalSchedule& plan, RunSummary summary, const ActualPageInputs& page,
                     RunFacts facts, const PageContext& page_context,
                     const std::vector<ClassSummary>& classes,
                     const ServerMetricsSource* server_metrics) {
  // The plan's rate, also when the run stopped early or fell behind
  // (R-MET-2): from the plan itself, not from the records that came back.
  summary.intended_rate_rps = IntendedRateRps(plan.offset_s);
  // Whether the schedule was kept, with the run's p99.
  if (facts.has_schedule()) {
    FinishSchedule(summary.lateness_s.p99, facts.mutable_schedule());
    facts.set_schedule_kept(facts.schedule().schedule_kept());
  }
  const std::string schedule_text =
      facts.has_schedule() ? ScheduleSentence(facts.schedule()) : std::string();
  const std::string note = StopNote(facts, summary);
  // The server's own metrics, scraped during the run.
  std::optional<ServerMetricsResults> server;
  if (server_metrics != nullptr) {
    server = ReadServerMetricsResults(folder, dataset, *server_metrics);
  }
  WriteSummaryFiles(folder, dataset, summary, facts, classes, server);
  // Warm-up and steady state: shaded on the time axes.
  std::vector<ShadedBand> steady;
  if (summary.steady_state) steady.push_back(SteadyStateBand(*summary.steady_state));
  std::vector<ShadedBand> actual_bands =
      WarmupBands(page.warmup_sent(), page.warmup_first_s(), page.warmup_last_s());
  actual_bands.insert(actual_bands.end(), steady.begin(), steady.end());
  // The expected page is written before the run; after a stop it is
  // written again with the same note (and `surge report` rebuilds it).
  if (!plan.traffic.instant && (!note.empty() || facts.rebuilt_by_report())) {
    if (absl::Status s = WriteExpectedPlotPage(plan, folder / ExpectedPlotFileName(dataset),
                                               page_context, note, steady);
        !s.ok()) {
      LogError(s.ToString());
    }
  }
  // The actual page also says how well the workers' clocks were aligned.
  PageContext actual_context = page_context;
  const std::string clock_text = ClockSyncText(facts.clock_sync());
  if (!clock_text.empty()) {
    actual_context.push_back({"Clock sync (worker − coordinator)", clock_text});
  }
  if (!schedule_text.empty()) actual_context.push_back({"Schedule", schedule_text});
  ReuseSeries reuse{.samples = page.reuse_samples(), .planned_reuse = std::nullopt};
  if (facts.has_prefix_reuse()) reuse.planned_reuse = facts.prefix_reuse().planned_reuse();
  if (absl::Status s = WriteActualPlotPage(
          plan, page.sends(), folder / ActualPlotFileName(dataset), actual_context, note,
          PageEvents(facts), LatencyViews(summary), page.late_marks(), SendLateness(summary),
          actual_bands, &reuse, server ? &server->series : nullptr,
          page.turn_samples().empty() ? nullptr : &page.turn_samples());
      !s.ok()) {
    LogError(s.ToString());
  }
  std::cout << FormatSummaryTable(summary) << PrefixReuseLines(summary, facts)
            << FormatClassSummaries(classes);
  if (server) std::cout << server->console_line << "\n";
  PrintRunLines(facts, clock_text, schedule_text, note);
}

}  // namespace surge::coordinator
