// Real worker sessions (worker/worker_session.h) with fake senders, run on
// threads of a SimulatedClock against a dispatcher over an in-memory
// transport: the dispatcher tests' workers. Every session, its pacer and
// the dispatcher share simulated time, so a run of seconds takes
// milliseconds and every send happens exactly at its deadline.
#ifndef SURGE_TESTS_TESTING_SESSION_HARNESS_H_
#define SURGE_TESTS_TESTING_SESSION_HARNESS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "tests/testing/fake_request_sender.h"
#include "tests/testing/in_memory_transport.h"
#include "tests/testing/simulated_clock.h"
#include "worker/worker_session.h"

namespace surge::testing {

// One worker session on its own thread, and what the test reads after it.
struct LocalWorker {
  std::unique_ptr<surge::Transport> transport;
  // The session's sender; shared, so that the test reads it after the
  // session (which destroys what its factory made) has ended.
  std::shared_ptr<FakeRequestSender> sender;
  std::thread thread;
  int exit_code = -1;
};

// What the session's factory returns: forwards to the shared fake sender.
class SharedSender final : public surge::worker::RequestSender {
 public:
  explicit SharedSender(std::shared_ptr<FakeRequestSender> fake) : fake_(std::move(fake)) {}
  void Send(const surge::v1::Assignment& a, surge::worker::SendCallback on_done) override {
    fake_->Send(a, std::move(on_done));
  }
  void Prepare(const surge::v1::Assignment& a) override { fake_->Prepare(a); }
  void CancelPrepared(const surge::v1::Assignment& a) override { fake_->CancelPrepared(a); }
  size_t inflight() const override { return fake_->inflight(); }
  void Shutdown(std::chrono::milliseconds drain) override { fake_->Shutdown(drain); }

 private:
  std::shared_ptr<FakeRequestSender> fake_;
};

// How StartWorker runs a worker session; the defaults are a plain worker on
// the simulation's clock whose fake sender answers at once.
struct WorkerSetup {
  bool complete_at_once = true;
  // Applied to every record the fake sender produces; null = none.
  std::function<void(surge::v1::RequestRecord&)> result = nullptr;
  // The worker's open-file limit; 0 = the process's.
  uint64_t fd_limit = 0;
  // > 0: every request is answered that long after its send.
  std::chrono::nanoseconds latency{};
  // > 0: a server of that many requests/s (FakeRequestSender::set_capacity).
  double capacity_rps = 0;
  // The worker's clock (e.g. a SkewedClock over the simulation's), for the
  // session, its transport end and the sender; null = the simulation's.
  Clock* clock = nullptr;
  bool same_clock = false;
  // Called with the Welcome the session got; null = none.
  std::function<void(const surge::v1::Welcome&)> on_welcome = nullptr;
  // Puts a transport of the test's between the session and its end of the
  // router; null = none.
  std::function<std::unique_ptr<surge::Transport>(std::unique_ptr<surge::Transport>)>
      wrap_transport = nullptr;
};

// Connects worker `name` to `router` and runs its session on a thread of
// `sim` (join it with sim.Join(w.thread)).
inline void StartWorker(SimulatedClock& sim, InMemoryRouter& router, const std::string& name,
                        int32_t index, LocalWorker& w, WorkerSetup setup = {}) {
  Clock* clock = setup.clock != nullptr ? setup.clock : &sim;
  w.transport = router.Connect(name, clock);
  if (setup.wrap_transport) w.transport = setup.wrap_transport(std::move(w.transport));
  w.thread = sim.StartThread([&w, clock, index, setup] {
    surge::worker::WorkerSessionOptions options;
    options.requested_index = index;
    options.fd_limit = setup.fd_limit;
    options.same_clock = setup.same_clock;
    options.read_cpu = false;  // real CPU counters mean nothing on simulated time
    surge::worker::WorkerSession session(
        *clock, *w.transport,
        [&w, clock, setup](const surge::v1::Welcome& welcome)
            -> absl::StatusOr<std::unique_ptr<surge::worker::RequestSender>> {
          if (setup.on_welcome) setup.on_welcome(welcome);
          auto sender = std::make_shared<FakeRequestSender>(*clock, setup.complete_at_once);
          if (setup.result) sender->set_result(setup.result);
          if (setup.latency.count() > 0) sender->set_latency(setup.latency);
          if (setup.capacity_rps > 0) sender->set_capacity(setup.capacity_rps);
          w.sender = sender;
          return std::unique_ptr<surge::worker::RequestSender>(
              std::make_unique<SharedSender>(std::move(sender)));
        },
        options);
    w.exit_code = session.Run();
  });
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_SESSION_HARNESS_H_
