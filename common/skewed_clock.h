// A Clock that runs offset and skewed against another (tests of the shared
// clock, R-DIST-4): `surge worker --simulate-clock-offset-ms X
// --simulate-clock-drift-ppm Y` gives one worker a clock that is X ms ahead
// of its host's and gains Y µs per second, so the clock-sync estimator and
// the pacer face a real offset and drift on one machine.
#ifndef SURGE_COMMON_SKEWED_CLOCK_H_
#define SURGE_COMMON_SKEWED_CLOCK_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "common/clock.h"
#include "common/clock_sync.h"  // ClockMapping: the same linear map

namespace surge {

// skewed = base + offset_ns + drift · (base − anchor), drift = drift_ppm/1e6,
// anchor = the base clock's Now() at construction (so the offset is
// offset_ns at the start, not the drift accumulated since boot). Sleeps wait
// on the base clock until the skewed deadline. Thread-safe when `base` is.
class SkewedClock final : public Clock {
 public:
  SkewedClock(Clock& base, int64_t offset_ns, double drift_ppm);

  TimePoint Now() override { return FromNanos(FromBase(ToNanos(base_.Now()))); }
  std::chrono::system_clock::time_point WallNow() override { return base_.WallNow(); }
  void SleepUntil(TimePoint deadline) override { base_.SleepUntil(BaseInstant(deadline)); }
  void SleepUntilCoarse(TimePoint deadline) override {
    base_.SleepUntilCoarse(BaseInstant(deadline));
  }
  // Waits and threads are the base clock's, deadlines mapped onto it.
  bool Await(ClockCondition& condition, std::unique_lock<std::mutex>& lock,
             absl::FunctionRef<bool()> done, TimePoint deadline) override {
    return base_.Await(condition, lock, done, BaseInstant(deadline));
  }
  void Notify(ClockCondition& condition) override { base_.Notify(condition); }
  std::thread StartThread(std::function<void()> body) override {
    return base_.StartThread(std::move(body));
  }
  void Join(std::thread& thread) override { base_.Join(thread); }

  // Skewed ns of the base instant `base_ns`, and the inverse (the base plays
  // the coordinator's clock of a ClockMapping anchored at construction).
  int64_t FromBase(int64_t base_ns) const { return map_.ToWorker(base_ns); }
  int64_t ToBase(int64_t skewed_ns) const { return map_.ToCoord(skewed_ns); }
  // The true offset skewed − base at the base instant `base_ns`, ns. On one
  // host the base is the coordinator's clock, so this is what the
  // estimator should find (reported beside the estimate).
  int64_t TrueOffsetAt(int64_t base_ns) const { return FromBase(base_ns) - base_ns; }

 private:
  // The base instant of the skewed instant `skewed`; a deadline of
  // TimePoint::max() (no deadline) stays one.
  TimePoint BaseInstant(TimePoint skewed) const {
    return skewed == TimePoint::max() ? skewed : FromNanos(ToBase(ToNanos(skewed)));
  }

  Clock& base_;
  const ClockMapping map_;
};

}  // namespace surge

#endif  // SURGE_COMMON_SKEWED_CLOCK_H_
