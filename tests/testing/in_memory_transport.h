// A linked pair of Transports over queues, for dispatcher and worker tests
// without sockets. Messages travel as serialized bytes, like on the wire: a
// message protobuf cannot parse back (e.g. invalid UTF-8 in a string field)
// comes out of Receive as DATA_LOSS, as from ZmqRouterTransport. Thread-safe.
//
// Simulated time: after InMemoryRouter::UseSimulatedTime(clock, step), the
// router's Receive never waits in real time. It runs `step` (scripted peers
// act at the clock's current time, on the caller's thread), takes a queued
// message if there is one, and otherwise waits on the Clock until the
// receive deadline (an AutoAdvanceClock jumps there at once) and returns
// nullopt. A single-threaded test then runs the dispatcher on simulated time
// with exact, reproducible timestamps.
#ifndef SURGE_TESTS_TESTING_IN_MEMORY_TRANSPORT_H_
#define SURGE_TESTS_TESTING_IN_MEMORY_TRANSPORT_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/transport.h"

namespace surge::testing {

// One mailbox: frames (serialized Envelopes) with their sender's name.
class Mailbox {
 public:
  void Put(const std::string& peer, const surge::v1::Envelope& message) {
    std::string bytes;
    (void)message.SerializeToString(&bytes);
    PutRaw(peer, std::move(bytes));
  }
  // A frame of any bytes (tests of undecodable frames).
  void PutRaw(const std::string& peer, std::string bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(peer, std::move(bytes));
    cv_.notify_one();
  }
  // Waits at most `timeout` in real time.
  absl::StatusOr<std::optional<Inbound>> Take(std::chrono::milliseconds timeout) {
    std::pair<std::string, std::string> frame;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // A zero timeout only looks (no futex call: scripted workers poll often).
      if (timeout.count() <= 0 ? queue_.empty()
                               : !cv_.wait_for(lock, timeout, [this] { return !queue_.empty(); })) {
        return std::nullopt;
      }
      frame = std::move(queue_.front());
      queue_.pop_front();
    }
    return Decode(std::move(frame));
  }
  // Waits until `clock` reaches `deadline` when nothing is queued (simulated
  // time: the waiting is the clock's, never real).
  absl::StatusOr<std::optional<Inbound>> TakeBy(Clock& clock, Clock::TimePoint deadline) {
    std::pair<std::string, std::string> frame;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty()) {
        lock.unlock();
        clock.SleepUntilCoarse(deadline);
        return std::nullopt;
      }
      frame = std::move(queue_.front());
      queue_.pop_front();
    }
    return Decode(std::move(frame));
  }

 private:
  static absl::StatusOr<std::optional<Inbound>> Decode(std::pair<std::string, std::string> frame) {
    Inbound in;
    in.peer = std::move(frame.first);
    if (!in.message.ParseFromString(frame.second)) {
      return absl::DataLossError(
          absl::StrCat("frame of ", frame.second.size(), " bytes is not an Envelope"));
    }
    return std::optional<Inbound>(std::move(in));
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, std::string>> queue_;
};

// The coordinator's end: Send(peer) delivers to the worker named `peer`.
class InMemoryRouter final : public Transport {
 public:
  // Creates the end of worker `name`.
  std::unique_ptr<Transport> Connect(const std::string& name);
  absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workers_.find(peer);
    if (it == workers_.end()) return absl::UnavailableError("no such peer");
    it->second->Put("", message);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<Inbound>> Receive(std::chrono::milliseconds timeout) override {
    if (clock_ == nullptr) return inbox_.Take(timeout);
    if (step_) step_();
    return inbox_.TakeBy(*clock_, clock_->Now() + timeout);
  }
  // Receive waits on `clock` from now on, running `step` (may be empty)
  // before each take; see the file comment.
  void UseSimulatedTime(Clock& clock, std::function<void()> step) {
    clock_ = &clock;
    step_ = std::move(step);
  }
  Mailbox& inbox() { return inbox_; }
  // Delivers a frame of any bytes to worker `name` (tests of undecodable
  // frames); false when no such worker is connected.
  bool PutRawToWorker(const std::string& name, std::string bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workers_.find(name);
    if (it == workers_.end()) return false;
    it->second->PutRaw("", std::move(bytes));
    return true;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Mailbox>> workers_;
  Mailbox inbox_;
  Clock* clock_ = nullptr;
  std::function<void()> step_;
};

class InMemoryDealer final : public Transport {
 public:
  InMemoryDealer(std::string name, Mailbox& router_inbox, std::shared_ptr<Mailbox> own)
      : name_(std::move(name)), router_inbox_(router_inbox), own_(std::move(own)) {}
  absl::Status Send(const std::string&, const surge::v1::Envelope& message) override {
    router_inbox_.Put(name_, message);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<Inbound>> Receive(std::chrono::milliseconds timeout) override {
    return own_->Take(timeout);
  }

 private:
  std::string name_;
  Mailbox& router_inbox_;
  std::shared_ptr<Mailbox> own_;
};

inline std::unique_ptr<Transport> InMemoryRouter::Connect(const std::string& name) {
  auto box = std::make_shared<Mailbox>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers_[name] = box;
  }
  return std::make_unique<InMemoryDealer>(name, inbox_, box);
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_IN_MEMORY_TRANSPORT_H_
