// Lost workers and damaged messages, through real worker sessions on
// simulated time: a silent worker's work is reassigned or recorded as lost,
// never sent twice; undecodable frames are skipped and counted; a lost
// record does not stall the run; refused record batches are sent again
// (R-DIST-3, R-DIST-6).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/skewed_clock.h"
#include "coordinator/dispatch/dispatcher.h"
#include "tests/testing/dispatch_fixtures.h"
#include "tests/testing/session_harness.h"

namespace surge::coordinator {
namespace {

using surge::testing::ConstantPlan;
using surge::testing::DispatchRig;
using surge::testing::LocalWorker;
using surge::testing::SimulatedClock;
using surge::testing::TestOptions;

TEST(DispatcherLossTest, SilentWorkerIsDeclaredDeadAndNothingIsSentTwice) {
  DispatcherOptions options = TestOptions(2);
  options.lease_ms = 200;
  options.dead_after = std::chrono::milliseconds(400);
  DispatchRig rig(ConstantPlan(400, 600), options);  // 1.5 s
  LocalWorker& live = rig.AddWorker("live", 0);
  // A worker that says Hello and then never speaks again (a hung process).
  auto ghost = rig.router.Connect("ghost");
  surge::v1::Envelope hello;
  hello.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  hello.mutable_hello()->set_requested_index(1);
  ASSERT_TRUE(ghost->Send("", hello).ok());
  // One heartbeat: it was ready (the run waits for that), then it hangs.
  surge::v1::Envelope heartbeat;
  heartbeat.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  heartbeat.mutable_heartbeat()->set_hb_seq(1);
  ASSERT_TRUE(ghost->Send("", heartbeat).ok());

  const auto& outcome = rig.Run();
  const auto& records = rig.records;
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
    } else if (r.status() == surge::v1::NOT_SENT) {
      EXPECT_THAT(r.error(), ::testing::HasSubstr("not_sent: worker 1 lost before this request"));
      EXPECT_EQ(r.index() % 2, 1u);
    }
  }
  // Requests the ghost held inside its lease are lost; those after the lease
  // but already due at the death are not sent; later ones went to the live
  // worker (attempt 1) and succeeded.
  EXPECT_GT(by_status[surge::v1::LOST], 0);
  EXPECT_GT(by_status[surge::v1::NOT_SENT], 0);
  EXPECT_EQ(by_status[surge::v1::OK] + by_status[surge::v1::LOST] + by_status[surge::v1::NOT_SENT],
            600);
  // The loss is counted for the summary and the exit status.
  EXPECT_EQ(outcome->send_unknown, static_cast<uint64_t>(by_status[surge::v1::LOST]));
  // One loss event whose counts are the records' (every retried request of
  // the ghost's share ended OK on the live worker).
  ASSERT_EQ(outcome->worker_losses.size(), 1u);
  EXPECT_EQ(outcome->worker_losses[0].worker, 1);
  EXPECT_EQ(outcome->worker_losses[0].send_unknown,
            static_cast<uint64_t>(by_status[surge::v1::LOST]));
  EXPECT_EQ(outcome->worker_losses[0].not_sent,
            static_cast<uint64_t>(by_status[surge::v1::NOT_SENT]));
  EXPECT_EQ(outcome->worker_losses[0].reassigned, outcome->reassigned);
  std::set<uint64_t> live_sent;
  for (const auto& s : live.sender->sent()) {
    EXPECT_TRUE(live_sent.insert(s.index).second) << "sent twice " << s.index;
  }
  EXPECT_EQ(live_sent.size(), static_cast<size_t>(by_status[surge::v1::OK]));
}

// A server's raw 0xFF byte quoted in one record's error
// text once made protobuf refuse the whole record batch on the coordinator's
// side (DATA_LOSS): the other records of that batch were lost and the run
// never ended. The worker now makes the text valid UTF-8; every record of
// the batch arrives, the bad one with U+FFFD in place of the byte.
TEST(DispatcherLossTest, RawByteInOneRecordErrorKeepsEveryRecordOfItsBatch) {
  DispatchRig rig(ConstantPlan(1000, 60), TestOptions(1));  // 60 requests in 60 ms: few batches
  LocalWorker& w = rig.AddWorker("a", 0, {.result = [](surge::v1::RequestRecord& r) {
                                   if (r.index() != 7) return;
                                   r.set_status(surge::v1::FAILED);
                                   r.set_error(
                                       "bad_chunk: bad JSON in event: {\"content\":\"A\xff"
                                       "B\"}");
                                 }});
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->undecodable_frames, 0u);
  EXPECT_EQ(outcome->records_lost_in_transit, 0u);
  ASSERT_EQ(records.size(), 60u);
  for (const auto& r : records) {
    if (r.index() == 7) {
      EXPECT_EQ(r.status(), surge::v1::FAILED);
      EXPECT_EQ(r.error(),
                "bad_chunk: bad JSON in event: {\"content\":\"A\xEF\xBF\xBD"
                "B\"}");
    } else {
      EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
    }
  }
  EXPECT_EQ(w.exit_code, surge::worker::kExitDone);
}

// Frames that are not Envelopes are skipped and counted (by the
// coordinator; the worker skips them too); the run goes on and ends
// normally.
TEST(DispatcherLossTest, UndecodableFramesAreCountedAndSkipped) {
  DispatchRig rig(ConstantPlan(1000, 40), TestOptions(1));
  for (int i = 0; i < 500; ++i) rig.router.inbox().PutRaw("a", "\xff\xff\xff not protobuf");
  rig.AddWorker("a", 0);
  // The worker's side too: undecodable frames ahead of its Welcome.
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(rig.router.PutRawToWorker("a", "\xff\xfe junk"));
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->undecodable_frames, 500u);
  ASSERT_EQ(records.size(), 40u);
  for (const auto& r : records) EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
}

