// The over-saturation rule (docs/CAPACITY.md "Saturation"): decides, from
// what the coordinator sees of a run, that the server's backlog grows
// without bound, so that a load point far above the server's capacity ends
// early instead of queueing for minutes. Pure: it reads no clock; the caller
// says what time it is (seconds after t0).
//
// Saturated at time t when, over the window [t - window_s, t], both hold:
//  1. the requests in flight rise linearly: the least-squares slope of the
//     in-flight samples is at least min_growth_share of the plan's rate
//     (and at least 0.5 requests/s), with R² >= min_inflight_r2, and the
//     samples cover the whole window;
//  2. the TTFT rises with them: over the answered requests sent in the
//     window's length before the latest one, the least-squares slope of
//     TTFT against send time is > 0 with R² >= min_ttft_r2, and the fitted
//     TTFT at the latest send is at least min_ttft_ratio times the run's
//     baseline TTFT (the median of its first kBaselineTtfts answers).
// Rule 1 alone also holds while a server far below its capacity fills up
// with long answers (in flight grows for one E2EL); rule 2 tells a queue
// apart from that: only waiting makes the TTFT grow.
#ifndef SURGE_COORDINATOR_DISPATCH_SATURATION_RULE_H_
#define SURGE_COORDINATOR_DISPATCH_SATURATION_RULE_H_

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace surge::coordinator {

struct SaturationOptions {
  // The window, s (RunConfig.saturation_window_s).
  double window_s = 10;
  // The plan's mean rate, requests/s: (N - 1) / its span.
  double plan_rate_rps = 0;
  // Rule 1: the smallest growth of the requests in flight, as a share of
  // plan_rate_rps per second, and the fit's smallest R².
  double min_growth_share = 0.05;
  double min_inflight_r2 = 0.8;
  // Rule 2: the fitted TTFT at the window's end over the baseline, and the
  // fit's smallest R².
  double min_ttft_ratio = 2.0;
  double min_ttft_r2 = 0.5;
};

// What the rule found, in numbers and in one sentence.
struct SaturationFinding {
  double at_s = 0;
  double inflight_growth_rps = 0;
  double inflight_r2 = 0;
  double ttft_baseline_s = 0;
  double ttft_end_s = 0;
  std::string text;
};

// A least-squares line through points (x, y): slope, intercept, R² (1 when
// every y is equal and the slope is 0). `points` with fewer than two
// distinct x: nothing.
struct LineFit {
  double slope = 0;
  double intercept = 0;
  double r2 = 0;
  double At(double x) const { return intercept + slope * x; }
};
std::optional<LineFit> FitLine(const std::vector<std::pair<double, double>>& points);

class SaturationRule {
 public:
  // Answers that make the baseline TTFT.
  static constexpr size_t kBaselineTtfts = 20;

  explicit SaturationRule(const SaturationOptions& options) : options_(options) {}

  // The requests in flight at `t_s`; `t_s` never goes back.
  void ObserveInflight(double t_s, double inflight);
  // An answered request: sent at `sent_s`, its TTFT `ttft_s` (any order).
  void ObserveTtft(double sent_s, double ttft_s);
  // The finding when both rules hold at `now_s`, else nothing.
  std::optional<SaturationFinding> Check(double now_s);

 private:
  std::optional<LineFit> InflightFit(double now_s) const;
  std::optional<LineFit> TtftFit(double* end_s) const;
  double Baseline() const;

  SaturationOptions options_;
  std::deque<std::pair<double, double>> inflight_;
  std::optional<double> first_inflight_s_;
  std::deque<std::pair<double, double>> ttft_;
  double latest_sent_s_ = 0;
  std::vector<double> baseline_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_SATURATION_RULE_H_
