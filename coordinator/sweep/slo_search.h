// The SLO search of `surge sweep --slo-search` (docs/CAPACITY.md "SLO
// search"): the highest rate whose point passes the objective, found with
// points that surge certified. Pure: it proposes rates and is told how
// each point ended.
//
//  1. Bracket: from the start rate, double while points pass; when the
//     start already fails, halve until one passes (not below 0.1 RPS).
//  2. Bisect between the highest passing rate lo and the lowest failing
//     rate hi until hi - lo <= the resolution's gap at lo.
// A point surge could not keep (invalid) says nothing about the server:
// the search ends there, and lo is only a lower bound. So does reaching
// the most points allowed.
#ifndef SURGE_COORDINATOR_SWEEP_SLO_SEARCH_H_
#define SURGE_COORDINATOR_SWEEP_SLO_SEARCH_H_

#include <cstdint>
#include <optional>
#include <string>

#include "coordinator/sweep/sweep_rates.h"

namespace surge::coordinator {

enum class PointOutcome {
  kPass,     // certified, and the objective held
  kFail,     // certified (or saturated), and the objective failed
  kInvalid,  // surge did not keep the point's schedule
};

struct SearchAnswer {
  // The highest passing rate and the lowest failing one, requests/s; unset
  // when no point passed (or failed).
  std::optional<double> max_rate_rps;
  std::optional<double> min_failing_rps;
  // The search ended as its rules say (bracketed and bisected to the
  // resolution); false when an invalid point or the points limit ended it.
  bool complete = false;
  // Why it is not complete; empty when it is.
  std::string incomplete_reason;
};

class SloSearch {
 public:
  SloSearch(double start_rps, const SearchResolution& resolution, uint32_t max_points);

  // The next rate to run; nothing when the search is over.
  std::optional<double> Next() const;
  // How the point at `rate_rps` (the last Next()) ended; `why` names the
  // cause of an invalid point.
  void Report(double rate_rps, PointOutcome outcome, const std::string& why = "");
  const SearchAnswer& answer() const { return answer_; }
  uint32_t points() const { return points_; }

 private:
  void Settle();

  double start_rps_;
  SearchResolution resolution_;
  uint32_t max_points_;
  uint32_t points_ = 0;
  bool over_ = false;
  SearchAnswer answer_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_SWEEP_SLO_SEARCH_H_
