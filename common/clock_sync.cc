#include "common/clock_sync.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace surge {

int64_t ClockMapping::ToWorker(int64_t coord_ns) const {
  const int64_t since = coord_ns - ref_coord_ns;
  return coord_ns + offset_ns +
         static_cast<int64_t>(std::llround(static_cast<double>(since) * drift_ppm * 1e-6));
}

int64_t ClockMapping::ToCoord(int64_t worker_ns) const {
  // worker − ref − offset = (coord − ref)(1 + drift)
  const int64_t shifted = worker_ns - ref_coord_ns - offset_ns;
  return ref_coord_ns + static_cast<int64_t>(
                            std::llround(static_cast<double>(shifted) / (1.0 + drift_ppm * 1e-6)));
}

ClockSyncEstimator::ClockSyncEstimator(ClockSyncOptions options) : options_(options) {}

bool ClockSyncEstimator::AddSample(const ClockSample& s) {
  const int64_t rtt = (s.t4_worker_ns - s.t1_worker_ns) - (s.t3_coord_ns - s.t2_coord_ns);
  if (s.t4_worker_ns < s.t1_worker_ns || s.t3_coord_ns < s.t2_coord_ns || rtt < 0 ||
      rtt > options_.max_rtt_ns) {
    ++estimate_.rejected;
    return false;
  }
  // θ = ((t1 − t2) + (t4 − t3)) / 2, summed before halving so no ns is lost
  // to rounding twice.
  const int64_t theta = ((s.t1_worker_ns - s.t2_coord_ns) + (s.t4_worker_ns - s.t3_coord_ns)) / 2;
  const int64_t mid = s.t2_coord_ns + (s.t3_coord_ns - s.t2_coord_ns) / 2;
  const Point p{mid, theta, rtt};
  ++estimate_.samples;

  // Per bucket: keep only the lowest-δ point (minimum-RTT filtering).
  const int64_t key = mid >= 0 ? mid / options_.bucket_ns : -((-mid - 1) / options_.bucket_ns) - 1;
  auto it = std::find_if(buckets_.begin(), buckets_.end(),
                         [key](const auto& b) { return b.first == key; });
  if (it == buckets_.end()) {
    buckets_.emplace_back(key, p);
    std::sort(buckets_.begin(), buckets_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    while (buckets_.size() > options_.max_buckets) buckets_.pop_front();
  } else if (rtt < it->second.rtt_ns) {
    it->second = p;
  }
  // The three lowest-δ points seen (the estimate before drift is fitted).
  best_.push_back(p);
  std::sort(best_.begin(), best_.end(),
            [](const Point& a, const Point& b) { return a.rtt_ns < b.rtt_ns; });
  if (best_.size() > 3) best_.resize(3);

  const bool was_ready = estimate_.ready;
  const ClockMapping before = estimate_.mapping;
  Recompute();
  if (was_ready) {
    const int64_t step = std::llabs(estimate_.mapping.ToWorker(mid) - before.ToWorker(mid));
    estimate_.largest_step_ns = std::max(estimate_.largest_step_ns, step);
  }
  return true;
}

void ClockSyncEstimator::Recompute() {
  estimate_.ready = estimate_.samples >= static_cast<uint64_t>(options_.min_probes);
  int64_t rtt_min = INT64_MAX;
  for (const auto& b : buckets_) rtt_min = std::min(rtt_min, b.second.rtt_ns);
  estimate_.min_rtt_ns = rtt_min;
  const int64_t limit =
      std::max(static_cast<int64_t>(options_.outlier_factor * static_cast<double>(rtt_min)),
               rtt_min + options_.outlier_slack_ns);
  std::vector<Point> used;
  for (const auto& b : buckets_) {
    if (b.second.rtt_ns <= limit) used.push_back(b.second);
  }
  const bool can_fit = used.size() >= 2 && used.back().coord_mid_ns - used.front().coord_mid_ns >=
                                               options_.min_fit_span_ns;
  if (can_fit) {
    // Least squares θ = a + b·x, x = c − c_ref, c_ref = the latest point.
    const int64_t ref = used.back().coord_mid_ns;
    const double n = static_cast<double>(used.size());
    double mean_x = 0, mean_y = 0;
    for (const Point& q : used) {
      mean_x += static_cast<double>(q.coord_mid_ns - ref);
      mean_y += static_cast<double>(q.theta_ns - used.back().theta_ns);
    }
    mean_x /= n;
    mean_y /= n;
    double sxx = 0, sxy = 0;
    for (const Point& q : used) {
      const double dx = static_cast<double>(q.coord_mid_ns - ref) - mean_x;
      const double dy = static_cast<double>(q.theta_ns - used.back().theta_ns) - mean_y;
      sxx += dx * dx;
      sxy += dx * dy;
    }
    double slope = sxx > 0 ? sxy / sxx : 0;
    const double max_slope = options_.max_abs_drift_ppm * 1e-6;
    slope = std::clamp(slope, -max_slope, max_slope);
    const double intercept = mean_y - slope * mean_x;  // at x = 0, relative to θ_last
    double sq = 0;
    for (const Point& q : used) {
      const double r = static_cast<double>(q.theta_ns - used.back().theta_ns) -
                       (intercept + slope * static_cast<double>(q.coord_mid_ns - ref));
      sq += r * r;
    }
    const double rms = std::sqrt(sq / n);
    estimate_.mapping.ref_coord_ns = ref;
    estimate_.mapping.offset_ns =
        used.back().theta_ns + static_cast<int64_t>(std::llround(intercept));
    estimate_.mapping.drift_ppm = slope * 1e6;
    estimate_.drift_fitted = true;
    estimate_.uncertainty_ns = rtt_min / 2 + static_cast<int64_t>(std::llround(rms)) + 1000;
    return;
  }
  // Not enough history for a drift: before any fit, the mean θ of the (up
  // to) three lowest-δ samples; after one (the window lost its spread), the
  // latest bucket's point, with the drift kept.
  if (!estimate_.drift_fitted) {
    int64_t sum = 0;
    int64_t latest = INT64_MIN;
    for (const Point& q : best_) {
      sum += q.theta_ns;
      latest = std::max(latest, q.coord_mid_ns);
    }
    estimate_.mapping.ref_coord_ns = latest;
    estimate_.mapping.offset_ns = sum / static_cast<int64_t>(best_.size());
    estimate_.mapping.drift_ppm = 0;
    estimate_.uncertainty_ns = best_.front().rtt_ns / 2 + 1000;
  } else {
    const Point& q = buckets_.back().second;
    estimate_.mapping.ref_coord_ns = q.coord_mid_ns;
    estimate_.mapping.offset_ns = q.theta_ns;
    estimate_.uncertainty_ns = q.rtt_ns / 2 + 1000;
  }
}

}  // namespace surge
