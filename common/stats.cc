#include "common/stats.h"

#include <algorithm>
#include <boost/histogram.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/time_units.h"

namespace surge {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Places the order statistics of every rank in ranks[r_lo, r_hi) (sorted,
// distinct, all within [lo, hi)) at its position: nth_element at the middle
// rank, then each side recursively. O(n log k) for k ranks.
void MultiSelect(std::span<double> v, size_t lo, size_t hi, const std::vector<size_t>& ranks,
                 size_t r_lo, size_t r_hi) {
  if (r_lo >= r_hi) return;
  const size_t mid = r_lo + (r_hi - r_lo) / 2;
  const size_t rank = ranks[mid];
  std::nth_element(v.begin() + static_cast<ptrdiff_t>(lo), v.begin() + static_cast<ptrdiff_t>(rank),
                   v.begin() + static_cast<ptrdiff_t>(hi));
  MultiSelect(v, lo, rank, ranks, r_lo, mid);
  MultiSelect(v, rank + 1, hi, ranks, mid + 1, r_hi);
}

// Rank position of percentile p among n values (numpy "linear").
double RankPosition(double p, size_t n) {
  return std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(n - 1);
}

}  // namespace

double PercentileOfSorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return kNaN;
  const double pos = RankPosition(p, sorted.size());
  const size_t lo = static_cast<size_t>(pos);
  const double frac = pos - static_cast<double>(lo);
  if (lo + 1 >= sorted.size() || frac == 0) return sorted[lo];
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

std::vector<double> Percentiles(std::span<double> values, std::span<const double> ps) {
  std::vector<double> out(ps.size(), kNaN);
  const size_t n = values.size();
  if (n == 0) return out;
  // The closest ranks below and above each requested position.
  std::vector<size_t> ranks;
  for (double p : ps) {
    const size_t lo = static_cast<size_t>(RankPosition(p, n));
    ranks.push_back(lo);
    if (lo + 1 < n) ranks.push_back(lo + 1);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  MultiSelect(values, 0, n, ranks, 0, ranks.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    const double pos = RankPosition(ps[i], n);
    const size_t lo = static_cast<size_t>(pos);
    const double frac = pos - static_cast<double>(lo);
    const double a = values[lo];
    out[i] = (lo + 1 >= n || frac == 0) ? a : a + frac * (values[lo + 1] - a);
  }
  return out;
}

absl::StatusOr<MetricPercentiles> ParseMetricPercentiles(const std::string& text) {
  MetricPercentiles out;
  if (absl::StripAsciiWhitespace(text).empty()) return out;
  out.values.clear();
  out.given = true;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    double p = 0;
    if (!absl::SimpleAtod(entry, &p) || !std::isfinite(p) || !(p > 0 && p < 100)) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", entry,
                       "\" is not a percentile: each entry must be a number in (0, 100), e.g. "
                       "50,90,99,99.9"));
    }
    out.values.push_back(p);
  }
  std::sort(out.values.begin(), out.values.end());
  out.values.erase(std::unique(out.values.begin(), out.values.end()), out.values.end());
  return out;
}

std::string PercentileName(double p) {
  if (p == std::floor(p) && std::fabs(p) < 1e15) return absl::StrCat(static_cast<int64_t>(p));
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), p);
  return std::string(text, result.ptr);
}

