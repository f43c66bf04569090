// A linked pair of Transports over queues, for dispatcher and worker tests
// without sockets. Messages travel as serialized bytes, like on the wire: a
// message protobuf cannot parse back (e.g. invalid UTF-8 in a string field)
// comes out of Receive as DATA_LOSS, as from ZmqRouterTransport. Receive
// waits on the clock its end was made with (a ClockCondition): on a
// simulated clock a receive deadline is simulated time, and a message put in
// a mailbox wakes its reader at the current simulated instant. Thread-safe.
#ifndef SURGE_TESTS_TESTING_IN_MEMORY_TRANSPORT_H_
#define SURGE_TESTS_TESTING_IN_MEMORY_TRANSPORT_H_

#include <deque>
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

// One mailbox: frames (serialized Envelopes) with their sender's name; its
// reader waits on `clock`.
class Mailbox {
 public:
  explicit Mailbox(Clock& clock) : arrived_(clock) {}
  void Put(const std::string& peer, const surge::v1::Envelope& message) {
    std::string bytes;
    (void)message.SerializeToString(&bytes);
    PutRaw(peer, std::move(bytes));
  }
  // A frame of any bytes (tests of undecodable frames).
  void PutRaw(const std::string& peer, std::string bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back(peer, std::move(bytes));
    }
    arrived_.Notify();
  }
  // Waits until `deadline` on the reader's clock for a frame.
  absl::StatusOr<std::optional<Inbound>> Take(Clock::TimePoint deadline) {
    std::pair<std::string, std::string> frame;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!arrived_.WaitUntil(
              lock, [this] { return !queue_.empty(); }, deadline)) {
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
  ClockCondition arrived_;
  std::deque<std::pair<std::string, std::string>> queue_;
};

// The coordinator's end, on `clock`: Send(peer) delivers to the worker
// named `peer`.
class InMemoryRouter final : public Transport {
 public:
  explicit InMemoryRouter(Clock& clock = RealClock()) : clock_(clock), inbox_(clock) {}
  // Creates the end of worker `name`, whose Receive waits on `clock` (the
  // worker's own, e.g. a SkewedClock); null = the router's clock.
  std::unique_ptr<Transport> Connect(const std::string& name, Clock* clock = nullptr);
  absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workers_.find(peer);
    if (it == workers_.end()) return absl::UnavailableError("no such peer");
    it->second->Put("", message);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<Inbound>> Receive(Clock::TimePoint deadline) override {
    return inbox_.Take(deadline);
  }
  Mailbox& inbox() { return inbox_; }
  // Worker `name`'s connection closes (its process was killed): from now on
  // a send to it fails, as ZeroMQ's ROUTER refuses a peer it no longer
  // knows.
  void Disconnect(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    workers_.erase(name);
  }
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
  Clock& clock_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Mailbox>> workers_;
  Mailbox inbox_;
};

class InMemoryDealer final : public Transport {
 public:
  InMemoryDealer(std::string name, Mailbox& router_inbox, std::shared_ptr<Mailbox> own)
      : name_(std::move(name)), router_inbox_(router_inbox), own_(std::move(own)) {}
  absl::Status Send(const std::string&, const surge::v1::Envelope& message) override {
    router_inbox_.Put(name_, message);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<Inbound>> Receive(Clock::TimePoint deadline) override {
    return own_->Take(deadline);
  }

 private:
  std::string name_;
  Mailbox& router_inbox_;
  std::shared_ptr<Mailbox> own_;
};

inline std::unique_ptr<Transport> InMemoryRouter::Connect(const std::string& name, Clock* clock) {
  auto box = std::make_shared<Mailbox>(clock != nullptr ? *clock : clock_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers_[name] = box;
  }
  return std::make_unique<InMemoryDealer>(name, inbox_, box);
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_IN_MEMORY_TRANSPORT_H_
