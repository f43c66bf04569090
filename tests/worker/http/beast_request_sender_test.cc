// BeastRequestSender against the real sim server on 127.0.0.1:0: timings,
// connection reuse, timeouts, Shutdown, and the checks of Create.
#include "worker/http/beast_request_sender.h"

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/failure_kind.h"
#include "common/prompt_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simserver/sim_server.h"
#include "simserver/sim_tokenizer.h"
#include "tests/simserver/test_sim_server_config.h"
#include "tests/worker/http/sender_test_util.h"

namespace surge::worker {
namespace {

using ::surge::simserver::SimServer;
using ::surge::testing::kMs;
using ::surge::testing::kSlackNs;
using ::surge::testing::MakeAssignment;
using ::surge::testing::NewSender;
using ::surge::testing::OffsetClock;
using ::surge::testing::PlainTarget;
using ::surge::testing::SendOne;
using ::surge::testing::StartSim;
using ::surge::testing::TestSimServerConfig;
using ::surge::v1::RequestRecord;
using ::surge::v1::SimServerConfig;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(BeastRequestSenderTest, StreamingChatTimings) {
  auto server = StartSim(/*ttft_ms=*/50, /*itl_ms=*/10);
  OffsetClock clock(std::chrono::hours(1000));
  auto sender = NewSender(clock, PlainTarget(server->port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const int64_t before = ToNanos(clock.Now());
  const RequestRecord r = SendOne(*sender, MakeAssignment(41, 5));
  const int64_t after = ToNanos(clock.Now());

  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.error(), "");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_UNSPECIFIED);
  // Counted once as sent (the heartbeat's sent_total, docs/METRICS.md).
  EXPECT_EQ(sender->sent_total(), 1u);
  EXPECT_EQ(r.index(), 41u);
  EXPECT_EQ(r.attempt(), 2u);
  EXPECT_EQ(r.http_status(), 200u);
  // sent_ns is absolute on the injected clock.
  EXPECT_GE(r.sent_ns(), before);
  EXPECT_LE(r.sent_ns(), after);
  EXPECT_EQ(r.output_tokens(), 5u);
  EXPECT_FALSE(r.output_tokens_estimated());
  // The server's usage, counted by its tokenizer through its chat template.
  EXPECT_EQ(r.input_tokens(),
            surge::simserver::SimTokenizer().TokenizeChat({{"user", BuildPrompt(32, 41 * 7919)}}).size());

  EXPECT_GE(r.ttft_ns(), 50 * kMs);
  EXPECT_LT(r.ttft_ns(), 50 * kMs + kSlackNs);
  ASSERT_EQ(r.itl_ns_size(), 4);
  int64_t itl_sum = 0;
  for (int64_t gap : r.itl_ns()) {
    // A token read late (a loaded machine) shortens the next gap, down to 0.
    EXPECT_GE(gap, 0);
    EXPECT_LT(gap, 10 * kMs + kSlackNs);
    itl_sum += gap;
  }
  // The server's deadlines are absolute: its last token leaves 90 ms after
  // it read the request, which was after the send (a causal bound, exact on
  // any machine); first to last token is 40 ms, read with at most the slack.
  EXPECT_GE(r.ttft_ns() + itl_sum, 90 * kMs);
  EXPECT_LT(itl_sum, 40 * kMs + kSlackNs);
  EXPECT_GE(r.e2el_ns(), 90 * kMs);
  EXPECT_GE(r.e2el_ns(), r.ttft_ns() + itl_sum);
  EXPECT_LT(r.e2el_ns(), after - r.sent_ns() + 1);
  EXPECT_EQ(sender->inflight(), 0u);
}

TEST(BeastRequestSenderTest, StreamingCompletions) {
  auto server = StartSim(5, 1);
  auto sender = NewSender(PlainTarget(server->port(), "/v1/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(1, 7));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 7u);
  EXPECT_FALSE(r.output_tokens_estimated());
  EXPECT_EQ(r.itl_ns_size(), 6);
  EXPECT_GE(r.ttft_ns(), 5 * kMs);
}

TEST(BeastRequestSenderTest, NonStreamingChatAndCompletions) {
  auto server = StartSim(20, 5);
  for (const char* endpoint : {"/v1/chat/completions", "/v1/completions"}) {
    SCOPED_TRACE(endpoint);
    auto sender = NewSender(PlainTarget(server->port(), endpoint, false));
    ASSERT_NE(sender, nullptr);
    const RequestRecord r = SendOne(*sender, MakeAssignment(3, 4));
    EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
    EXPECT_EQ(r.http_status(), 200u);
    EXPECT_EQ(r.output_tokens(), 4u);
    EXPECT_FALSE(r.output_tokens_estimated());
    // ttft + 3 · itl = 35 ms before the whole answer exists.
    EXPECT_GE(r.e2el_ns(), 35 * kMs);
    EXPECT_LT(r.e2el_ns(), 35 * kMs + kSlackNs);
    EXPECT_EQ(r.ttft_ns(), r.e2el_ns());
    EXPECT_EQ(r.itl_ns_size(), 0);
  }
}

TEST(BeastRequestSenderTest, ConcurrentSendsAllCompleteAndReuseConnections) {
  auto server = StartSim(20, 2);
  auto sender =
      NewSender(RealClock(), PlainTarget(server->port(), "/v1/chat/completions", true), 2);
  ASSERT_NE(sender, nullptr);
  constexpr int kConcurrency = 50;
  for (int wave = 0; wave < 2; ++wave) {
    // Shared with the callbacks: the last one may still be unlocking `mu`
    // when the test thread moves on.
    struct Wave {
      std::mutex mu;
      std::vector<RequestRecord> records;
      std::promise<void> all_done;
    };
    auto state = std::make_shared<Wave>();
    for (int i = 0; i < kConcurrency; ++i) {
      sender->Send(MakeAssignment(wave * kConcurrency + i, 4), [state](RequestRecord r) {
        std::lock_guard<std::mutex> lock(state->mu);
        state->records.push_back(std::move(r));
        if (state->records.size() == kConcurrency) state->all_done.set_value();
      });
    }
    ASSERT_EQ(state->all_done.get_future().wait_for(std::chrono::seconds(30)),
              std::future_status::ready);
    std::lock_guard<std::mutex> lock(state->mu);
    for (const RequestRecord& r : state->records) {
      EXPECT_EQ(r.status(), surge::v1::OK) << r.index() << ": " << r.error();
      EXPECT_EQ(r.output_tokens(), 4u);
    }
  }
  // The second wave ran on the first wave's connections.
  EXPECT_GE(sender->connections_opened(), 1u);
  EXPECT_LE(sender->connections_opened(), static_cast<uint64_t>(kConcurrency));
  // The server counts a response once its write completed, which may be
  // just after the client read it.
  for (int i = 0; i < 2000 && server->requests_served() < 2u * kConcurrency; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(server->requests_served(), 2u * kConcurrency);
  sender->Shutdown(std::chrono::seconds(1));
  EXPECT_EQ(sender->inflight(), 0u);
}

TEST(BeastRequestSenderTest, SequentialRequestsUseOneConnection) {
  auto server = StartSim(1, 0);
  auto sender = NewSender(PlainTarget(server->port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(SendOne(*sender, MakeAssignment(i, 2)).status(), surge::v1::OK);
  }
  EXPECT_EQ(sender->connections_opened(), 1u);
}

TEST(BeastRequestSenderTest, UnknownEndpointIsHttp404) {
  auto server = StartSim(1, 1);
  auto sender = NewSender(PlainTarget(server->port(), "/v1/nope", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 2));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.http_status(), 404u);
  EXPECT_THAT(r.error(), StartsWith("http_404: "));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_HTTP_4XX);
  EXPECT_THAT(r.error(), HasSubstr("no route"));
  EXPECT_GT(r.sent_ns(), 0);
}

TEST(BeastRequestSenderTest, ClosedPortIsConnectError) {
  uint16_t port = 0;
  {
    auto server = StartSim(1, 1);
    port = server->port();
  }  // closed again
  auto sender = NewSender(PlainTarget(port, "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(9, 2));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_THAT(r.error(), StartsWith("connect: "));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_CONNECT);
  EXPECT_EQ(r.http_status(), 0u);
  EXPECT_EQ(r.sent_ns(), 0);  // nothing was sent
  EXPECT_EQ(sender->sent_total(), 0u);
  EXPECT_EQ(sender->connections_opened(), 0u);
}

TEST(BeastRequestSenderTest, RequestTimeout) {
  auto server = StartSim(/*ttft_ms=*/3000, 1);
  auto target = PlainTarget(server->port(), "/v1/chat/completions", true);
  target.set_request_timeout_s(0.1);
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, MakeAssignment(0, 2));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "timeout");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_TIMEOUT);
  EXPECT_EQ(r.http_status(), 200u);  // the header came at once, tokens did not
  EXPECT_EQ(r.e2el_ns(), 0);
}

// A request cut off by Shutdown was sent; it is
// INTERRUPTED (not LOST: its worker is alive) and keeps its send time.
TEST(BeastRequestSenderTest, ShutdownCutsOffInflightAsInterruptedAndRefusesNewSends) {
  auto server = StartSim(/*ttft_ms=*/5000, 1);
  auto sender = NewSender(PlainTarget(server->port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  std::vector<std::future<RequestRecord>> futures;
  for (int i = 0; i < 3; ++i) {
    auto done = std::make_shared<std::promise<RequestRecord>>();
    futures.push_back(done->get_future());
    sender->Send(MakeAssignment(i, 2), [done](RequestRecord r) { done->set_value(r); });
  }
  EXPECT_EQ(sender->inflight(), 3u);
  // The 100 ms drain lets them reach the server; the answers take 5 s.
  sender->Shutdown(std::chrono::milliseconds(100));
  EXPECT_EQ(sender->inflight(), 0u);
  for (auto& f : futures) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    const RequestRecord r = f.get();
    EXPECT_EQ(r.status(), surge::v1::INTERRUPTED);
    EXPECT_EQ(r.error(), "interrupted: cut_off_at_stop");
    EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_INTERRUPTED);
    EXPECT_GT(r.sent_ns(), 0);
    // Cut off after the 100 ms drain, long before the 5 s answer.
    EXPECT_GE(r.interrupted_ns() - r.sent_ns(), 50'000'000);
    EXPECT_LT(r.interrupted_ns() - r.sent_ns(), 4'000'000'000);
    EXPECT_EQ(r.ttft_ns(), 0);  // no token came
    EXPECT_EQ(r.e2el_ns(), 0);
  }
  const RequestRecord late = SendOne(*sender, MakeAssignment(7, 2));
  EXPECT_EQ(late.status(), surge::v1::NOT_SENT);
  EXPECT_EQ(late.error(), "sender_shut_down");
  EXPECT_EQ(late.failure_kind(), surge::v1::FAILURE_KIND_NOT_SENT);
  EXPECT_EQ(late.index(), 7u);
  sender->Shutdown(std::chrono::milliseconds(0));  // idempotent
}

// A stream cut off mid-answer keeps TTFT, the gaps and the
// tokens received so far (counted by surge: estimated).
TEST(BeastRequestSenderTest, ShutdownKeepsTokensReceivedSoFar) {
  auto server = StartSim(/*ttft_ms=*/10, /*itl_ms=*/200);
  auto sender = NewSender(PlainTarget(server->port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  auto done = std::make_shared<std::promise<RequestRecord>>();
  auto future = done->get_future();
  sender->Send(MakeAssignment(4, /*max_tokens=*/50),
               [done](RequestRecord r) { done->set_value(r); });
  // 50 tokens take 10 s; after 700 ms about 4 have come.
  sender->Shutdown(std::chrono::milliseconds(700));
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  const RequestRecord r = future.get();
  EXPECT_EQ(r.status(), surge::v1::INTERRUPTED);
  EXPECT_EQ(r.index(), 4u);
  EXPECT_EQ(r.http_status(), 200u);
  EXPECT_GT(r.sent_ns(), 0);
  EXPECT_GT(r.ttft_ns(), 0);
  EXPECT_LT(r.ttft_ns(), 500'000'000);
  EXPECT_GE(r.output_tokens(), 2u);
  EXPECT_LT(r.output_tokens(), 50u);
  EXPECT_TRUE(r.output_tokens_estimated());
  EXPECT_EQ(static_cast<uint32_t>(r.itl_ns_size()) + 1, r.output_tokens());
  EXPECT_EQ(r.e2el_ns(), 0);  // the answer never completed
  EXPECT_GT(r.interrupted_ns(), r.sent_ns() + r.ttft_ns());
}

TEST(BeastRequestSenderTest, ShutdownDrainsWhatFinishesInTime) {
  auto server = StartSim(30, 1);
  auto sender = NewSender(PlainTarget(server->port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  auto done = std::make_shared<std::promise<RequestRecord>>();
  auto future = done->get_future();
  sender->Send(MakeAssignment(0, 3), [done](RequestRecord r) { done->set_value(r); });
  sender->Shutdown(std::chrono::seconds(10));
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(future.get().status(), surge::v1::OK);
}

TEST(BeastRequestSenderTest, ServerRestartDoesNotBreakThePool) {
  auto server = StartSim(1, 1);
  const uint16_t port = server->port();
  auto sender = NewSender(PlainTarget(port, "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  EXPECT_EQ(SendOne(*sender, MakeAssignment(0, 2)).status(), surge::v1::OK);
  server.reset();  // closes the pooled connection from the server side
  SimServerConfig options = TestSimServerConfig();
  options.set_port(port);
  options.set_ttft_ms(1);
  auto again = SimServer::Create(options);
  ASSERT_TRUE(again.ok()) << again.status();
  (*again)->Start();
  const RequestRecord r = SendOne(*sender, MakeAssignment(1, 2));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(sender->connections_opened(), 2u);
}

TEST(BeastRequestSenderTest, CreateRejectsBadTargets) {
  surge::v1::TargetConfig target = PlainTarget(80, "/v1/completions", true);
  target.set_base_url("https://127.0.0.1:8443");
  target.set_ca_cert_path("/no/such/ca.pem");
  auto https = BeastRequestSender::Create(RealClock(), target);
  EXPECT_EQ(https.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(https.status().message()), StartsWith("ca_cert_path: cannot load "));
  target.clear_ca_cert_path();

  target.set_base_url("127.0.0.1:8000");
  auto no_scheme = BeastRequestSender::Create(RealClock(), target);
  EXPECT_EQ(no_scheme.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_scheme.status().message()), StartsWith("base_url: "));

  target.set_base_url("http://127.0.0.1:8000");
  target.set_endpoint("v1/completions");
  auto endpoint = BeastRequestSender::Create(RealClock(), target);
  EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(endpoint.status().message()), StartsWith("endpoint: "));

  target.set_endpoint("/v1/completions");
  EXPECT_FALSE(BeastRequestSender::Create(RealClock(), target, 0).ok());
  target.set_base_url("http://no-such-host.invalid:8000");
  auto unresolvable = BeastRequestSender::Create(RealClock(), target);
  EXPECT_EQ(unresolvable.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace surge::worker
