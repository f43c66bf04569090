// Dispatcher + worker sessions over in-memory transports with fake senders:
// every planned request ends in exactly one record, assignments stripe over
// the workers, and a silent worker's work is reassigned or recorded as lost,
// never sent twice (R-DIST-3, R-DIST-5, R-DIST-6).
#include "coordinator/dispatch/dispatcher.h"

#include <map>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/plan/traffic.h"
#include "tests/testing/fake_request_sender.h"
#include "tests/testing/in_memory_transport.h"
#include "worker/worker_session.h"

namespace surge::coordinator {
namespace {

using surge::testing::FakeRequestSender;
using surge::testing::InMemoryRouter;

class FixedPayloads final : public PayloadSource {
 public:
  Payload At(uint64_t index) const override { return Payload{10, 4, index}; }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 private:
  std::string name_ = "synthetic";
  std::vector<std::string> warnings_;
};

ArrivalSchedule ConstantPlan(double rate_rps, uint64_t n) {
  ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = rate_rps;
  return *BuildArrivalSchedule(t, n, 0);
}

struct LocalWorker {
  std::unique_ptr<surge::Transport> transport;
  FakeRequestSender* sender = nullptr;
  std::thread thread;
  int exit_code = -1;
};

void StartWorker(InMemoryRouter& router, const std::string& name, int32_t index, LocalWorker& w) {
  w.transport = router.Connect(name);
  w.thread = std::thread([&w, index] {
    surge::worker::WorkerSessionOptions options;
    options.requested_index = index;
    surge::worker::WorkerSession session(
        RealClock(), *w.transport,
        [&w](const surge::v1::Welcome&)
            -> absl::StatusOr<std::unique_ptr<surge::worker::RequestSender>> {
          auto sender = std::make_unique<FakeRequestSender>(RealClock());
          w.sender = sender.get();
          return std::unique_ptr<surge::worker::RequestSender>(std::move(sender));
        },
        options);
    w.exit_code = session.Run();
  });
}

TEST(DispatcherTest, EveryRequestGetsExactlyOneRecordStripedOverWorkers) {
  const ArrivalSchedule plan = ConstantPlan(1000, 400);
  FixedPayloads payloads;
  InMemoryRouter router;
  DispatcherOptions options;
  options.num_workers = 2;
  options.run_id = "test";
  options.start_lead = std::chrono::milliseconds(100);
  options.max_batch = 16;  // many batches
  std::vector<surge::v1::RequestRecord> records;
  Dispatcher dispatcher(RealClock(), router, plan, payloads, options,
                        [&](const surge::v1::RequestRecord& r) { records.push_back(r); });
  LocalWorker w0, w1;
  StartWorker(router, "a", 0, w0);
  StartWorker(router, "b", 1, w1);
  auto outcome = dispatcher.Run();
  w0.thread.join();
  w1.thread.join();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->records, 400u);
  EXPECT_EQ(outcome->rejected_records, 0u);
  ASSERT_EQ(records.size(), 400u);
  std::set<uint64_t> seen;
  for (const auto& r : records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    EXPECT_EQ(r.status(), surge::v1::OK);
    EXPECT_EQ(r.worker(), static_cast<int32_t>(r.index() % 2)) << r.index();
    EXPECT_EQ(r.planned_ns(), static_cast<int64_t>(r.index() + 1) * 1000000);
    EXPECT_TRUE(r.sent());
    EXPECT_GE(r.sent_ns(), r.planned_ns());  // never early
  }
  EXPECT_EQ(w0.sender->sent().size() + w1.sender->sent().size(), 400u);
  EXPECT_EQ(w0.exit_code, surge::worker::kExitDone);
}

TEST(DispatcherTest, SilentWorkerIsDeclaredDeadAndNothingIsSentTwice) {
  const ArrivalSchedule plan = ConstantPlan(400, 600);  // 1.5 s
  FixedPayloads payloads;
  InMemoryRouter router;
  DispatcherOptions options;
  options.num_workers = 2;
  options.run_id = "test";
  options.start_lead = std::chrono::milliseconds(100);
  options.lease_ms = 200;
  options.dead_after = std::chrono::milliseconds(400);
  std::vector<surge::v1::RequestRecord> records;
  Dispatcher dispatcher(RealClock(), router, plan, payloads, options,
                        [&](const surge::v1::RequestRecord& r) { records.push_back(r); });
  LocalWorker live;
  StartWorker(router, "live", 0, live);
  // A worker that says Hello and then never speaks again (a hung process).
  auto ghost = router.Connect("ghost");
  surge::v1::Envelope hello;
  hello.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  hello.mutable_hello()->set_requested_index(1);
  ASSERT_TRUE(ghost->Send("", hello).ok());

  auto outcome = dispatcher.Run();
  live.thread.join();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->workers_lost, 1u);
  EXPECT_GT(outcome->reassigned, 0u);
  ASSERT_EQ(records.size(), 600u);
  std::set<uint64_t> seen;
  std::map<int, int> by_status;
  for (const auto& r : records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    ++by_status[r.status()];
    if (r.status() == surge::v1::LOST) {
      EXPECT_THAT(r.error(), ::testing::HasSubstr("send_unknown: worker 1 lost"));
      EXPECT_EQ(r.index() % 2, 1u);  // only the ghost's share
    }
  }
  // Requests the ghost held inside the lease window are lost; later ones went
  // to the live worker (attempt 1) and succeeded.
  EXPECT_GT(by_status[surge::v1::LOST], 0);
  EXPECT_EQ(by_status[surge::v1::OK] + by_status[surge::v1::LOST], 600);
  std::set<uint64_t> live_sent;
  for (const auto& s : live.sender->sent()) {
    EXPECT_TRUE(live_sent.insert(s.index).second) << "sent twice " << s.index;
  }
  EXPECT_EQ(live_sent.size(), static_cast<size_t>(by_status[surge::v1::OK]));
}

}  // namespace
}  // namespace surge::coordinator