double Mean(std::span<const double> values) {
  if (values.empty()) return kNaN;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// ------------------------------------------------------- StreamingStats ----

namespace bh = boost::histogram;

namespace {

// Magnitudes on a log axis: equal bins in log10 space, 232 per decade, over
// [1e-12, 1e12); no under/overflow bins (values are clamped into range).
using LogAxis =
    bh::axis::regular<double, bh::axis::transform::log, bh::use_default, bh::axis::option::none_t>;

const LogAxis& StreamingAxis() {
  static const LogAxis axis(kStreamingBins, kStreamingMinMagnitude, kStreamingMaxMagnitude);
  return axis;
}

// The largest magnitude inside the axis' range.
const double kStreamingTopMagnitude = std::nextafter(kStreamingMaxMagnitude, 0.0);

uint64_t BitsOf(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

double FromBits(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

// StreamingBin's tables, built once from the log axis itself.
struct BinTable {
  // A slot: the positive doubles that share their exponent and top
  // kMantissaBits mantissa bits: a ratio of at most 1 + 1/128 from its
  // first to its last value, less than a bin's 10^(1/232) ≈ 1.00997, so a
  // slot spans at most two bins.
  static constexpr int kMantissaBits = 7;
  static constexpr int kSlotShift = 52 - kMantissaBits;

  BinTable() {
    FindLowerEdges();
    FillSlots();
  }

  // lower[i]: the smallest double StreamingBinByLog puts in bin i or above;
  // lower[0] = the min magnitude, lower[kStreamingBins] = +inf.
  void FindLowerEdges() {
    lower.resize(kStreamingBins + 1);
    lower[0] = kStreamingMinMagnitude;
    lower[kStreamingBins] = std::numeric_limits<double>::infinity();
    for (int i = 1; i < kStreamingBins; ++i) {
      // Positive doubles order as their bits: bisect between a bit pattern
      // below the edge (bin < i) and one at or above it (bin ≥ i), starting
      // close around the edge's ideal value.
      const double ideal =
          kStreamingMinMagnitude * std::pow(10.0, static_cast<double>(i) / kStreamingBinsPerDecade);
      uint64_t below = BitsOf(ideal * (1 - 1e-12));
      uint64_t above = BitsOf(ideal * (1 + 1e-12));
      while (StreamingBinByLog(FromBits(below)) >= i) below -= above - below;
      while (StreamingBinByLog(FromBits(above)) < i) above += above - below;
      while (above - below > 1) {
        const uint64_t mid = below + (above - below) / 2;
        (StreamingBinByLog(FromBits(mid)) >= i ? above : below) = mid;
      }
      lower[i] = FromBits(above);
    }
  }

  // first_bin[slot − first_slot]: the bin of the slot's smallest magnitude
  // in range.
  void FillSlots() {
    first_slot = BitsOf(kStreamingMinMagnitude) >> kSlotShift;
    const uint64_t last_slot = BitsOf(kStreamingTopMagnitude) >> kSlotShift;
    first_bin.resize(last_slot - first_slot + 1);
    for (uint64_t slot = first_slot; slot <= last_slot; ++slot) {
      const double start = std::max(kStreamingMinMagnitude, FromBits(slot << kSlotShift));
      const auto above = std::upper_bound(lower.begin(), lower.end(), start);
      first_bin[slot - first_slot] = static_cast<uint16_t>(above - lower.begin() - 1);
    }
    // StreamingBin looks one bin past a slot's first: each slot's last
    // value must lie in its first bin or the next.
    for (size_t k = 0; k + 1 < first_bin.size(); ++k) {
      if (first_bin[k + 1] > first_bin[k] + 1) std::abort();
    }
  }

  std::vector<double> lower;
  std::vector<uint16_t> first_bin;
  uint64_t first_slot = 0;
};

const BinTable& StreamingBinTable() {
  static const BinTable table;
  return table;
}

}  // namespace

int StreamingBinByLog(double magnitude) {
  if (!(magnitude > kStreamingMinMagnitude)) return 0;  // also NaN
  const int bin = StreamingAxis().index(std::min(magnitude, kStreamingTopMagnitude));
  return std::clamp(bin, 0, kStreamingBins - 1);
}

int StreamingBin(double magnitude) {
  if (!(magnitude > kStreamingMinMagnitude)) return 0;  // also NaN
  if (!(magnitude < kStreamingMaxMagnitude)) return kStreamingBins - 1;
  const BinTable& t = StreamingBinTable();
  int bin = t.first_bin[(BitsOf(magnitude) >> BinTable::kSlotShift) - t.first_slot];
  bin += magnitude >= t.lower[bin + 1];  // the slot's second bin (no branch)
  return bin;
}

// Counts per bin of the log axis (StreamingAxis), one array for positive
// and one for negative values' magnitudes.
struct StreamingStats::Histogram {
  using Counts = std::vector<uint64_t>;

  // The bin by StreamingBin: the log axis' own bin, without its log.
  void Fill(double v) {
    if (v == 0) {
      ++zeros;
      return;
    }
    ++(v > 0 ? positive : negative)[StreamingBin(std::fabs(v))];
  }

  static void AddCounts(const Counts& from, Counts* to) {
    for (size_t i = 0; i < from.size(); ++i) (*to)[i] += from[i];
  }

  Counts positive = Counts(kStreamingBins, 0);
  Counts negative = Counts(kStreamingBins, 0);
  uint64_t zeros = 0;
};

StreamingStats::StreamingStats(size_t exact_limit) : exact_limit_(exact_limit) {
  if (exact_limit_ == 0) histogram_ = std::make_unique<Histogram>();
}
StreamingStats::~StreamingStats() = default;
StreamingStats::StreamingStats(StreamingStats&&) noexcept = default;
StreamingStats& StreamingStats::operator=(StreamingStats&&) noexcept = default;

void StreamingStats::Add(double value) {
  if (std::isnan(value)) {
    ++ignored_nan_;
    return;
  }
  ++count_;
  sum_ += value;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  if (histogram_ != nullptr) {
    histogram_->Fill(value);
    return;
  }
  values_.push_back(value);
  sorted_ = false;
  if (values_.size() > exact_limit_) SpillToHistogram();
}

void StreamingStats::AddNanos(std::span<const int64_t> ns) {
  if (ns.empty()) return;
  // Integer phase: count, min, max and the exact sum (128 bits: no
  // overflow for any span of int64 values).
  int64_t lo = ns[0], hi = ns[0];
  __int128 total = 0;
  for (const int64_t v : ns) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    total += v;
  }
  count_ += ns.size();
  sum_ += static_cast<double>(total) / 1e9;
  // The int → double division is monotone: the converted min and max are
  // the min and max of the converted values.
  min_ = std::min(min_, NanosToSeconds(lo));
  max_ = std::max(max_, NanosToSeconds(hi));
  // The values themselves, as Add keeps them.
  if (histogram_ != nullptr) {
    for (const int64_t v : ns) histogram_->Fill(NanosToSeconds(v));
    return;
  }
  for (const int64_t v : ns) values_.push_back(NanosToSeconds(v));
  sorted_ = false;
  if (values_.size() > exact_limit_) SpillToHistogram();
}

void StreamingStats::SpillToHistogram() {
  if (histogram_ == nullptr) histogram_ = std::make_unique<Histogram>();
  for (double v : values_) histogram_->Fill(v);
  std::vector<double>().swap(values_);
  sorted_ = true;
}

void StreamingStats::Merge(const StreamingStats& other) {
  if (other.count_ == 0) {
    ignored_nan_ += other.ignored_nan_;
    return;
  }
  count_ += other.count_;
  ignored_nan_ += other.ignored_nan_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  if (histogram_ == nullptr && other.histogram_ == nullptr &&
      values_.size() + other.values_.size() <= exact_limit_) {
    values_.insert(values_.end(), other.values_.begin(), other.values_.end());
    sorted_ = false;
    return;
  }
  SpillToHistogram();
  if (other.histogram_ != nullptr) {
    Histogram::AddCounts(other.histogram_->positive, &histogram_->positive);
    Histogram::AddCounts(other.histogram_->negative, &histogram_->negative);
    histogram_->zeros += other.histogram_->zeros;
  } else {
    for (double v : other.values_) histogram_->Fill(v);
  }
}

double StreamingStats::min() const { return count_ == 0 ? kNaN : min_; }
double StreamingStats::max() const { return count_ == 0 ? kNaN : max_; }
double StreamingStats::mean() const {
  return count_ == 0 ? kNaN : sum_ / static_cast<double>(count_);
}

double StreamingStats::HistogramValueAtRank(uint64_t rank) const {
  // Ascending order: negative magnitudes from the largest bin down, zeros,
  // positive magnitudes from the smallest bin up. The estimate is the bin's
  // geometric midpoint: within √(bin ratio) − 1 ≈ 0.5 % of any value in it.
  const Histogram& h = *histogram_;
  const LogAxis& axis = StreamingAxis();
  const int bins = kStreamingBins;
  uint64_t before = 0;
  for (int i = bins - 1; i >= 0; --i) {
    const uint64_t c = h.negative[i];
    if (rank < before + c) {
      const auto bin = axis.bin(i);
      return -std::sqrt(bin.lower() * bin.upper());
    }
    before += c;
  }
  if (rank < before + h.zeros) return 0;
  before += h.zeros;
  for (int i = 0; i < bins; ++i) {
    const uint64_t c = h.positive[i];
    if (rank < before + c) {
      const auto bin = axis.bin(i);
      return std::sqrt(bin.lower() * bin.upper());
    }
    before += c;
  }
  return max_;  // not reached: the bins hold count_ values
}

double StreamingStats::Percentile(double p) {
  if (count_ == 0) return kNaN;
  if (histogram_ == nullptr) {
    if (!sorted_) {
      std::sort(values_.begin(), values_.end());
      sorted_ = true;
    }
    return PercentileOfSorted(values_, p);
  }
  if (p <= 0) return min_;
  if (p >= 100) return max_;
  const double pos = RankPosition(p, count_);
  const uint64_t lo = static_cast<uint64_t>(pos);
  const double frac = pos - static_cast<double>(lo);
  auto at = [&](uint64_t r) {
    if (r == 0) return min_;
    if (r + 1 >= count_) return max_;
    return std::clamp(HistogramValueAtRank(r), min_, max_);
  };
  const double a = at(lo);
  if (lo + 1 >= count_ || frac == 0) return a;
  return a + frac * (at(lo + 1) - a);
}

BucketCounts::BucketCounts(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size(), 0) {}

void BucketCounts::Add(double value) {
  if (std::isnan(value)) return;
  ++count_;
  sum_ += value;
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  if (it != bounds_.end()) ++counts_[static_cast<size_t>(it - bounds_.begin())];
}

std::vector<uint64_t> BucketCounts::Cumulative() const {
  std::vector<uint64_t> out(counts_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < counts_.size(); ++i) out[i] = running += counts_[i];
  return out;
}

}  // namespace surge
