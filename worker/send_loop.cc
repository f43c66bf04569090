#include "worker/send_loop.h"

#include <algorithm>

namespace surge::worker {

SendLoop::SendLoop(Clock& clock, RequestSender& sender, SendLoopOptions options,
                   RecordCallback on_record)
    : clock_(clock), sender_(sender), options_(options), on_record_(std::move(on_record)) {}

void SendLoop::SetStart(int64_t t0_local_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  t0_local_ns_ = t0_local_ns;
  started_ = true;
}

void SendLoop::Enqueue(std::vector<surge::v1::Assignment> assignments) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& a : assignments) {
    horizon_ns_.store(std::max(horizon_ns_.load(), a.offset_ns()));
    queue_.push(std::move(a));
  }
}

size_t SendLoop::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

std::vector<surge::v1::Assignment> SendLoop::TakeUnreleased() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<surge::v1::Assignment> out;
  while (!queue_.empty()) {
    out.push_back(queue_.top());
    queue_.pop();
  }
  return out;
}

void SendLoop::Run() {
  const auto slice = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.slice);
  while (!stop_.load()) {
    int64_t due_ns = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (started_ && !queue_.empty()) due_ns = t0_local_ns_ + queue_.top().offset_ns();
      if (!started_ || queue_.empty()) due_ns = -1;
    }
    const Clock::TimePoint now = clock_.Now();
    if (due_ns < 0) {
      clock_.SleepUntilCoarse(now + slice);
      continue;
    }
    const Clock::TimePoint due = FromNanos(due_ns);
    if (due - now > slice) {
      // Far from the deadline: sleep one slice, then look again, so that an
      // earlier assignment or a stop is noticed. The last stretch below is a
      // precise absolute sleep.
      clock_.SleepUntilCoarse(std::min(due - slice / 2, now + slice));
      continue;
    }
    clock_.SleepUntil(due);
    const int64_t released_ns = ToNanos(clock_.Now());
    // The lease check sits here, at the release itself, not in a watchdog: a
    // pacer that wakes after a long stall must not send what the coordinator
    // may already have given to another worker (DISTRIBUTED.md §7).
    if (released_ns > lease_expiry_ns_.load()) {
      clock_.SleepUntilCoarse(clock_.Now() + slice);
      continue;
    }
    surge::v1::Assignment next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      next = queue_.top();
      queue_.pop();
    }
    Release(next, released_ns);
  }
}

void SendLoop::Release(const surge::v1::Assignment& assignment, int64_t released_local_ns) {
  int64_t t0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t0 = t0_local_ns_;
  }
  // R-REQ-2: wait for a free slot; the wait is recorded as blocked time and
  // shows up as lateness, the schedule itself is not reshaped.
  int64_t blocked_ns = 0;
  if (options_.max_inflight > 0 && sender_.inflight() >= options_.max_inflight) {
    const Clock::TimePoint start = clock_.Now();
    while (sender_.inflight() >= options_.max_inflight && !stop_.load()) {
      clock_.SleepUntilCoarse(clock_.Now() + std::chrono::microseconds(100));
    }
    blocked_ns = ToNanos(clock_.Now()) - ToNanos(start);
    if (stop_.load()) {  // stopped while held back: it was never sent
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push(assignment);
      return;
    }
  }
  released_.fetch_add(1);
  const int32_t worker = options_.worker_index;
  const int64_t planned_ns = assignment.offset_ns();
  sender_.Send(assignment, [this, t0, worker, planned_ns, released_local_ns,
                            blocked_ns](surge::v1::RequestRecord record) {
    record.set_worker(worker);
    record.set_planned_ns(planned_ns);
    record.set_released(true);
    record.set_released_ns(released_local_ns - t0);
    record.set_blocked_ns(blocked_ns);
    if (record.sent() || record.sent_ns() != 0) {
      record.set_sent(true);
      record.set_sent_ns(record.sent_ns() - t0);
    }
    on_record_(std::move(record));
  });
}

}  // namespace surge::worker
