// The real-rate defaults of Clock's waits and threads.
#include "common/clock.h"

#include <utility>

namespace surge {

bool Clock::Await(ClockCondition& condition, std::unique_lock<std::mutex>& lock,
                  absl::FunctionRef<bool()> done, TimePoint deadline) {
  while (!done()) {
    if (deadline == TimePoint::max()) {
      condition.cv().wait(lock);
      continue;
    }
    const TimePoint now = Now();
    if (now >= deadline) return false;
    // This clock runs at the real rate: its remaining time is real time.
    condition.cv().wait_for(lock, deadline - now);
  }
  return true;
}

void Clock::Notify(ClockCondition& condition) { condition.cv().notify_all(); }

std::thread Clock::StartThread(std::function<void()> body) { return std::thread(std::move(body)); }

void Clock::Join(std::thread& thread) { thread.join(); }

}  // namespace surge
