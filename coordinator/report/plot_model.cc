#include "coordinator/report/plot_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "coordinator/report/radix_sort.h"

namespace surge::coordinator {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

int EwmaWindow(uint64_t points) {
  if (points <= 1'000) return 20;
  if (points <= 10'000) return 50;
  if (points <= 100'000) return 100;
  return 200;
}

double EwmaAlpha(int window) { return 2.0 / (static_cast<double>(std::max(window, 1)) + 1.0); }

std::vector<double> ComputeEwma(std::span<const double> values, int window) {
  std::vector<double> out;
  out.reserve(values.size());
  EwmaSmoother smoother(window);
  for (double v : values) out.push_back(smoother.Add(v));
  return out;
}

std::vector<uint64_t> StratifiedSampleRanks(uint64_t n, uint64_t max_points) {
  std::vector<uint64_t> ranks;
  if (n <= max_points) {
    ranks.resize(n);
    std::iota(ranks.begin(), ranks.end(), uint64_t{0});
    return ranks;
  }
  ranks.reserve(max_points);
  const uint64_t k2 = 2 * max_points;
  for (uint64_t j = 0; j < max_points; ++j) ranks.push_back((2 * j + 1) * n / k2);
  return ranks;
}

MinMaxDecimator::MinMaxDecimator(double x_min, double x_max, uint64_t total_points,
                                 size_t max_points)
    : passthrough_(total_points <= max_points || max_points < 4), x_min_(x_min), inv_width_(0) {
  if (passthrough_) {
    all_.x.reserve(total_points);
    all_.y.reserve(total_points);
    return;
  }
  const size_t buckets = max_points / 4;
  buckets_.resize(buckets);
  const double span = x_max - x_min;
  inv_width_ = span > 0 && std::isfinite(span) ? static_cast<double>(buckets) / span : 0;
}

void MinMaxDecimator::Add(double x, double y) {
  if (!std::isfinite(x) || !std::isfinite(y)) return;
  const uint64_t seq = seq_++;
  if (passthrough_) {
    all_.Add(x, y);
    return;
  }
  double pos = (x - x_min_) * inv_width_;
  size_t b = 0;
  if (pos > 0) {
    b = std::min(static_cast<size_t>(pos), buckets_.size() - 1);
  }
  Bucket& bucket = buckets_[b];
  const Kept kept{seq, x, y};
  if (!bucket.used) {
    bucket = Bucket{true, kept, kept, kept, kept};
    return;
  }
  bucket.last = kept;
  if (y < bucket.min.y) bucket.min = kept;
  if (y > bucket.max.y) bucket.max = kept;
}

XySeries MinMaxDecimator::Finish() {
  if (passthrough_) return std::move(all_);
  XySeries out;
  out.x.reserve(buckets_.size() * 4);
  out.y.reserve(buckets_.size() * 4);
  for (const Bucket& bucket : buckets_) {
    if (!bucket.used) continue;
    Kept kept[4] = {bucket.first, bucket.min, bucket.max, bucket.last};
    std::sort(std::begin(kept), std::end(kept),
              [](const Kept& a, const Kept& b) { return a.seq < b.seq; });
    uint64_t last_seq = std::numeric_limits<uint64_t>::max();
    for (const Kept& k : kept) {
      if (k.seq == last_seq) continue;
      last_seq = k.seq;
      out.Add(k.x, k.y);
    }
  }
  return out;
}

XySeries DecimateMinMax(std::span<const double> x, std::span<const double> y, size_t max_points) {
  const size_t n = std::min(x.size(), y.size());
  if (n == 0) return {};
  MinMaxDecimator decimator(x[0], x[n - 1], n, max_points);
  for (size_t i = 0; i < n; ++i) decimator.Add(x[i], y[i]);
  return decimator.Finish();
}

HistogramBins FreedmanDiaconisBins(uint64_t n, double min, double max, double iqr) {
  HistogramBins bins;
  if (n == 0) {
    bins.count = 0;
    return bins;
  }
  const double range = max - min;
  if (!(range > 0)) {
    const double width = min != 0 ? std::fabs(min) / 100 : 1.0;
    bins.lo = min - width / 2;
    bins.width = width;
    bins.count = 1;
    return bins;
  }
  int count = kMaxHistogramBins;
  const double h = 2.0 * iqr * std::cbrt(1.0 / static_cast<double>(n));
  if (h > 0) {
    const double raw = std::ceil(range / h);
    count = raw >= kMaxHistogramBins ? kMaxHistogramBins
                                     : std::max(kMinHistogramBins, static_cast<int>(raw));
  }
  bins.lo = min;
  bins.width = range / count;
  bins.count = count;
  return bins;
}

uint64_t Histogram::Max() const {
  return counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
}

double Histogram::Lower(int k) const {
  const double edge = bins.lo + k * bins.width;
  return bins.log10 ? std::pow(10.0, edge) : edge;
}

double Histogram::Center(int k) const {
  const double mid = bins.lo + (k + 0.5) * bins.width;
  return bins.log10 ? std::pow(10.0, mid) : mid;
}

Histogram BuildHistogram(std::span<double> values, bool log10) {
  Histogram h;
  if (values.empty()) return h;
  if (log10) {
    for (double& v : values) v = std::log10(v);
  }
  const auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
  const double min = *min_it;
  const double max = *max_it;
  const double ps[] = {25, 75};
  const std::vector<double> q = Percentiles(values, ps);
  h.bins = FreedmanDiaconisBins(values.size(), min, max, q[1] - q[0]);
  h.bins.log10 = log10;
  h.counts = CountIntoBins(values, h.bins);
  return h;
}

std::vector<uint64_t> CountIntoBins(std::span<const double> values, const HistogramBins& bins) {
  std::vector<uint64_t> counts(static_cast<size_t>(std::max(bins.count, 0)), 0);
  if (counts.empty()) return counts;
  const double inv = 1.0 / bins.width;
  const size_t last = counts.size() - 1;
  for (double v : values) {
    const double pos = (v - bins.lo) * inv;
    size_t k = 0;
    if (pos > 0) k = std::min(static_cast<size_t>(pos), last);
    ++counts[k];
  }
  return counts;
}

void SortDoubles(std::span<double> values, std::vector<double>* scratch) {
  std::vector<double> local;
  radix_internal::RadixSortByKey(
      values, [](double v) { return v; }, scratch != nullptr ? *scratch : local);
}

double KsDistanceSorted(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty()) return kNaN;
  const double na = static_cast<double>(a.size());
  const double nb = static_cast<double>(b.size());
  size_t i = 0;
  size_t j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] <= x) ++i;
    while (j < b.size() && b[j] <= x) ++j;
    d = std::max(d, std::fabs(static_cast<double>(i) / na - static_cast<double>(j) / nb));
  }
  // Once one sample is exhausted its CDF is 1; the other only grows towards 1,
  // so the gap is largest right where the loop stopped.
  return d;
}

