#include "common/skewed_clock.h"

#include <cmath>

namespace surge {

SkewedClock::SkewedClock(Clock& base, int64_t offset_ns, double drift_ppm)
    : base_(base), anchor_ns_(ToNanos(base.Now())), offset_ns_(offset_ns), drift_ppm_(drift_ppm) {}

int64_t SkewedClock::FromBase(int64_t base_ns) const {
  const int64_t since = base_ns - anchor_ns_;
  return base_ns + offset_ns_ +
         static_cast<int64_t>(std::llround(static_cast<double>(since) * drift_ppm_ * 1e-6));
}

int64_t SkewedClock::ToBase(int64_t skewed_ns) const {
  // skewed − anchor − offset = (base − anchor)(1 + drift)
  const int64_t shifted = skewed_ns - anchor_ns_ - offset_ns_;
  return anchor_ns_ + static_cast<int64_t>(
                          std::llround(static_cast<double>(shifted) / (1.0 + drift_ppm_ * 1e-6)));
}

}  // namespace surge
