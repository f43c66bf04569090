// Simulated time for tests: the clock moves only when the code under test
// waits, so a run of seconds takes milliseconds and every timestamp is
// exact and reproducible.
//
// AutoAdvanceClock: one thread drives time; every wait jumps the clock to
// its deadline at once. Before each condition wait it runs the `world` (the
// scripted peers of a single-threaded simulation act at the current instant,
// on the waiting thread).
//
// SimulatedClock: several threads (a dispatcher, worker sessions and their
// pacers) share simulated time. It keeps every waiting thread with its
// deadline; time moves only when every running thread waits, to the earliest
// deadline, and wakes the waiters due then; a Notify wakes a condition's
// waiters at the current instant. Threads that wait on it are started and
// joined through it (Clock::StartThread, Clock::Join), so it knows who runs.
#ifndef SURGE_TESTS_TESTING_SIMULATED_CLOCK_H_
#define SURGE_TESTS_TESTING_SIMULATED_CLOCK_H_

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <list>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "common/clock.h"

namespace surge::testing {

inline constexpr Clock::TimePoint kSimulatedStart = Clock::TimePoint(std::chrono::seconds(1000));
// 2026-01-01 00:00:00 UTC: what WallNow() says on simulated time.
inline std::chrono::system_clock::time_point SimulatedWallNow() {
  return std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
}

// SleepUntil/SleepUntilCoarse advance Now() to the deadline (never back).
// Optional `oversleep` is added to every precise sleep, to model a late
// wake-up, and `coarse_oversleep` to every coarse one, to model
// clock_nanosleep waking 50-300 µs late (the reason RealClock spins the last
// 200 µs of a precise sleep). A condition wait runs the world, then jumps to
// its deadline while the condition is false; without a deadline it blocks
// until another thread notifies. Thread-safe.
class AutoAdvanceClock final : public Clock {
 public:
  explicit AutoAdvanceClock(TimePoint start = kSimulatedStart) : now_(start) {}
  TimePoint Now() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  std::chrono::system_clock::time_point WallNow() override { return SimulatedWallNow(); }
  void SleepUntil(TimePoint deadline) override { Advance(deadline + oversleep_); }
  void SleepUntilCoarse(TimePoint deadline) override { Advance(deadline + coarse_oversleep_); }
  bool Await(ClockCondition& condition, std::unique_lock<std::mutex>& lock,
             absl::FunctionRef<bool()> done, TimePoint deadline) override {
    RunWorld(lock);
    while (!done()) {
      if (deadline == TimePoint::max()) {
        condition.cv().wait(lock);
        continue;
      }
      if (Now() >= deadline) return false;
      lock.unlock();
      Advance(deadline);
      lock.lock();
    }
    return true;
  }
  void AdvanceBy(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  void set_oversleep(std::chrono::nanoseconds d) { oversleep_ = d; }
  void set_coarse_oversleep(std::chrono::nanoseconds d) { coarse_oversleep_ = d; }
  // Runs at the start of every condition wait (not within itself), with the
  // waiter's lock released: the other parties of a single-threaded
  // simulation act at the current instant before the waiter looks.
  void set_world(std::function<void()> world) { world_ = std::move(world); }

 private:
  void Advance(TimePoint to) {
    std::lock_guard<std::mutex> lock(mu_);
    if (to > now_) now_ = to;
  }
  void RunWorld(std::unique_lock<std::mutex>& lock) {
    if (!world_ || in_world_) return;
    in_world_ = true;
    lock.unlock();
    world_();
    lock.lock();
    in_world_ = false;
  }
  std::mutex mu_;
  TimePoint now_;
  std::chrono::nanoseconds oversleep_{0};
  std::chrono::nanoseconds coarse_oversleep_{0};
  std::function<void()> world_;
  bool in_world_ = false;  // the driving thread's only
};

// See the file comment. The thread that constructs it counts as running
// until it waits; every other thread that waits on it must be started by
// StartThread, and joined by Join. A state in which every thread waits
// without a deadline is a deadlock of the code under test: it aborts.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(TimePoint start = kSimulatedStart) : now_(start) {}
  TimePoint Now() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  std::chrono::system_clock::time_point WallNow() override { return SimulatedWallNow(); }
  void SleepUntil(TimePoint deadline) override { Sleep(deadline); }
  void SleepUntilCoarse(TimePoint deadline) override { Sleep(deadline); }

