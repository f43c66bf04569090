// What the dispatcher tests share: a payload source that needs no dataset,
// a constant-rate plan, the usual options, and DispatchRig, one test's
// whole set-up (clock, in-memory transport, dispatcher, records, workers).
#ifndef SURGE_TESTS_TESTING_DISPATCH_FIXTURES_H_
#define SURGE_TESTS_TESTING_DISPATCH_FIXTURES_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"
#include "tests/testing/in_memory_transport.h"
#include "tests/testing/scripted_worker.h"
#include "tests/testing/session_harness.h"
#include "tests/testing/simulated_clock.h"

namespace surge::testing {

// Every request: 10 input and 4 output tokens, the index as the prompt seed.
class FixedPayloads final : public surge::coordinator::PayloadSource {
 public:
  surge::coordinator::Payload At(uint64_t index) const override {
    return surge::coordinator::Payload{10, 4, index};
  }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 private:
  std::string name_ = "synthetic";
  std::vector<std::string> warnings_;
};

// `n` requests at `rate_rps`, evenly spaced (burstiness 0), seed 0.
inline surge::coordinator::ArrivalSchedule ConstantPlan(double rate_rps, uint64_t n) {
  surge::coordinator::ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = rate_rps;
  return *surge::coordinator::BuildArrivalSchedule(t, n, 0);
}

// Options of most dispatcher tests: `num_workers` workers, run id "test", a
// 100 ms start lead.
inline surge::coordinator::DispatcherOptions TestOptions(int num_workers) {
  surge::coordinator::DispatcherOptions options;
  options.num_workers = num_workers;
  options.run_id = "test";
  options.start_lead = std::chrono::milliseconds(100);
  return options;
}

// One dispatcher test: `plan` over FixedPayloads with `options`, on
// simulated time, every record kept in `records`. The workers are either
// real worker sessions on threads of a SimulatedClock (AddWorker; the
// default SimClock) or scripted workers the test steps in the world of an
// AutoAdvanceClock (AddScriptedWorker, then clock.set_world). Run() runs
// the dispatcher, notes the instants it started and ended, and joins every
// thread the rig started. `wrap` (optional) puts a transport of the test's
// between the dispatcher and the router.
template <class SimClock = SimulatedClock>
class DispatchRig {
 public:
  using Transport = surge::Transport;
  using TransportWrap = std::function<std::unique_ptr<Transport>(InMemoryRouter&)>;

  DispatchRig(surge::coordinator::ArrivalSchedule plan_in,
              surge::coordinator::DispatcherOptions options, TransportWrap wrap = nullptr)
      : plan(std::move(plan_in)),
        wrapped(wrap ? wrap(router) : nullptr),
        dispatcher(clock, wrapped ? *wrapped : static_cast<Transport&>(router), plan, payloads,
                   std::move(options),
                   [this](const surge::v1::RequestRecord& r) { records.push_back(r); }) {}
  DispatchRig(const DispatchRig&) = delete;
  DispatchRig& operator=(const DispatchRig&) = delete;

  // A real worker session named `name` asking for `index` (see StartWorker).
  LocalWorker& AddWorker(const std::string& name, int32_t index, WorkerSetup setup = {}) {
    LocalWorker& w = local_.emplace_back();
    StartWorker(clock, router, name, index, w, std::move(setup));
    return w;
  }
  // A scripted worker named `name` asking for `index`; the test steps it.
  ScriptedWorker& AddScriptedWorker(const std::string& name, int32_t index) {
    scripted.push_back(std::make_unique<ScriptedWorker>(clock, router.Connect(name), index));
    return *scripted.back();
  }
  // A thread of the simulation (a user who stops the run, a hand-written
  // worker), joined by Run().
  void StartThread(std::function<void()> body) {
    threads_.push_back(clock.StartThread(std::move(body)));
  }

  const absl::StatusOr<surge::coordinator::DispatchOutcome>& Run() {
    started = clock.Now();
    outcome = dispatcher.Run();
    ended = clock.Now();
    for (std::thread& t : threads_) clock.Join(t);
    for (LocalWorker& w : local_) clock.Join(w.thread);
    return outcome;
  }

  SimClock clock;
  InMemoryRouter router{clock};
  FixedPayloads payloads;
  const surge::coordinator::ArrivalSchedule plan;
  std::vector<surge::v1::RequestRecord> records;
  std::vector<std::unique_ptr<ScriptedWorker>> scripted;
  // The transport `wrap` made (null without one).
  std::unique_ptr<Transport> wrapped;
  surge::coordinator::Dispatcher dispatcher;
  absl::StatusOr<surge::coordinator::DispatchOutcome> outcome;
  Clock::TimePoint started;
  Clock::TimePoint ended;

 private:
  std::deque<LocalWorker> local_;  // stable references for AddWorker's callers
  std::list<std::thread> threads_;
};

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_DISPATCH_FIXTURES_H_