double NiceCeil(double x) {
  if (!(x > 0) || !std::isfinite(x)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    // A small tolerance keeps exact powers (e.g. 0.1) from rounding up.
    if (m * p >= x * (1 - 1e-12)) return m * p;
  }
  return 10 * p;
}

double RateBinWidth(double span_s, uint64_t n) {
  if (!(span_s > 0) || !std::isfinite(span_s)) return 1;
  const double target = std::clamp(static_cast<double>(n) / 20.0, 10.0, 200.0);
  return NiceCeil(span_s / target);
}

RateBinner::RateBinner(double start, double width, size_t bins, double end)
    : start_(start),
      width_(width > 0 ? width : 1),
      inv_width_(1.0 / width_),
      counts_(std::max<size_t>(bins, 1), 0) {
  const double last_start = start_ + width_ * static_cast<double>(counts_.size() - 1);
  end_ = end > last_start ? end : last_start + width_;
}

void RateBinner::Add(double t) {
  if (!(t >= start_) || t > end_) return;
  const size_t k = std::min(static_cast<size_t>((t - start_) * inv_width_), counts_.size() - 1);
  ++counts_[k];
}

std::vector<double> RateBinner::Rates() const {
  std::vector<double> rate(counts_.size(), 0);
  for (size_t k = 0; k + 1 < counts_.size(); ++k) {
    rate[k] = static_cast<double>(counts_[k]) * inv_width_;
  }
  const double last_start = start_ + width_ * static_cast<double>(counts_.size() - 1);
  rate.back() = static_cast<double>(counts_.back()) / (end_ - last_start);
  return rate;
}

std::vector<double> RateBinner::Edges() const {
  std::vector<double> edges;
  for (size_t k = 0; k < counts_.size(); ++k) {
    edges.push_back(start_ + width_ * static_cast<double>(k));
  }
  edges.push_back(end_);
  return edges;
}

RateBinner MakeRateBinner(double lo, double hi, double width) {
  const double start = std::floor(lo / width) * width;
  const double span = (hi - start) / width;
  const size_t bins = std::max<size_t>(1, static_cast<size_t>(std::llround(std::max(span, 0.0))));
  return RateBinner(start, width, bins, hi);
}

std::vector<double> RatePerBin(std::span<const double> times, double start, double width,
                               size_t bins) {
  RateBinner binner(start, width, bins, start + width * static_cast<double>(bins));
  for (double t : times) binner.Add(t);
  return binner.Rates();
}

}  // namespace surge::coordinator
