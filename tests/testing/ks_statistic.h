// The one-sample Kolmogorov–Smirnov statistic the plan tests check sampled
// intervals with, and its critical value.
#ifndef SURGE_TESTS_TESTING_KS_STATISTIC_H_
#define SURGE_TESTS_TESTING_KS_STATISTIC_H_

#include <algorithm>
#include <functional>
#include <vector>

namespace surge::testing {

// Kolmogorov–Smirnov statistic D_n of `xs` against `cdf`.
inline double KsStatistic(std::vector<double> xs, const std::function<double(double)>& cdf) {
  std::sort(xs.begin(), xs.end());
  const double n = static_cast<double>(xs.size());
  double d = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double f = cdf(xs[i]);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  return d;
}

// √n·D_n above 1.95 has probability about 0.001 under the null (the
// Kolmogorov distribution's 99.9 % quantile); the tests' seeds are fixed.
inline constexpr double kKsCritical = 1.95;

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_KS_STATISTIC_H_
