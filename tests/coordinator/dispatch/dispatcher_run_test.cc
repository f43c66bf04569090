// A run from start to end through real worker sessions on simulated time:
// every planned request ends in exactly one record, assignments stripe over
// the workers and leave exactly at their planned instant, the run starts
// only with every worker ready, Welcome carries the late-send policy, and
// no message is dropped at the end of a receive turn (R-DIST-3, R-DIST-5).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "coordinator/dispatch/dispatcher.h"
#include "tests/testing/dispatch_fixtures.h"
#include "tests/testing/session_harness.h"

namespace surge::coordinator {
namespace {

using surge::testing::ConstantPlan;
using surge::testing::DispatchRig;
using surge::testing::InMemoryRouter;
using surge::testing::kSimulatedStart;
using surge::testing::LocalWorker;
using surge::testing::TestOptions;

TEST(DispatcherRunTest, EveryRequestGetsExactlyOneRecordStripedOverWorkers) {
  DispatcherOptions options = TestOptions(2);
  options.max_batch = 16;  // many batches
  DispatchRig rig(ConstantPlan(1000, 400), options);
  LocalWorker& w0 = rig.AddWorker("a", 0);
  LocalWorker& w1 = rig.AddWorker("b", 1);
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
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
    // Simulated time: the workers' probes see no network delay, so the
    // measured clock mapping is exact and so is every send.
    EXPECT_EQ(r.sent_ns(), r.planned_ns()) << r.index();
  }
  EXPECT_EQ(w0.sender->sent().size() + w1.sender->sent().size(), 400u);
  EXPECT_EQ(w0.exit_code, surge::worker::kExitDone);
  EXPECT_EQ(w1.exit_code, surge::worker::kExitDone);
}

// The run starts only when every worker is ready (its first heartbeat,
// sent once its HTTP sender exists); one that said Hello and never became
// ready fails the start, and nothing is sent.
TEST(DispatcherRunTest, RunStartsOnlyWhenEveryWorkerIsReady) {
  DispatcherOptions options = TestOptions(2);
  options.hello_timeout = std::chrono::milliseconds(600);
  DispatchRig rig(ConstantPlan(100, 20), options);
  LocalWorker& live = rig.AddWorker("live", 0);
  auto unready = rig.router.Connect("unready");  // Hello only: still starting up
  surge::v1::Envelope hello;
  hello.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  hello.mutable_hello()->set_requested_index(1);
  ASSERT_TRUE(unready->Send("", hello).ok());
  const auto& outcome = rig.Run();
  // Given up at the first receive wait's end after the 600 ms hello timeout.
  EXPECT_EQ(rig.ended, kSimulatedStart + std::chrono::milliseconds(605));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(outcome.status().message()),
              ::testing::HasSubstr("only 1 of 2 workers were ready (2 connected)"));
  EXPECT_TRUE(rig.records.empty());
  // The live worker got no Start and no work, and was told to stop: the run
  // did not happen, which its exit code says.
  EXPECT_EQ(live.exit_code, surge::worker::kExitRunNotStarted);
  EXPECT_TRUE(live.sender->sent().empty());
}

// The late-send policy reaches every worker in Welcome, the catch-up rate
// split equally (as --max-concurrency is): 300 RPS over two workers is 150
// each; the threshold in ns.
TEST(DispatcherRunTest, WelcomeCarriesTheLatePolicyWithEachWorkersShare) {
  DispatcherOptions options = TestOptions(2);
  options.late_policy = surge::v1::LATE_POLICY_CAP;
  options.late_threshold_ns = 25000000;
  options.catch_up_rps = 300;
  DispatchRig rig(ConstantPlan(1000, 20), options);
  surge::v1::Welcome seen[2];
  for (int k = 0; k < 2; ++k) {
    rig.AddWorker(
        k == 0 ? "a" : "b", k,
        {.on_welcome = [&seen, k](const surge::v1::Welcome& welcome) { seen[k] = welcome; }});
  }
  const auto& outcome = rig.Run();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->records, 20u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(seen[k].late_policy(), surge::v1::LATE_POLICY_CAP) << k;
    EXPECT_EQ(seen[k].late_threshold_ns(), 25000000) << k;
    EXPECT_EQ(seen[k].catch_up_rps(), 150) << k;
  }
}

// The dispatcher takes up to 4096 messages per turn; the message taken when
// the turn ends must be handled, not dropped. Here a worker's record sits
// right behind 4096 heartbeats: it used to be the one dropped, and its
// request ended lost instead of ok.
class FloodOnStart final : public surge::Transport {
 public:
  explicit FloodOnStart(InMemoryRouter& router) : router_(router) {}
  absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) override {
    if (message.has_start()) {
      // Queued before the dispatcher's first turn, all at once.
      for (int i = 0; i < 4096; ++i) {
        surge::v1::Envelope hb;
        hb.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
        hb.mutable_heartbeat()->set_hb_seq(i + 1);
        hb.mutable_heartbeat()->set_inflight(1);
        router_.inbox().Put(peer, hb);
      }
      surge::v1::Envelope batch;
      batch.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
      auto* r = batch.mutable_record_batch()->add_records();
      r->set_index(0);
      r->set_attempt(0);
      r->set_status(surge::v1::OK);
      r->set_sent(true);
      router_.inbox().Put(peer, batch);
    }
    return router_.Send(peer, message);
  }
  absl::StatusOr<std::optional<Inbound>> Receive(Clock::TimePoint deadline) override {
    return router_.Receive(deadline);
  }

 private:
  InMemoryRouter& router_;
};

TEST(DispatcherRunTest, TheMessageTakenWhenATurnEndsIsHandled) {
  DispatchRig rig(ConstantPlan(10, 1), TestOptions(1),
                  [](InMemoryRouter& router) { return std::make_unique<FloodOnStart>(router); });
  auto peer = rig.router.Connect("w");
  surge::v1::Envelope hello;
  hello.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  hello.mutable_hello()->set_requested_index(0);
  ASSERT_TRUE(peer->Send("", hello).ok());
  // Ready (a first heartbeat): the run starts only with every worker ready.
  surge::v1::Envelope ready;
  ready.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  ready.mutable_heartbeat()->set_hb_seq(0);
  ASSERT_TRUE(peer->Send("", ready).ok());
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].status(), surge::v1::OK) << records[0].error();
  EXPECT_EQ(outcome->workers_lost, 0u);
}

}  // namespace
}  // namespace surge::coordinator
