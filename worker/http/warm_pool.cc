#include "worker/http/warm_pool.h"

#include <algorithm>
#include <cmath>

namespace surge::worker {

WarmPool::WarmPool(WarmPoolOptions options)
    : options_(options), hold_ns_(static_cast<double>(options.initial_hold_ns)) {}

int64_t WarmPool::SliceNs() const {
  return std::max<int64_t>(1, options_.rate_window_ns / kSlices);
}

void WarmPool::OnTake(int64_t now_ns, bool cold) {
  ++counts_.takes;
  if (cold) ++counts_.cold_takes;
  const int64_t number = now_ns / SliceNs();
  if (first_slice_ == INT64_MIN) first_slice_ = number;
  Slice& slice = slices_[static_cast<size_t>(number % kSlices)];
  if (slice.number != number) slice = Slice{.number = number, .takes = 0};
  ++slice.takes;
}

void WarmPool::OnReturn(int64_t hold_ns) {
  const double hold = static_cast<double>(std::max<int64_t>(0, hold_ns));
  if (!hold_seen_) {
    hold_ns_ = hold;
    hold_seen_ = true;
    return;
  }
  hold_ns_ += options_.hold_weight * (hold - hold_ns_);
}

void WarmPool::OnRefillsStarted(int n) {
  refilling_ += n;
  counts_.refills += static_cast<uint64_t>(n);
}

void WarmPool::OnRefillDone(bool ok, int64_t now_ns) {
  refilling_ = std::max(0, refilling_ - 1);
  if (ok) {
    ++counts_.refills_ok;
  } else {
    paused_until_ns_ = now_ns + options_.failed_refill_pause_ns;
  }
}

double WarmPool::TakeRate(int64_t now_ns) const {
  const int64_t now_slice = now_ns / SliceNs();
  uint64_t takes = 0;
  for (const Slice& slice : slices_) {
    if (slice.number > now_slice - kSlices && slice.number <= now_slice) takes += slice.takes;
  }
  if (takes == 0) return 0;
  const int64_t slices = std::min<int64_t>(kSlices, now_slice - first_slice_ + 1);
  return static_cast<double>(takes) * 1e9 / static_cast<double>(SliceNs() * slices);
}

size_t WarmPool::SpareAt(double rate_rps, double hold_ns) const {
  if (rate_rps <= 0 || rate_rps < options_.min_rate_rps) return 0;
  const double horizon_ns =
      std::min(hold_ns * options_.headroom, static_cast<double>(options_.max_spare_horizon_ns));
  return static_cast<size_t>(std::ceil(rate_rps * horizon_ns / 1e9)) +
         static_cast<size_t>(std::max(0, options_.min_spare));
}

size_t WarmPool::SpareTarget(int64_t now_ns) const { return SpareAt(TakeRate(now_ns), hold_ns_); }

size_t WarmPool::StartConnections(double rate_rps, size_t prepared_at_once) const {
  if (rate_rps <= 0 || rate_rps < options_.min_rate_rps) return 0;
  // A connection is held from its preparation on: the lead the
  // preparations at once stand for, plus the hold after the release.
  const double hold_ns = static_cast<double>(prepared_at_once) * 1e9 / rate_rps + hold_ns_;
  const size_t busy = static_cast<size_t>(std::ceil(rate_rps * hold_ns / 1e9));
  return std::min(busy + SpareAt(rate_rps, hold_ns), options_.max_total);
}

void WarmPool::OnStartConnectsStarted(int n) {
  OnRefillsStarted(n);
  counts_.at_start += static_cast<uint64_t>(n);
}

int WarmPool::RefillsDue(int64_t now_ns, size_t idle, size_t open) const {
  if (now_ns < paused_until_ns_) return 0;
  const size_t have = idle + static_cast<size_t>(refilling_);
  const size_t target = SpareTarget(now_ns);
  if (have >= target || open >= options_.max_total) return 0;
  const size_t wanted = std::min(target - have, options_.max_total - open);
  const int room = std::max(0, options_.max_refilling - refilling_);
  return static_cast<int>(std::min<size_t>(wanted, static_cast<size_t>(room)));
}

}  // namespace surge::worker
