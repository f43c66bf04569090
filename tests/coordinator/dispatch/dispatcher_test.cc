// Dispatcher + worker sessions over in-memory transports with fake senders:
// every planned request ends in exactly one record, assignments stripe over
// the workers, and a silent worker's work is reassigned or recorded as lost,
// never sent twice (R-DIST-3, R-DIST-5, R-DIST-6).
#include "coordinator/dispatch/dispatcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <thread>

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

void StartWorker(InMemoryRouter& router, const std::string& name, int32_t index, LocalWorker& w,
                 std::function<void(surge::v1::RequestRecord&)> shape = nullptr) {
  w.transport = router.Connect(name);
  w.thread = std::thread([&w, index, shape] {
    surge::worker::WorkerSessionOptions options;
    options.requested_index = index;
    surge::worker::WorkerSession session(
        RealClock(), *w.transport,
        [&w, shape](const surge::v1::Welcome&)
            -> absl::StatusOr<std::unique_ptr<surge::worker::RequestSender>> {
          auto sender = std::make_unique<FakeRequestSender>(RealClock());
          if (shape) sender->set_shape(shape);
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

// Issue 8 item 1: a server's raw 0xFF byte quoted in one record's error
// text once made protobuf refuse the whole record batch on the coordinator's
// side (DATA_LOSS): the other records of that batch were lost and the run
// never ended. The worker now makes the text valid UTF-8; every record of
// the batch arrives, the bad one with U+FFFD in place of the byte.
TEST(DispatcherTest, RawByteInOneRecordErrorKeepsEveryRecordOfItsBatch) {
  const ArrivalSchedule plan = ConstantPlan(1000, 60);  // 60 requests in 60 ms: few batches
  FixedPayloads payloads;
  InMemoryRouter router;
  DispatcherOptions options;
  options.num_workers = 1;
  options.run_id = "test";
  options.start_lead = std::chrono::milliseconds(100);
  std::vector<surge::v1::RequestRecord> records;
  Dispatcher dispatcher(RealClock(), router, plan, payloads, options,
                        [&](const surge::v1::RequestRecord& r) { records.push_back(r); });
  LocalWorker w;
  StartWorker(router, "a", 0, w, [](surge::v1::RequestRecord& r) {
    if (r.index() != 7) return;
    r.set_status(surge::v1::FAILED);
    r.set_error(
        "bad_chunk: bad JSON in event: {\"content\":\"A\xff"
        "B\"}");
  });
  auto outcome = dispatcher.Run();
  w.thread.join();
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
TEST(DispatcherTest, UndecodableFramesAreCountedAndSkipped) {
  const ArrivalSchedule plan = ConstantPlan(1000, 40);
  FixedPayloads payloads;
  InMemoryRouter router;
  DispatcherOptions options;
  options.num_workers = 1;
  options.run_id = "test";
  options.start_lead = std::chrono::milliseconds(100);
  std::vector<surge::v1::RequestRecord> records;
  Dispatcher dispatcher(RealClock(), router, plan, payloads, options,
                        [&](const surge::v1::RequestRecord& r) { records.push_back(r); });
  for (int i = 0; i < 500; ++i) router.inbox().PutRaw("a", "\xff\xff\xff not protobuf");
  LocalWorker w;
  StartWorker(router, "a", 0, w);
  // The worker's side too: undecodable frames ahead of its Welcome.
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(router.PutRawToWorker("a", "\xff\xfe junk"));
  auto outcome = dispatcher.Run();
  w.thread.join();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->undecodable_frames, 500u);
  ASSERT_EQ(records.size(), 40u);
  for (const auto& r : records) EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
}

// A record batch that cannot be decoded (sent by a worker that does not
// repair its strings) is lost whatever we do; the run must still end. The
// worker, idle with nothing in flight or queued, still owns the request:
// after the idle grace it is recorded LOST record_lost, the rest are OK.
TEST(DispatcherTest, LostRecordOfAnIdleWorkerDoesNotStallTheRun) {
  const ArrivalSchedule plan = ConstantPlan(100, 10);  // 10 requests in 0.1 s
  FixedPayloads payloads;
  InMemoryRouter router;
  DispatcherOptions options;
  options.num_workers = 1;
  options.run_id = "test";
  options.start_lead = std::chrono::milliseconds(100);
  std::vector<surge::v1::RequestRecord> records;
  Dispatcher dispatcher(RealClock(), router, plan, payloads, options,
                        [&](const surge::v1::RequestRecord& r) { records.push_back(r); });
  // A scripted worker: answers each assignment at once with an OK record,
  // except request 3, whose batch carries a raw 0xFF byte; heartbeats say
  // idle; leaves on Stop.
  auto transport = router.Connect("raw");
  std::atomic<bool> stopped{false};
  std::thread worker([&] {
    auto send = [&](surge::v1::Envelope e) {
      e.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
      e.set_run_id("test");
      (void)transport->Send("", e);
    };
    surge::v1::Envelope hello;
    hello.mutable_hello()->set_requested_index(0);
    send(hello);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto next_hb = std::chrono::steady_clock::now();
    uint64_t hb = 0;
    while (std::chrono::steady_clock::now() < give_up) {
      if (std::chrono::steady_clock::now() >= next_hb) {
        surge::v1::Envelope e;
        e.mutable_heartbeat()->set_hb_seq(++hb);
        e.mutable_heartbeat()->set_t1_worker_ns(ToNanos(RealClock().Now()));
        send(e);
        next_hb += std::chrono::milliseconds(100);
      }
      auto in = transport->Receive(std::chrono::milliseconds(5));
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
        router.inbox().PutRaw("raw", std::move(bytes));
      }
    }
  });
  const auto start = std::chrono::steady_clock::now();
  auto outcome = dispatcher.Run();
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  worker.join();
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
  // The idle grace is 3 s; the run ends soon after it, far from a hang.
  EXPECT_GE(took_s, 3.0);
  EXPECT_LT(took_s, 15.0);
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
  absl::StatusOr<std::optional<Inbound>> Receive(std::chrono::milliseconds timeout) override {
    return inner_->Receive(timeout);
  }
  int refusals_left() const { return refusals_; }

 private:
  std::unique_ptr<surge::Transport> inner_;
  int refusals_;  // touched by the worker's thread only
};

TEST(DispatcherTest, RecordBatchesTheTransportRefusesAreSentAgain) {
  const ArrivalSchedule plan = ConstantPlan(1000, 100);
  FixedPayloads payloads;
  InMemoryRouter router;
  DispatcherOptions options;
  options.num_workers = 1;
  options.run_id = "test";
  options.start_lead = std::chrono::milliseconds(100);
  std::vector<surge::v1::RequestRecord> records;
  Dispatcher dispatcher(RealClock(), router, plan, payloads, options,
                        [&](const surge::v1::RequestRecord& r) { records.push_back(r); });
  RefusesFirstRecordBatches transport(router.Connect("a"), 5);
  int exit_code = -1;
  std::thread worker([&] {
    surge::worker::WorkerSessionOptions o;
    o.requested_index = 0;
    surge::worker::WorkerSession session(
        RealClock(), transport,
        [](const surge::v1::Welcome&)
            -> absl::StatusOr<std::unique_ptr<surge::worker::RequestSender>> {
          return std::unique_ptr<surge::worker::RequestSender>(
              std::make_unique<FakeRequestSender>(RealClock()));
        },
        o);
    exit_code = session.Run();
  });
  auto outcome = dispatcher.Run();
  worker.join();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(transport.refusals_left(), 0);
  EXPECT_EQ(outcome->records_lost_in_transit, 0u);
  EXPECT_EQ(outcome->rejected_records, 0u);
  ASSERT_EQ(records.size(), 100u);
  std::set<uint64_t> seen;
  for (const auto& r : records) {
    EXPECT_TRUE(seen.insert(r.index()).second) << "duplicate " << r.index();
    EXPECT_EQ(r.status(), surge::v1::OK) << r.index();
  }
  EXPECT_EQ(exit_code, surge::worker::kExitDone);
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
  absl::StatusOr<std::optional<Inbound>> Receive(std::chrono::milliseconds timeout) override {
    return router_.Receive(timeout);
  }

 private:
  InMemoryRouter& router_;
};

TEST(DispatcherTest, TheMessageTakenWhenATurnEndsIsHandled) {
  const ArrivalSchedule plan = ConstantPlan(10, 1);
  FixedPayloads payloads;
  InMemoryRouter router;
  FloodOnStart transport(router);
  DispatcherOptions options;
  options.num_workers = 1;
  options.run_id = "test";
  options.start_lead = std::chrono::milliseconds(100);
  std::vector<surge::v1::RequestRecord> records;
  Dispatcher dispatcher(RealClock(), transport, plan, payloads, options,
                        [&](const surge::v1::RequestRecord& r) { records.push_back(r); });
  auto peer = router.Connect("w");
  surge::v1::Envelope hello;
  hello.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  hello.mutable_hello()->set_requested_index(0);
  ASSERT_TRUE(peer->Send("", hello).ok());
  auto outcome = dispatcher.Run();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].status(), surge::v1::OK) << records[0].error();
  EXPECT_EQ(outcome->workers_lost, 0u);
}

}  // namespace
}  // namespace surge::coordinator
