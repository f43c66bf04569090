#include "common/skewed_clock.h"

namespace surge {

SkewedClock::SkewedClock(Clock& base, int64_t offset_ns, double drift_ppm)
    : base_(base), map_{ToNanos(base.Now()), offset_ns, drift_ppm} {}

}  // namespace surge
