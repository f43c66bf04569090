// A RequestSender that records every Prepare, CancelPrepared and Send with
// the clock's time and answers at once, or never (to model requests in
// flight), or after a fixed latency on the clock (set_latency: a request
// sent at s is answered at the first inflight() or Send() call at or after
// s + latency, so a simulated server's answer time is exact). Thread-safe.
#ifndef SURGE_TESTS_TESTING_FAKE_REQUEST_SENDER_H_
#define SURGE_TESTS_TESTING_FAKE_REQUEST_SENDER_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "worker/request_sender.h"

namespace surge::testing {

// Request `index`, due `offset_ns` after t0, 3 output tokens: the pacer
// tests' assignments.
inline surge::v1::Assignment MakeAssignment(uint64_t index, int64_t offset_ns) {
  surge::v1::Assignment a;
  a.set_index(index);
  a.set_offset_ns(offset_ns);
  a.set_max_tokens(3);
  return a;
}

class FakeRequestSender final : public surge::worker::RequestSender {
 public:
  struct Sent {
    uint64_t index;
    int64_t at_ns;  // clock time of Send, absolute local ns
  };
  explicit FakeRequestSender(Clock& clock, bool complete_at_once = true)
      : clock_(clock), complete_at_once_(complete_at_once) {}

  void Prepare(const surge::v1::Assignment& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    prepared_.push_back(Sent{a.index(), ToNanos(clock_.Now())});
  }
  // One WarmConnections call: what the pacer told, and when.
  struct WarmConnectionsCall {
    double rate_rps;
    size_t prepared_at_once;
    int64_t at_ns;
  };
  void WarmConnections(double rate_rps, size_t prepared_at_once) override {
    std::lock_guard<std::mutex> lock(mu_);
    warm_connections_calls_.push_back(
        WarmConnectionsCall{rate_rps, prepared_at_once, ToNanos(clock_.Now())});
  }
  std::vector<WarmConnectionsCall> warm_connections_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return warm_connections_calls_;
  }
  void CancelPrepared(const surge::v1::Assignment& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.push_back(Sent{a.index(), ToNanos(clock_.Now())});
  }

  void Send(const surge::v1::Assignment& a, surge::worker::SendCallback on_done) override {
    AnswerDue();
    const int64_t now = ToNanos(clock_.Now());
    surge::v1::RequestRecord r;
    r.set_index(a.index());
    r.set_attempt(a.attempt());
    r.set_sent(true);
    r.set_sent_ns(now);
    r.set_status(surge::v1::OK);
    r.set_http_status(200);
    r.set_ttft_ns(1000);
    r.set_e2el_ns(2000);
    r.set_output_tokens(a.max_tokens());
    if (result_) result_(r);
    const bool later = latency_ns_ > 0 || capacity_period_ns_ > 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent_.push_back(Sent{a.index(), now});
      int64_t due = now + latency_ns_;
      if (capacity_period_ns_ > 0) {
        // One queue served at the capacity: answered one period after the
        // previous answer at the earliest; TTFT is the whole wait.
        due = std::max(due, last_due_ns_ + capacity_period_ns_);
        last_due_ns_ = due;
        r.set_ttft_ns(due - now);
        r.set_e2el_ns(due - now);
      }
      if (!complete_at_once_ || later) {
        held_.push_back({std::move(r), std::move(on_done)});
        held_due_ns_.push_back(due);
      }
    }
    if (later) {  // answered later; the hook still sees the send
      if (after_send_) after_send_(a.index());
      return;
    }
    if (!complete_at_once_) return;
    on_done(std::move(r));
    if (after_send_) after_send_(a.index());
  }
  size_t inflight() const override {
    const_cast<FakeRequestSender*>(this)->AnswerDue();
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  void Shutdown(std::chrono::milliseconds) override {
    std::vector<std::pair<surge::v1::RequestRecord, surge::worker::SendCallback>> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
      held_due_ns_.clear();
    }
    // As BeastRequestSender: what is still in flight is cut off and keeps
    // what is known of it.
    const int64_t now = ToNanos(clock_.Now());
    for (auto& [r, done] : held) {
      r.set_status(surge::v1::INTERRUPTED);
      r.set_error("interrupted: cut_off_at_stop");
      r.set_e2el_ns(0);
      r.set_interrupted_ns(now);
      done(std::move(r));
    }
  }
  // Completes the oldest held request.
  void CompleteOne() {
    std::pair<surge::v1::RequestRecord, surge::worker::SendCallback> one;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (held_.empty()) return;
      one = std::move(held_.front());
      held_.erase(held_.begin());
      held_due_ns_.erase(held_due_ns_.begin());
    }
    one.second(std::move(one.first));
  }
  std::vector<Sent> sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  std::vector<Sent> prepared() const {
    std::lock_guard<std::mutex> lock(mu_);
    return prepared_;
  }
  std::vector<Sent> cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  // Every request is answered `latency` after its Send (see the class
  // comment), with e2el_ns = latency. Set it before the first Send.
  void set_latency(std::chrono::nanoseconds latency) { latency_ns_ = latency.count(); }
  // A server of `rps` requests/s: requests wait in one FIFO queue and are
  // answered 1/rps apart at the earliest (after `latency`, when set), with
  // ttft_ns = e2el_ns = the whole wait. Above that rate the queue, the
  // requests in flight and the TTFT grow without bound. Set it before the
  // first Send.
  void set_capacity(double rps) {
    capacity_period_ns_ = static_cast<int64_t>(std::llround(1e9 / rps));
  }
  void set_after_send(std::function<void(uint64_t)> f) { after_send_ = std::move(f); }
  // Changes each record before it is answered (or held), e.g. into a
  // connection failure. Set it before the first Send.
  void set_result(std::function<void(surge::v1::RequestRecord&)> f) { result_ = std::move(f); }

 private:
  // Answers (outside the lock) every held request whose latency has passed.
  void AnswerDue() {
    if (latency_ns_ <= 0 && capacity_period_ns_ <= 0) return;
    std::vector<std::pair<surge::v1::RequestRecord, surge::worker::SendCallback>> due;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t now = ToNanos(clock_.Now());
      size_t k = 0;
      while (k < held_.size()) {
        if (held_due_ns_[k] <= now) {
          if (capacity_period_ns_ <= 0) held_[k].first.set_e2el_ns(latency_ns_);
          due.push_back(std::move(held_[k]));
          held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(k));
          held_due_ns_.erase(held_due_ns_.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          ++k;
        }
      }
    }
    for (auto& [r, done] : due) done(std::move(r));
  }

  Clock& clock_;
  const bool complete_at_once_;
  mutable std::mutex mu_;
  std::vector<Sent> sent_;
  std::vector<Sent> prepared_;
  std::vector<Sent> cancelled_;
  std::vector<WarmConnectionsCall> warm_connections_calls_;
  std::vector<std::pair<surge::v1::RequestRecord, surge::worker::SendCallback>> held_;
  std::vector<int64_t> held_due_ns_;  // when each held_ entry is answered
  int64_t latency_ns_ = 0;
  int64_t capacity_period_ns_ = 0;
  int64_t last_due_ns_ = 0;
  std::function<void(uint64_t)> after_send_;
  std::function<void(surge::v1::RequestRecord&)> result_;
};

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_FAKE_REQUEST_SENDER_H_
