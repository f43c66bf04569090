#include "coordinator/capacity/paired_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "common/stats.h"

namespace surge::coordinator {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The last entry of each index.
std::map<uint64_t, const RequestTimes*> ByIndex(std::span<const RequestTimes> run) {
  std::map<uint64_t, const RequestTimes*> by_index;
  for (const RequestTimes& r : run) by_index[r.index] = &r;
  return by_index;
}

uint64_t OkCount(const std::map<uint64_t, const RequestTimes*>& run) {
  uint64_t ok = 0;
  for (const auto& [index, r] : run) ok += r->ok;
  return ok;
}

double Median(std::vector<double>& values) {
  const double p = 50;
  return Percentiles(values, std::span<const double>(&p, 1))[0];
}

// The median (common/stats.h's linear interpolation) of the sample that
// holds sorted[i] counts[i] times; the counts add up to sorted.size().
double MedianOfCounts(std::span<const double> sorted, std::span<const uint32_t> counts) {
  const double pos = 0.5 * static_cast<double>(sorted.size() - 1);
  const size_t lo_rank = static_cast<size_t>(pos);
  const double frac = pos - static_cast<double>(lo_rank);
  // The values at ranks lo_rank and lo_rank + 1 of the resample.
  double lo = kNaN, hi = kNaN;
  size_t seen = 0;
  for (size_t i = 0; i < sorted.size() && std::isnan(hi); ++i) {
    seen += counts[i];
    if (std::isnan(lo) && seen > lo_rank) lo = sorted[i];
    if (seen > lo_rank + 1 || (frac == 0 && !std::isnan(lo))) hi = sorted[i];
  }
  return frac == 0 ? lo : lo + frac * (hi - lo);
}

}  // namespace

PairedRequests PairByIndex(std::span<const RequestTimes> a, std::span<const RequestTimes> b) {
  const auto a_by_index = ByIndex(a);
  const auto b_by_index = ByIndex(b);
  PairedRequests p;
  p.a_ok = OkCount(a_by_index);
  p.b_ok = OkCount(b_by_index);
  for (const auto& [index, ra] : a_by_index) {
    auto it = b_by_index.find(index);
    if (it == b_by_index.end()) {
      ++p.only_in_a;
      continue;
    }
    const RequestTimes* rb = it->second;
    if (!ra->ok || !rb->ok) continue;
    p.index.push_back(index);
    p.planned_offset_s.push_back(ra->planned_offset_s);
    for (int m = 0; m < kComparedMetricCount; ++m) {
      p.a_ms[m].push_back(ra->ms[m]);
      p.b_ms[m].push_back(rb->ms[m]);
    }
  }
  for (const auto& [index, rb] : b_by_index) p.only_in_b += a_by_index.count(index) == 0;
  return p;
}

Interval BootstrapMedianInterval(std::span<const double> d, const BootstrapSettings& settings) {
  Interval ci;
  if (d.empty() || settings.resamples == 0) return ci;
  // A resample is drawn as counts over the sorted values (how often each
  // was drawn), so its median is a walk over the counts instead of a
  // selection over a copy: the same value, in O(n) without moving doubles.
  std::vector<double> sorted(d.begin(), d.end());
  std::sort(sorted.begin(), sorted.end());
  std::mt19937_64 engine(settings.seed);
  std::uniform_int_distribution<size_t> pick(0, sorted.size() - 1);
  std::vector<uint32_t> counts(sorted.size());
  std::vector<double> medians;
  medians.reserve(settings.resamples);
  for (uint32_t r = 0; r < settings.resamples; ++r) {
    std::fill(counts.begin(), counts.end(), 0);
    for (size_t k = 0; k < sorted.size(); ++k) ++counts[pick(engine)];
    medians.push_back(MedianOfCounts(sorted, counts));
  }
  const double ends[] = {2.5, 97.5};
  const std::vector<double> at = Percentiles(medians, ends);
  ci.low = at[0];
  ci.high = at[1];
  return ci;
}

PairedMetric ComparePairs(const std::string& metric, std::span<const double> a_ms,
                          std::span<const double> b_ms, const BootstrapSettings& settings) {
  PairedMetric m;
  m.metric = metric;
  std::vector<double> a, b, d;
  uint64_t b_faster = 0;
  for (size_t k = 0; k < a_ms.size() && k < b_ms.size(); ++k) {
    if (std::isnan(a_ms[k]) || std::isnan(b_ms[k])) continue;
    a.push_back(a_ms[k]);
    b.push_back(b_ms[k]);
    d.push_back(b_ms[k] - a_ms[k]);
    b_faster += d.back() < 0;
  }
  m.pairs = d.size();
  if (d.empty()) return m;
  const double ps[] = {50, 99};
  const std::vector<double> a_at = Percentiles(a, ps);
  const std::vector<double> b_at = Percentiles(b, ps);
  m.a_median_ms = a_at[0];
  m.a_p99_ms = a_at[1];
  m.b_median_ms = b_at[0];
  m.b_p99_ms = b_at[1];
  m.ci_ms = BootstrapMedianInterval(d, settings);
  m.median_diff_ms = Median(d);
  m.share_b_faster = static_cast<double>(b_faster) / static_cast<double>(m.pairs);
  return m;
}

std::string MetricVerdict(const PairedMetric& m) {
  if (m.pairs == 0 || std::isnan(m.ci_ms.low)) return "";
  if (m.ci_ms.high < 0) return "B faster";
  if (m.ci_ms.low > 0) return "B slower";
  return "no clear difference";
}

}  // namespace surge::coordinator
