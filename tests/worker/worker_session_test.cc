// How a worker ends when the coordinator refuses it, on simulated time: a
// worker that came too late (the run started, or has all its workers) has
// nothing to do and exits 0; a protocol version mismatch, either way round,
// exits kExitRejected with a message naming both versions.
#include "worker/worker_session.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "common/clock.h"
#include "tests/testing/fake_request_sender.h"
#include "tests/testing/in_memory_transport.h"
#include "tests/testing/simulated_clock.h"

namespace surge::worker {
namespace {

using surge::testing::InMemoryRouter;
using surge::testing::kSimulatedStart;
using surge::testing::SimulatedClock;

// Runs one worker session against `router` on simulated time; the test
// plays the coordinator: it waits for the Hello and answers with `answer`.
// Returns the exit code.
int RunAgainst(const surge::v1::Envelope& answer) {
  SimulatedClock sim;
  InMemoryRouter router(sim);
  auto transport = router.Connect("w");
  WorkerSessionOptions options;
  options.hello_timeout = std::chrono::milliseconds(5000);
  int exit_code = -1;
  std::thread worker = sim.StartThread([&] {
    WorkerSession session(
        sim, *transport,
        [&sim](const surge::v1::Welcome&) -> absl::StatusOr<std::unique_ptr<RequestSender>> {
          return std::unique_ptr<RequestSender>(
              std::make_unique<surge::testing::FakeRequestSender>(sim));
        },
        options);
    exit_code = session.Run();
  });
  // The first Hello leaves at once: at the start, exactly.
  std::string peer;
  auto in = router.Receive(sim.Now() + std::chrono::milliseconds(50));
  if (in.ok() && in->has_value() && (*in)->message.has_hello()) peer = (*in)->peer;
  EXPECT_EQ(peer, "w");
  EXPECT_EQ(sim.Now(), kSimulatedStart);
  EXPECT_TRUE(router.Send(peer, answer).ok());
  sim.Join(worker);
  return exit_code;
}

surge::v1::Envelope RejectOf(surge::v1::RejectKind kind) {
  surge::v1::Envelope e;
  e.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  e.mutable_reject()->set_kind(kind);
  e.mutable_reject()->set_reason("test");
  return e;
}

TEST(WorkerSessionTest, CostLineDividesTheThreadsCpuBySentRequests) {
  const SenderStats stats{.connections_opened = 152,
                          .takes = 40000,
                          .cold_takes = 85,
                          .refills_ok = 67,
                          .at_start = 40,
                          .io_cpu_ns = 460'800'000};
  const WorkerSession::PacerCost pacer{.cpu_ns = 124'000'000,
                                       .late_wakes = 12,
                                       .late_wake_max_ns = 1'250'400,
                                       .slow_handoffs = 3,
                                       .slow_handoff_max_ns = 210'000};
  EXPECT_EQ(WorkerSession::CostLine(stats, pacer, 40000),
            "cost per sent request: pacer 3.10 us CPU (its spin included), I/O 11.52 us CPU; "
            "connections: 152 opened (warm pool: 40000 takes, 85 found none idle, 67 refills "
            "connected, 40 of the refills started before t0); pacer late wakes (≥ 0.05 ms): 12, "
            "the longest 1.250 ms; hand-offs ≥ 0.05 ms: 3, the longest 0.210 ms");
  // Without a warm pool or a late wake, and with nothing sent.
  EXPECT_EQ(WorkerSession::CostLine(SenderStats{.connections_opened = 3}, {.cpu_ns = 5000}, 0),
            "cost per sent request: pacer 0.00 us CPU (its spin included), I/O 0.00 us CPU; "
            "connections: 3 opened; pacer late wakes (≥ 0.05 ms): 0; hand-offs ≥ 0.05 ms: 0");
}

TEST(WorkerSessionTest, TooLateOrOneTooManyExitsZero) {
  EXPECT_EQ(RunAgainst(RejectOf(surge::v1::REJECT_RUN_STARTED)), kExitDone);
  EXPECT_EQ(RunAgainst(RejectOf(surge::v1::REJECT_RUN_FULL)), kExitDone);
}

TEST(WorkerSessionTest, VersionMismatchIsAnError) {
  EXPECT_EQ(RunAgainst(RejectOf(surge::v1::REJECT_PROTOCOL_VERSION)), kExitRejected);
  EXPECT_EQ(RunAgainst(RejectOf(surge::v1::REJECT_KIND_UNSPECIFIED)), kExitRejected);
  // A coordinator of another version: the worker refuses its Welcome.
  surge::v1::Envelope welcome;
  welcome.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT + 1);
  welcome.mutable_welcome()->set_worker_index(0);
  EXPECT_EQ(RunAgainst(welcome), kExitRejected);
}

}  // namespace
}  // namespace surge::worker
