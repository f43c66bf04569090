// A RequestSender that records every Prepare, CancelPrepared and Send with
// the clock's time and answers at once (or never, to model requests in
// flight). Thread-safe.
#ifndef SURGE_TESTS_TESTING_FAKE_REQUEST_SENDER_H_
#define SURGE_TESTS_TESTING_FAKE_REQUEST_SENDER_H_

#include <functional>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "worker/request_sender.h"

namespace surge::testing {

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
  void CancelPrepared(const surge::v1::Assignment& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.push_back(Sent{a.index(), ToNanos(clock_.Now())});
  }

  void Send(const surge::v1::Assignment& a, surge::worker::SendCallback on_done) override {
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent_.push_back(Sent{a.index(), now});
      if (!complete_at_once_) {
        held_.push_back({std::move(r), std::move(on_done)});
        return;
      }
    }
    on_done(std::move(r));
    if (after_send_) after_send_(a.index());
  }
  size_t inflight() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  void Shutdown(std::chrono::milliseconds) override {
    std::vector<std::pair<surge::v1::RequestRecord, surge::worker::SendCallback>> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
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
  void set_after_send(std::function<void(uint64_t)> f) { after_send_ = std::move(f); }
  // Changes each record before it is answered (or held), e.g. into a
  // connection failure. Set it before the first Send.
  void set_result(std::function<void(surge::v1::RequestRecord&)> f) { result_ = std::move(f); }

 private:
  Clock& clock_;
  const bool complete_at_once_;
  mutable std::mutex mu_;
  std::vector<Sent> sent_;
  std::vector<Sent> prepared_;
  std::vector<Sent> cancelled_;
  std::vector<std::pair<surge::v1::RequestRecord, surge::worker::SendCallback>> held_;
  std::function<void(uint64_t)> after_send_;
  std::function<void(surge::v1::RequestRecord&)> result_;
};

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_FAKE_REQUEST_SENDER_H_
