// The summary of each traffic class (docs/TRAFFIC.md "Traffic classes"): the
// records of a run with classes split by record.traffic_class, each class
// summarized as a run of its own (goodput against its own objectives), with
// its intended rate from its own planned offsets. Written as the summary
// JSON's "classes" list, rows of the CSV and a table on the console. Pure
// but for nothing: the writers return text.
#ifndef SURGE_COORDINATOR_RESULTS_CLASS_SUMMARY_H_
#define SURGE_COORDINATOR_RESULTS_CLASS_SUMMARY_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/results/record_sink.h"
#include "coordinator/results/summary.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// One class's block.
struct ClassSummary {
  std::string name;
  // The model its requests named ("" = the target's).
  std::string model;
  // (N_c − 1)/span of the class's planned offsets, requests/s (NaN below 2).
  double intended_rate_rps = 0;
  // Its records summarized alone; achieved rate, lateness, TTFT/TPOT/E2EL,
  // goodput (against the class's goodput, else the top level's).
  RunSummary summary;
};

// A sink that keeps one SummaryAccumulator per class of `plan` (configured
// by `config`'s classes); records of no known class are ignored. Exact
// percentiles (no limit: a class run is held in memory like `surge report`).
class ClassSummaries : public RecordSink {
 public:
  ClassSummaries(const ArrivalSchedule& plan, const surge::v1::RunConfig& config);
  ~ClassSummaries() override;
  void Add(const surge::v1::RequestRecord& record) override;
  // The blocks, in class order (none for a plan without classes).
  std::vector<ClassSummary> Finish();

 private:
  struct Class;
  std::vector<std::unique_ptr<Class>> classes_;
};

// The summary JSON's "classes" list: per class its name, model, requests
// (total, succeeded, sent), intended_rate_rps, achieved_rate_rps,
// lateness_s / ttft_s / tpot_s / e2el_s {p50, p99, mean, count} and, when
// it has objectives, goodput {good_requests, goodput_rps}.
nlohmann::json ClassSummariesToJson(const std::vector<ClassSummary>& classes);

// The CSV's class rows after an empty line: header `Class,Model,Requests,
// Succeeded,Intended RPS,Achieved RPS,Lateness P50 (ms),Lateness P99 (ms),
// TTFT P50 (ms),TTFT P99 (ms),TPOT P50 (ms),TPOT P99 (ms),E2EL P50 (ms),
// E2EL P99 (ms),Goodput (RPS)`, one row per class. "" without classes.
std::string ClassSummariesCsv(const std::vector<ClassSummary>& classes);

// The console's table of the same, one block per class. "" without classes.
std::string FormatClassSummaries(const std::vector<ClassSummary>& classes);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_CLASS_SUMMARY_H_
