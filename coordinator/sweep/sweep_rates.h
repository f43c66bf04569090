// The rates of a sweep's points and the SLO search's resolution, from
// `surge sweep`'s options (SweepConfig; docs/CAPACITY.md). Pure.
#ifndef SURGE_COORDINATOR_SWEEP_SWEEP_RATES_H_
#define SURGE_COORDINATOR_SWEEP_SWEEP_RATES_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// The lowest rate a point may have, requests/s: below it `surge run` sends
// everything at once (instant mode), which is not a load point.
inline constexpr double kMinSweepRateRps = 0.1;

// A rate as people write it, requests/s: four significant digits, whole
// numbers from 1000 on ("25.68", "20000", not "2e+04").
std::string RateText(double rps);

// The points' rates, increasing: `request_rates` ("2,4,8,16"), or
// sweep_steps rates from sweep_start to sweep_end (both included; equal
// steps, or equal ratios with sweep_scale "geometric"). With slo_search
// the list may be empty (the search picks its rates). Errors
// (INVALID_ARGUMENT naming the flag): a list that is empty, not numbers,
// not increasing, or with a rate below kMinSweepRateRps; both a list and a
// range; a range without all three of start, end and steps, or with
// end <= start; neither a list nor a range (without slo_search).
absl::StatusOr<std::vector<double>> SweepRates(const surge::v1::SweepConfig& sweep);

// The search's stopping gap: a share of the passing rate ("5%") or
// requests/s ("0.5").
struct SearchResolution {
  bool relative = true;
  double value = 0.05;
  // The largest gap allowed between a passing rate `lo` and a failing one.
  double GapRps(double lo) const { return relative ? value * lo : value; }
};
// Errors: INVALID_ARGUMENT naming --search-resolution (not a number > 0,
// or a share not below 100 %).
absl::StatusOr<SearchResolution> ParseSearchResolution(std::string_view text);

// Checks the options together: --slo-search needs --goodput (`has_goodput`),
// and the rates and the resolution must parse. Every problem in one
// INVALID_ARGUMENT, one per line.
absl::Status CheckSweepConfig(const surge::v1::SweepConfig& sweep, bool has_goodput);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_SWEEP_SWEEP_RATES_H_
