// The end of `surge run` and all of `surge report`: the actual page's inputs
// collected from the records, and the summary JSON, CSV, printed table and
// both pages written from them.
#ifndef SURGE_APP_RUN_RESULTS_H_
#define SURGE_APP_RUN_RESULTS_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/time_units.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/report/rps_figure.h"
#include "coordinator/report/schedule_verdict.h"
#include "coordinator/results/record_sink.h"
#include "coordinator/results/summary.h"
#include "nlohmann/json.hpp"
#include "surge/v1/config.pb.h"
#include "surge/v1/record.pb.h"

namespace surge::app {

// TTFT and E2EL from actual vs from planned send, for the actual page's
// latency table: the summary's numbers (the page computes none).
std::vector<coordinator::LatencyView> LatencyViews(const coordinator::RunSummary& s);

// The actual page's inputs, collected as records arrive (a sink): the (plan
// index, actual send offset) of each sent request — 16 bytes per request,
// not the records themselves — and the late-send policy's marks
// (docs/DESIGN.md "Late-send policy").
class ActualPageInputs : public coordinator::RecordSink {
 public:
  explicit ActualPageInputs(uint64_t plan_size) : plan_size_(plan_size) {
    sends_.reserve(plan_size);
  }
  void Add(const surge::v1::RequestRecord& r) override {
    if (r.sent() && r.index() < plan_size_) {
      sends_.push_back(coordinator::ActualSend{r.index(), NanosToSeconds(r.sent_ns())});
    }
    const double when_s = NanosToSeconds(r.sent() ? r.sent_ns() : r.released_ns());
    if (r.status() == surge::v1::SKIPPED) {
      late_marks_.push_back(
          {r.index(), coordinator::LateMark::Kind::kSkipped, NanosToSeconds(r.planned_ns())});
    }
    if (r.late()) late_marks_.push_back({r.index(), coordinator::LateMark::Kind::kLate, when_s});
    if (r.catch_up_delay_ns() > 0) {
      late_marks_.push_back({r.index(), coordinator::LateMark::Kind::kDelayed, when_s});
    }
  }
  const std::vector<coordinator::ActualSend>& sends() const { return sends_; }
  const std::vector<coordinator::LateMark>& late_marks() const { return late_marks_; }

 private:
  uint64_t plan_size_;
  std::vector<coordinator::ActualSend> sends_;
  std::vector<coordinator::LateMark> late_marks_;
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
void WriteRunResults(const std::filesystem::path& folder, const std::string& dataset,
                     const coordinator::ArrivalSchedule& plan, coordinator::RunSummary summary,
                     const ActualPageInputs& page, const nlohmann::json& context_in,
                     const coordinator::PageContext& page_context);

// The lateness monitor's verdict as report facts (run.schedule).
coordinator::ScheduleFacts ScheduleFactsOf(
    const absl::StatusOr<coordinator::DispatchOutcome>& outcome,
    const surge::v1::RunConfig& config);

// run.worker_losses: one object per lost worker (WorkerLossJson).
nlohmann::json WorkerLossesJson(const absl::StatusOr<coordinator::DispatchOutcome>& outcome);

}  // namespace surge::app

#endif  // SURGE_APP_RUN_RESULTS_H_
