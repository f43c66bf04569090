// Exact order statistics used by summaries and pages (SPEC R-MET-2).
#ifndef SURGE_COMMON_STATS_H_
#define SURGE_COMMON_STATS_H_

#include <vector>

namespace surge {

// The p-th percentile (0 ≤ p ≤ 100) of `sorted` (ascending), by linear
// interpolation between closest ranks: position p/100·(n−1), numpy's default
// ("linear"). 1..10 → p50 5.5, p90 9.1. NaN when empty.
double PercentileOfSorted(const std::vector<double>& sorted, double p);

// Mean; NaN when empty.
double Mean(const std::vector<double>& values);

}  // namespace surge

#endif  // SURGE_COMMON_STATS_H_
