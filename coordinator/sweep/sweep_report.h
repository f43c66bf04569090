// A sweep's results (docs/CAPACITY.md "Files"): its points, the answer to
// the capacity question, and the files that hold them: sweep.json (read
// back by a resumed sweep) and sweep.csv, written again after every point
// so that an interrupted sweep leaves everything it ran readable.
#ifndef SURGE_COORDINATOR_SWEEP_SWEEP_REPORT_H_
#define SURGE_COORDINATOR_SWEEP_SWEEP_REPORT_H_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/sweep/slo_search.h"
#include "coordinator/sweep/sweep_point.h"
#include "nlohmann/json.hpp"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

struct SweepReport {
  // The sweep's own options and its objective (the goodput SLOs as the run
  // configuration has them, and the fraction).
  surge::v1::SweepConfig sweep;
  surge::v1::GoodputConfig goodput;
  SweepObjective objective;
  std::string started_at_utc;
  std::string surge_version;
  // In the order they ran.
  std::vector<SweepPoint> points;
  // With an objective: the highest certified rate that passed and the
  // lowest that failed (SearchAnswer), and the answer in one sentence.
  std::optional<SearchAnswer> answer;
  std::string answer_text;
  // Every planned point ran (a search: the search is over).
  bool finished = false;
};

// The answer of a sweep over a list of rates, with an objective: walking
// up the certified points by rate, the highest passing one below the first
// that fails; incomplete when an invalid point comes before that failure
// (what lies above it is unknown) or no point failed.
SearchAnswer ListAnswer(const std::vector<SweepPoint>& points, const SweepObjective& objective);

// "max rate within SLO: 37.5 RPS ± 1.9 (goodput 96.1 % at 37.5, 89.0 % at
// 39.4)", or what is known when there is no such rate.
std::string AnswerText(const SearchAnswer& answer, const std::vector<SweepPoint>& points);

// sweep.json's object and sweep.csv's text.
nlohmann::json SweepJson(const SweepReport& report);
std::string SweepCsv(const SweepReport& report);

// Writes sweep.json and sweep.csv into `folder` (each to a temporary file
// renamed into place). Errors: INTERNAL naming the file.
absl::Status WriteSweepFiles(const SweepReport& report, const std::filesystem::path& folder);

// What a resumed sweep takes from `folder`'s sweep.json: its options, its
// objective's fraction, and the entries of its finished points (number,
// rate, attempt, folder); their numbers are read again from their run
// folders. Errors: NOT_FOUND / INVALID_ARGUMENT naming sweep.json and what
// is wrong in it.
struct SavedSweep {
  surge::v1::SweepConfig sweep;
  std::vector<SweepPoint> finished;
};
absl::StatusOr<SavedSweep> ReadSavedSweep(const std::filesystem::path& folder);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_SWEEP_SWEEP_REPORT_H_
