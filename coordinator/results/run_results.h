// The end of every run, shared by `surge run` and `surge report`: the actual
// page's inputs collected from the records, and the summary JSON, CSV,
// printed table and both pages written from them and the run's facts.
#ifndef SURGE_COORDINATOR_RESULTS_RUN_RESULTS_H_
#define SURGE_COORDINATOR_RESULTS_RUN_RESULTS_H_

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "common/time_units.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/report/reuse_figure.h"
#include "coordinator/report/rps_figure.h"
#include "coordinator/report/session_figure.h"
#include "coordinator/results/class_summary.h"
#include "coordinator/results/record_sink.h"
#include "coordinator/results/summary.h"
#include "coordinator/telemetry/server_metrics.h"
#include "surge/v1/record.pb.h"
#include "surge/v1/run_facts.pb.h"

namespace surge::coordinator {

// TTFT and E2EL from actual vs from planned send, for the actual page's
// latency table: the summary's numbers (the page computes none).
std::vector<LatencyView> LatencyViews(const RunSummary& s);

// The send lateness p50/p90/p99/max for the actual page's lateness chart:
// the summary's numbers, like LatencyViews.
SendLatenessPercentiles SendLateness(const RunSummary& s);

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
    if (r.warmup()) {
      // Not in the rate: only the stretch their sends took, a band before 0.
      if (r.sent()) {
        const double at_s = NanosToSeconds(r.sent_ns());
        warmup_first_s_ = std::min(warmup_first_s_, at_s);
        warmup_last_s_ = std::max(warmup_last_s_, at_s);
        ++warmup_sent_;
      }
      return;
    }
    // A session's start is its plan request; every turn sent is a sample
    // of the sessions' charts (docs/SESSIONS.md).
    const uint64_t p = r.in_session() ? r.session() : r.index();
    if (r.sent() && p < plan_size_ && (!r.in_session() || r.turn() == 0)) {
      sends_.push_back(ActualSend{p, NanosToSeconds(r.sent_ns())});
    }
    if (r.in_session() && r.sent()) {
      turns_.push_back({NanosToSeconds(r.sent_ns()), r.turn(),
                        r.status() == surge::v1::OK ? NanosToSeconds(r.ttft_ns()) : 0.0});
    }
    const double when_s = NanosToSeconds(r.sent() ? r.sent_ns() : r.released_ns());
    if (!r.in_session() || r.turn() == 0) {  // marks sit on the plan's requests
      if (r.status() == surge::v1::SKIPPED) {
        late_marks_.push_back({p, LateMark::Kind::kSkipped, NanosToSeconds(r.planned_ns())});
      }
      if (r.late()) late_marks_.push_back({p, LateMark::Kind::kLate, when_s});
      if (r.catch_up_delay_ns() > 0) late_marks_.push_back({p, LateMark::Kind::kDelayed, when_s});
    }
    // The reuse chart's points: 16 bytes per request whose server reported
    // cached tokens (none otherwise).
    if (r.status() == surge::v1::OK && r.cached_tokens_reported()) {
      reuse_.push_back({NanosToSeconds(r.sent_ns()), r.cached_tokens(), r.input_tokens()});
    }
  }
  const std::vector<ActualSend>& sends() const { return sends_; }
  const std::vector<LateMark>& late_marks() const { return late_marks_; }
  // Warm-ups sent, and the first and last of their send times, seconds
  // after t0 (+inf / -inf when none was sent).
  uint64_t warmup_sent() const { return warmup_sent_; }
  double warmup_first_s() const { return warmup_first_s_; }
  double warmup_last_s() const { return warmup_last_s_; }
  const std::vector<ReuseSample>& reuse_samples() const { return reuse_; }
  // Every session turn sent (empty without sessions).
  const std::vector<TurnSample>& turn_samples() const { return turns_; }

 private:
  uint64_t plan_size_;
  uint64_t warmup_sent_ = 0;
  double warmup_first_s_ = std::numeric_limits<double>::infinity();
  double warmup_last_s_ = -std::numeric_limits<double>::infinity();
  std::vector<ActualSend> sends_;
  std::vector<LateMark> late_marks_;
  std::vector<ReuseSample> reuse_;
  std::vector<TurnSample> turns_;
};

// The summary JSON, the CSV, the printed table and the actual page (and,
// after a stop or for `surge report`, the expected page again): the end of
// `surge run` and all of `surge report`. Failures are logged, not fatal: the
// details file stays the source of truth.
//
// `facts` is the run block before the records are summarized; its schedule
// is completed here with the run's lateness p99 (FinishSchedule). How the
// run ended (stop_reason, e.g. "interrupted by the user at 4.97 s";
// "completed" for a normal end) goes on the pages and under the printed
// table, as do the worker-loss counts when not zero, and each lost worker (a
// line under the table, a red line on the actual page's time axes).
//
// `classes` (a run with traffic classes, class_summary.h): a block per class
// in the summary JSON ("classes"), the CSV and under the printed table.
//
// `server_metrics` (a run with --server-metrics): the folder's
// {dataset}_server_metrics.jsonl is read back into the summary JSON's
// `server_metrics` block, a console line and the actual page's server
// traces (server_metrics_results.h); null = none.
void WriteRunResults(const std::filesystem::path& folder, const std::string& dataset,
                     const ArrivalSchedule& plan, RunSummary summary, const ActualPageInputs& page,
                     surge::v1::RunFacts facts, const PageContext& page_context,
                     const std::vector<ClassSummary>& classes = {},
                     const ServerMetricsSource* server_metrics = nullptr);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_RUN_RESULTS_H_
