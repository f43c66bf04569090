// The one place where double seconds and int64 nanoseconds are converted.
#ifndef SURGE_COMMON_TIME_UNITS_H_
#define SURGE_COMMON_TIME_UNITS_H_

#include <cmath>
#include <cstdint>

namespace surge {

// Seconds → nanoseconds, rounded to nearest. Input must be finite.
inline int64_t SecondsToNanos(double seconds) {
  return static_cast<int64_t>(std::llround(seconds * 1e9));
}
// Nanoseconds → seconds.
// Division, not multiplication by 1e-9: the quotient is correctly rounded, so
// 1939714 ns prints as 0.001939714 s.
inline double NanosToSeconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace surge

#endif  // SURGE_COMMON_TIME_UNITS_H_