// A record batch that cannot be decoded (sent by a worker that does not
// repair its strings) is lost whatever we do; the run must still end. The
// worker, idle with nothing in flight or queued, still owns the request:
// after the idle grace it is recorded LOST record_lost, the rest are OK.
TEST(DispatcherLossTest, LostRecordOfAnIdleWorkerDoesNotStallTheRun) {
  DispatchRig rig(ConstantPlan(100, 10), TestOptions(1));  // 10 requests in 0.1 s
  SimulatedClock& sim = rig.clock;
  // A scripted worker: answers each assignment at once with an OK record,
  // except request 3, whose batch carries a raw 0xFF byte; heartbeats say
  // idle; leaves on Stop.
  auto transport = rig.router.Connect("raw");
  std::atomic<bool> stopped{false};
  rig.StartThread([&] {
    auto send = [&](surge::v1::Envelope e) {
      e.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
      e.set_run_id("test");
      (void)transport->Send("", e);
    };
    surge::v1::Envelope hello;
    hello.mutable_hello()->set_requested_index(0);
    send(hello);
    const auto give_up = sim.Now() + std::chrono::seconds(30);
    auto next_hb = sim.Now();
    uint64_t hb = 0;
    while (sim.Now() < give_up) {
      if (sim.Now() >= next_hb) {
        surge::v1::Envelope e;
        e.mutable_heartbeat()->set_hb_seq(++hb);
        e.mutable_heartbeat()->set_t1_worker_ns(ToNanos(sim.Now()));
        send(e);
        next_hb += std::chrono::milliseconds(100);
      }
      auto in = transport->Receive(sim.Now() + std::chrono::milliseconds(5));
      if (!in.ok() || !in->has_value()) continue;
      const surge::v1::Envelope& e = (*in)->message;
      if (e.has_stop()) {
        surge::v1::Envelope bye;
        bye.mutable_goodbye()->set_reason("done");
        send(bye);
        stopped = true;
        return;
      }
      if (!e.has_assignment_batch()) continue;
      for (const auto& a : e.assignment_batch().assignments()) {
        surge::v1::Envelope out;
        out.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
        out.set_run_id("test");
        auto* r = out.mutable_record_batch()->add_records();
        r->set_index(a.index());
        r->set_attempt(a.attempt());
        r->set_worker(0);
        r->set_status(a.index() == 3 ? surge::v1::FAILED : surge::v1::OK);
        if (a.index() != 3) {
          send(out);
          continue;
        }
        // Serialize with a marker byte, then put the raw 0xFF in its place
        // (what an unrepaired server text would have done).
        r->set_error("A~B");
        std::string bytes = out.SerializeAsString();
        bytes[bytes.find("A~B") + 1] = '\xff';
        rig.router.inbox().PutRaw("raw", std::move(bytes));
      }
    }
  });
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(stopped.load());
  EXPECT_EQ(outcome->undecodable_frames, 1u);
  EXPECT_EQ(outcome->records_lost_in_transit, 1u);
  ASSERT_EQ(records.size(), 10u);
  for (const auto& r : records) {
    if (r.index() == 3) {
      EXPECT_EQ(r.status(), surge::v1::LOST);
      EXPECT_THAT(r.error(), ::testing::StartsWith("record_lost: worker 0"));
    } else {
      EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
    }
  }
  // The idle grace is 3 s; the run ends exactly 3.2 s after it started, far
  // from a hang.
  EXPECT_EQ(rig.ended - rig.started, std::chrono::milliseconds(3200));
}

// A worker whose transport refuses record batches for a while (a full send
// queue) keeps them and sends them again: no record is dropped.
class RefusesFirstRecordBatches final : public surge::Transport {
 public:
  RefusesFirstRecordBatches(std::unique_ptr<surge::Transport> inner, int refusals)
      : inner_(std::move(inner)), refusals_(refusals) {}
  absl::Status Send(const std::string& peer, const surge::v1::Envelope& message) override {
    if (message.has_record_batch() && refusals_ > 0) {
      --refusals_;
      return absl::UnavailableError("send queue to the coordinator is full");
    }
    return inner_->Send(peer, message);
  }
  absl::StatusOr<std::optional<Inbound>> Receive(Clock::TimePoint deadline) override {
    return inner_->Receive(deadline);
  }
  int refusals_left() const { return refusals_; }

 private:
  std::unique_ptr<surge::Transport> inner_;
  int refusals_;  // touched by the worker's thread only
};

TEST(DispatcherLossTest, RecordBatchesTheTransportRefusesAreSentAgain) {
  DispatchRig rig(ConstantPlan(1000, 100), TestOptions(1));
  RefusesFirstRecordBatches* transport = nullptr;
  LocalWorker& w = rig.AddWorker(
      "a", 0, {.wrap_transport = [&transport](std::unique_ptr<surge::Transport> inner) {
        auto refusing = std::make_unique<RefusesFirstRecordBatches>(std::move(inner), 5);
        transport = refusing.get();
        return std::unique_ptr<surge::Transport>(std::move(refusing));
      }});
  const auto& outcome = rig.Run();
  const auto& records = rig.records;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(transport->refusals_left(), 0);
  EXPECT_EQ(outcome->records_lost_in_transit, 0u);
  EXPECT_EQ(outcome->rejected_records, 0u);
  ASSERT_EQ(records.size(), 100u);
  std::set<uint64_t> seen;
  for (const auto& r : records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
  }
  EXPECT_EQ(w.exit_code, surge::worker::kExitDone);
}

}  // namespace
}  // namespace surge::coordinator
