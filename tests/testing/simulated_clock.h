// Simulated time for tests (ARCHITECTURE.md example 2): sleeping jumps the
// clock to the deadline, so tests run instantly and check exact timestamps.
#ifndef SURGE_TESTS_TESTING_SIMULATED_CLOCK_H_
#define SURGE_TESTS_TESTING_SIMULATED_CLOCK_H_

#include <mutex>

#include "common/clock.h"

namespace surge::testing {

// SleepUntil/SleepUntilCoarse advance Now() to the deadline (never back).
// Optional `oversleep` is added to every precise sleep, to model a late
// wake-up, and `coarse_oversleep` to every coarse one, to model
// clock_nanosleep waking 50-300 µs late (the reason RealClock spins the last
// 200 µs of a precise sleep). Thread-safe.
class AutoAdvanceClock final : public Clock {
 public:
  explicit AutoAdvanceClock(TimePoint start = TimePoint(std::chrono::seconds(1000)))
      : now_(start) {}
  TimePoint Now() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  std::chrono::system_clock::time_point WallNow() override {
    return std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
  }
  void SleepUntil(TimePoint deadline) override { Advance(deadline + oversleep_); }
  void SleepUntilCoarse(TimePoint deadline) override { Advance(deadline + coarse_oversleep_); }
  void AdvanceBy(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  void set_oversleep(std::chrono::nanoseconds d) { oversleep_ = d; }
  void set_coarse_oversleep(std::chrono::nanoseconds d) { coarse_oversleep_ = d; }

 private:
  void Advance(TimePoint to) {
    std::lock_guard<std::mutex> lock(mu_);
    if (to > now_) now_ = to;
  }
  std::mutex mu_;
  TimePoint now_;
  std::chrono::nanoseconds oversleep_{0};
  std::chrono::nanoseconds coarse_oversleep_{0};
};

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_SIMULATED_CLOCK_H_
