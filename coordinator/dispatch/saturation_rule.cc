#include "coordinator/dispatch/saturation_rule.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

// Rule 1's absolute floor, requests/s: a backlog that grows slower than
// this is not worth ending a point for.
constexpr double kMinGrowthRps = 0.5;
// Rule 1 needs this many in-flight samples in the window, rule 2 this many
// answers.
constexpr size_t kMinInflightSamples = 5;
constexpr size_t kMinTtftSamples = 10;
constexpr size_t kMinBaseline = 5;

}  // namespace

std::optional<LineFit> FitLine(const std::vector<std::pair<double, double>>& points) {
  if (points.size() < 2) return std::nullopt;
  // Centred sums: exact enough for seconds since t0 and request counts.
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) {
    mx += x;
    my += y;
  }
  const double n = static_cast<double>(points.size());
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0, syy = 0;
  for (const auto& [x, y] : points) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
    syy += (y - my) * (y - my);
  }
  if (sxx <= 0) return std::nullopt;
  LineFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  fit.r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  return fit;
}

void SaturationRule::ObserveInflight(double t_s, double inflight) {
  if (!first_inflight_s_) first_inflight_s_ = t_s;
  inflight_.emplace_back(t_s, inflight);
  while (!inflight_.empty() && inflight_.front().first < t_s - options_.window_s) {
    inflight_.pop_front();
  }
}

void SaturationRule::ObserveTtft(double sent_s, double ttft_s) {
  if (baseline_.size() < kBaselineTtfts) baseline_.push_back(ttft_s);
  latest_sent_s_ = std::max(latest_sent_s_, sent_s);
  ttft_.emplace_back(sent_s, ttft_s);
  while (!ttft_.empty() && ttft_.front().first < latest_sent_s_ - options_.window_s) {
    ttft_.pop_front();
  }
}

double SaturationRule::Baseline() const {
  std::vector<double> b = baseline_;
  std::sort(b.begin(), b.end());
  const size_t n = b.size();
  return n % 2 == 1 ? b[n / 2] : (b[n / 2 - 1] + b[n / 2]) / 2;
}

std::optional<LineFit> SaturationRule::InflightFit(double now_s) const {
  if (!first_inflight_s_ || *first_inflight_s_ > now_s - options_.window_s ||
      inflight_.size() < kMinInflightSamples) {
    return std::nullopt;  // the window is not covered yet
  }
  std::optional<LineFit> fit = FitLine({inflight_.begin(), inflight_.end()});
  const double floor = std::max(kMinGrowthRps, options_.min_growth_share * options_.plan_rate_rps);
  if (!fit || fit->slope < floor || fit->r2 < options_.min_inflight_r2) return std::nullopt;
  return fit;
}

std::optional<LineFit> SaturationRule::TtftFit(double* end_s) const {
  if (baseline_.size() < kMinBaseline) return std::nullopt;
  std::vector<std::pair<double, double>> window;
  window.reserve(ttft_.size());
  for (const auto& p : ttft_) {
    if (p.first >= latest_sent_s_ - options_.window_s) window.push_back(p);
  }
  if (window.size() < kMinTtftSamples) return std::nullopt;
  std::optional<LineFit> fit = FitLine(window);
  if (!fit || fit->slope <= 0 || fit->r2 < options_.min_ttft_r2) return std::nullopt;
  *end_s = fit->At(latest_sent_s_);
  if (*end_s < options_.min_ttft_ratio * Baseline()) return std::nullopt;
  return fit;
}

std::optional<SaturationFinding> SaturationRule::Check(double now_s) {
  const std::optional<LineFit> inflight = InflightFit(now_s);
  if (!inflight) return std::nullopt;
  double ttft_end_s = 0;
  if (!TtftFit(&ttft_end_s)) return std::nullopt;
  SaturationFinding f;
  f.at_s = now_s;
  f.inflight_growth_rps = inflight->slope;
  f.inflight_r2 = inflight->r2;
  f.ttft_baseline_s = Baseline();
  f.ttft_end_s = ttft_end_s;
  f.text = absl::StrFormat(
      "the server saturated at %.2f s: over the last %.0f s the requests in flight grew by %.1f "
      "per second (R² %.2f) and TTFT rose to %.0f ms from %.0f ms at the start",
      now_s, options_.window_s, f.inflight_growth_rps, f.inflight_r2, ttft_end_s * 1e3,
      f.ttft_baseline_s * 1e3);
  return f;
}

}  // namespace surge::coordinator
