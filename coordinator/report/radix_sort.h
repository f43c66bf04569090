// Stable O(n) sorting by a double key for the plot pages (R-PLOT-8: a page
// for 10 M requests is built fast). LSD radix sort over the IEEE-754 bit
// pattern of the key, mapped so that unsigned order equals numeric order.
// Same order as std::stable_sort with operator< on the key for NaN-free keys
// (−0.0 and +0.0 compare equal, as with operator<). Internal to
// coordinator/report.
#ifndef SURGE_COORDINATOR_REPORT_RADIX_SORT_H_
#define SURGE_COORDINATOR_REPORT_RADIX_SORT_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace surge::coordinator::radix_internal {

// Monotone map double → uint64 (NaN-free input).
inline uint64_t OrderedBits(double v) {
  if (v == 0) v = 0.0;  // −0.0 sorts with +0.0
  const uint64_t u = std::bit_cast<uint64_t>(v);
  return (u >> 63) != 0 ? ~u : (u | 0x8000000000000000ull);
}

// Sorts `items` stably by key(item) (a double), using `scratch` as the
// buffer (resized to items.size()).
template <typename T, typename KeyFn>
void RadixSortByKey(std::span<T> items, KeyFn key, std::vector<T>& scratch) {
  const size_t n = items.size();
  if (n < 4096) {
    std::stable_sort(items.begin(), items.end(),
                     [&](const T& a, const T& b) { return key(a) < key(b); });
    return;
  }
  constexpr int kBits = 11;
  constexpr int kPasses = 6;  // 6 × 11 ≥ 64
  constexpr size_t kBuckets = size_t{1} << kBits;
  std::vector<std::array<size_t, kBuckets>> counts(kPasses);
  for (auto& c : counts) c.fill(0);
  for (const T& item : items) {
    const uint64_t k = OrderedBits(key(item));
    for (int p = 0; p < kPasses; ++p) ++counts[p][(k >> (p * kBits)) & (kBuckets - 1)];
  }
  scratch.resize(n);
  T* src = items.data();
  T* dst = scratch.data();
  for (int p = 0; p < kPasses; ++p) {
    auto& c = counts[p];
    const uint64_t first = OrderedBits(key(src[0]));
    if (c[(first >> (p * kBits)) & (kBuckets - 1)] == n) continue;  // all share this digit
    size_t sum = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      const size_t count = c[b];
      c[b] = sum;
      sum += count;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = OrderedBits(key(src[i]));
      dst[c[(k >> (p * kBits)) & (kBuckets - 1)]++] = src[i];
    }
    std::swap(src, dst);
  }
  if (src != items.data()) std::copy(src, src + n, items.data());
}

}  // namespace surge::coordinator::radix_internal

#endif  // SURGE_COORDINATOR_REPORT_RADIX_SORT_H_
