// RealClock: the only caller of std::chrono::*::now() in surge.
#include <time.h>

#include <cerrno>

#include "common/clock.h"

namespace surge {
namespace {

// Why a spin window: clock_nanosleep wakes up late (timer slack plus
// scheduler wake-up): on the project's VM, idle, p50 92 µs, p99 146 µs and
// p99.9 310 µs (docs/PERFORMANCE.md, bottleneck 2). Sleeping to `deadline - 200 µs`
// and spinning the rest keeps the release within a few µs of the deadline at
// the cost of at most 200 µs of one core per release.
constexpr std::chrono::microseconds kSpinWindow{200};

class RealClockImpl final : public Clock {
 public:
  TimePoint Now() override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point WallNow() override {
    return std::chrono::system_clock::now();
  }
  void SleepUntil(TimePoint deadline) override {
    SleepUntilCoarse(deadline - kSpinWindow);
    while (Now() < deadline) {
    }
  }
  void SleepUntilCoarse(TimePoint deadline) override {
    if (Now() >= deadline) return;
    // steady_clock is CLOCK_MONOTONIC in libstdc++; an absolute sleep resumes
    // toward the same instant when a signal interrupts it.
    const int64_t ns = ToNanos(deadline);
    timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
};

}  // namespace

Clock& RealClock() {
  static RealClockImpl* clock = new RealClockImpl();
  return *clock;
}

}  // namespace surge
