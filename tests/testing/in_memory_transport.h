// A linked pair of Transports over queues, for dispatcher and worker tests
// without sockets. Thread-safe.
#ifndef SURGE_TESTS_TESTING_IN_MEMORY_TRANSPORT_H_
#define SURGE_TESTS_TESTING_IN_MEMORY_TRANSPORT_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>

#include "common/transport.h"

namespace surge::testing {

// One mailbox: messages with their sender's name.
class Mailbox {
 public:
  void Put(Inbound in) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(in));
    cv_.notify_one();
  }
  std::optional<Inbound> Take(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !queue_.empty(); })) return std::nullopt;
    Inbound in = std::move(queue_.front());
    queue_.pop_front();
    return in;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Inbound> queue_;
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
    it->second->Put(Inbound{"", message});
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<Inbound>> Receive(std::chrono::milliseconds timeout) override {
    return inbox_.Take(timeout);
  }
  Mailbox& inbox() { return inbox_; }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Mailbox>> workers_;
  Mailbox inbox_;
};

class InMemoryDealer final : public Transport {
 public:
  InMemoryDealer(std::string name, Mailbox& router_inbox, std::shared_ptr<Mailbox> own)
      : name_(std::move(name)), router_inbox_(router_inbox), own_(std::move(own)) {}
  absl::Status Send(const std::string&, const surge::v1::Envelope& message) override {
    router_inbox_.Put(Inbound{name_, message});
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
