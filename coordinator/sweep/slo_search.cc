#include "coordinator/sweep/slo_search.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {

SloSearch::SloSearch(double start_rps, const SearchResolution& resolution, uint32_t max_points)
    : start_rps_(std::max(start_rps, kMinSweepRateRps)),
      resolution_(resolution),
      max_points_(max_points) {}

std::optional<double> SloSearch::Next() const {
  if (over_) return std::nullopt;
  const std::optional<double>& lo = answer_.max_rate_rps;
  const std::optional<double>& hi = answer_.min_failing_rps;
  if (!lo && !hi) return start_rps_;
  if (lo && !hi) return 2 * *lo;  // bracket up
  if (!lo) return *hi / 2;        // bracket down
  return (*lo + *hi) / 2;         // bisect
}

void SloSearch::Report(double rate_rps, PointOutcome outcome, const std::string& why) {
  ++points_;
  switch (outcome) {
    case PointOutcome::kPass:
      answer_.max_rate_rps = std::max(answer_.max_rate_rps.value_or(rate_rps), rate_rps);
      break;
    case PointOutcome::kFail:
      answer_.min_failing_rps = std::min(answer_.min_failing_rps.value_or(rate_rps), rate_rps);
      break;
    case PointOutcome::kInvalid:
      over_ = true;
      answer_.incomplete_reason = absl::StrFormat(
          "surge could not keep the point at %s RPS (%s); a higher rate needs "
          "more load-generator capacity (--workers, more machines)",
          RateText(rate_rps), why.empty() ? "its certificate failed" : why);
      return;
  }
  Settle();
}

// Ends the search when its rules are met, or when the points run out.
void SloSearch::Settle() {
  const std::optional<double>& lo = answer_.max_rate_rps;
  const std::optional<double>& hi = answer_.min_failing_rps;
  if (lo && hi && *lo >= *hi) {
    over_ = true;  // a pass above a failure: the objective is not monotone in the rate
    answer_.incomplete_reason = absl::StrFormat(
        "%s RPS passed above %s RPS, which failed: the objective does not fall with the "
        "rate here (a noisy server or too short points; --sweep-point-s)",
        RateText(*lo), RateText(*hi));
    return;
  }
  if (lo && hi && *hi - *lo <= resolution_.GapRps(*lo)) {
    over_ = answer_.complete = true;
    return;
  }
  if (!lo && hi && *hi / 2 < kMinSweepRateRps) {
    over_ = answer_.complete = true;  // even the lowest paced rate fails
    return;
  }
  if (points_ >= max_points_) {
    over_ = true;
    answer_.incomplete_reason =
        absl::StrCat("the search used its ", max_points_, " points (--search-max-points)");
  }
}

}  // namespace surge::coordinator