  bool Await(ClockCondition& condition, std::unique_lock<std::mutex>& lock,
             absl::FunctionRef<bool()> done, TimePoint deadline) override {
    while (!done()) {
      Waiter w(&condition, deadline);
      std::unique_lock<std::mutex> own(mu_);
      if (now_ >= deadline) return false;
      // Registered before `lock` is released: a change made under it after
      // this point is followed by a Notify that finds this waiter.
      Block(w);
      lock.unlock();
      WaitWoken(w, own);
      own.unlock();
      lock.lock();
    }
    return true;
  }
  void Notify(ClockCondition& condition) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (Waiter* w : waiters_) {
      if (w->condition == &condition) Wake(*w);
    }
  }
  std::thread StartThread(std::function<void()> body) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++running_;  // from now: the thread may not have run yet
    }
    return std::thread([this, body = std::move(body)] {
      body();
      std::lock_guard<std::mutex> lock(mu_);
      const std::thread::id self = std::this_thread::get_id();
      // A thread being joined hands its count to the joiner, so that time
      // cannot move between its end and the joiner's return.
      if (joining_.erase(self) > 0) return;
      ended_.insert(self);
      --running_;
      AdvanceIfAllWait();
    });
  }
  void Join(std::thread& thread) override {
    const std::thread::id id = thread.get_id();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_.erase(id) == 0) {
        joining_.insert(id);
        --running_;  // a joining thread waits for the others
        AdvanceIfAllWait();
      }
    }
    thread.join();
  }

 private:
  struct Waiter {
    Waiter(const ClockCondition* c, TimePoint d) : condition(c), deadline(d) {}
    const ClockCondition* condition;  // null: a sleep
    TimePoint deadline;
    bool woken = false;
    std::condition_variable cv;
  };

  void Sleep(TimePoint deadline) {
    Waiter w(nullptr, deadline);
    std::unique_lock<std::mutex> own(mu_);
    if (now_ >= deadline) return;
    Block(w);
    WaitWoken(w, own);
  }
  // Under mu_: `w` waits from now on.
  void Block(Waiter& w) {
    waiters_.push_back(&w);
    --running_;
    AdvanceIfAllWait();
  }
  // Under mu_ (held by `own`): blocks until `w` is woken, then forgets it.
  void WaitWoken(Waiter& w, std::unique_lock<std::mutex>& own) {
    w.cv.wait(own, [&w] { return w.woken; });
    waiters_.remove(&w);
  }
  // Under mu_: a woken waiter runs again (counted at once, before it is
  // scheduled, so time cannot move past it).
  void Wake(Waiter& w) {
    if (w.woken) return;
    w.woken = true;
    ++running_;
    w.cv.notify_one();
  }
  // Under mu_: when nobody runs, time moves to the earliest deadline and
  // every waiter due then wakes.
  void AdvanceIfAllWait() {
    if (running_ > 0) return;
    TimePoint next = TimePoint::max();
    for (const Waiter* w : waiters_) {
      if (!w->woken) next = std::min(next, w->deadline);
    }
    if (next == TimePoint::max()) {
      if (waiters_.empty()) return;  // every thread has ended
      std::fprintf(stderr, "SimulatedClock: every thread waits without a deadline\n");
      std::abort();
    }
    now_ = std::max(now_, next);
    for (Waiter* w : waiters_) {
      if (!w->woken && w->deadline <= now_) Wake(*w);
    }
  }

  std::mutex mu_;
  TimePoint now_;
  int running_ = 1;  // the constructing thread
  std::list<Waiter*> waiters_;
  // Started threads that ended before anyone joined them, and those a
  // thread is joining (see StartThread).
  std::set<std::thread::id> ended_;
  std::set<std::thread::id> joining_;
};

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_SIMULATED_CLOCK_H_
