// BeastRequestSender against the real sim server and a scripted server, all
// on 127.0.0.1 with port 0 (ARCHITECTURE.md example 10, component level).
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

#include "client/model_lister.h"
#include "common/clock.h"
#include "common/failure_kind.h"
#include "common/prompt_builder.h"
#include "common/utf8.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "simserver/sim_server.h"
#include "tests/simserver/test_sim_server_config.h"
#include "tests/worker/http/canned_server.h"

namespace surge::worker {
namespace {

using ::surge::client::FetchFirstModel;
using ::surge::simserver::SimServer;
using ::surge::testing::CannedServer;
using ::surge::testing::Chunk;
using ::surge::testing::HttpAnswer;
using ::surge::testing::LastChunk;
using ::surge::testing::SseHeader;
using ::surge::testing::TestSimServerConfig;
using ::surge::v1::RequestRecord;
using ::surge::v1::SimServerConfig;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kMs = 1'000'000;
// Scheduling slack on a loaded 2-core CI box.
constexpr int64_t kSlackNs = 60 * kMs;

std::unique_ptr<SimServer> StartSim(double ttft_ms, double itl_ms) {
  SimServerConfig options = TestSimServerConfig();
  options.set_ttft_ms(ttft_ms);
  options.set_itl_ms(itl_ms);
  auto server = SimServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  return *std::move(server);
}

surge::v1::TargetConfig Target(uint16_t port, const std::string& endpoint, bool stream) {
  surge::v1::TargetConfig target;
  target.set_base_url("http://127.0.0.1:" + std::to_string(port));
  target.set_endpoint(endpoint);
  target.set_model("surge-sim");
  target.set_stream(stream);
  target.set_request_timeout_s(30);
  return target;
}

surge::v1::Assignment MakeAssignment(uint64_t index, uint32_t max_tokens,
                                     uint32_t input_tokens = 32) {
  surge::v1::Assignment a;
  a.set_index(index);
  a.set_attempt(2);
  a.set_input_tokens(input_tokens);
  a.set_max_tokens(max_tokens);
  a.set_prompt_seed(index * 7919);
  return a;
}

std::unique_ptr<BeastRequestSender> MakeSender(Clock& clock, const surge::v1::TargetConfig& t,
                                               int threads = 1) {
  auto sender = BeastRequestSender::Create(clock, t, threads);
  EXPECT_TRUE(sender.ok()) << sender.status();
  return sender.ok() ? *std::move(sender) : nullptr;
}

RequestRecord SendAndWait(RequestSender& sender, const surge::v1::Assignment& a) {
  auto done = std::make_shared<std::promise<RequestRecord>>();
  std::future<RequestRecord> future = done->get_future();
  sender.Send(a, [done](RequestRecord r) { done->set_value(std::move(r)); });
  if (future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "no callback within 20 s";
    return RequestRecord();
  }
  return future.get();
}

// RealClock shifted by a fixed offset: shows that every timestamp comes from
// the injected clock.
class OffsetClock : public Clock {
 public:
  explicit OffsetClock(std::chrono::nanoseconds offset) : offset_(offset) {}
  TimePoint Now() override { return RealClock().Now() + offset_; }
  std::chrono::system_clock::time_point WallNow() override { return RealClock().WallNow(); }
  void SleepUntil(TimePoint deadline) override { RealClock().SleepUntil(deadline - offset_); }
  void SleepUntilCoarse(TimePoint deadline) override {
    RealClock().SleepUntilCoarse(deadline - offset_);
  }

 private:
  std::chrono::nanoseconds offset_;
};

TEST(BeastRequestSenderTest, StreamingChatTimings) {
  auto server = StartSim(/*ttft_ms=*/50, /*itl_ms=*/10);
  OffsetClock clock(std::chrono::hours(1000));
  auto sender = MakeSender(clock, Target(server->port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const int64_t before = ToNanos(clock.Now());
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(41, 5));
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
  EXPECT_EQ(r.input_tokens(), EstimateTokens(BuildPrompt(32, 41 * 7919)));

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
  auto sender = MakeSender(RealClock(), Target(server->port(), "/v1/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(1, 7));
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
    auto sender = MakeSender(RealClock(), Target(server->port(), endpoint, false));
    ASSERT_NE(sender, nullptr);
    const RequestRecord r = SendAndWait(*sender, MakeAssignment(3, 4));
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
  auto sender = MakeSender(RealClock(), Target(server->port(), "/v1/chat/completions", true), 2);
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
  auto sender = MakeSender(RealClock(), Target(server->port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(SendAndWait(*sender, MakeAssignment(i, 2)).status(), surge::v1::OK);
  }
  EXPECT_EQ(sender->connections_opened(), 1u);
}

TEST(BeastRequestSenderTest, UnknownEndpointIsHttp404) {
  auto server = StartSim(1, 1);
  auto sender = MakeSender(RealClock(), Target(server->port(), "/v1/nope", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 2));
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
  auto sender = MakeSender(RealClock(), Target(port, "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(9, 2));
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
  auto target = Target(server->port(), "/v1/chat/completions", true);
  target.set_request_timeout_s(0.1);
  auto sender = MakeSender(RealClock(), target);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 2));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "timeout");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_TIMEOUT);
  EXPECT_EQ(r.http_status(), 200u);  // the header came at once, tokens did not
  EXPECT_EQ(r.e2el_ns(), 0);
}

// Issue 8 item 3: a request cut off by Shutdown was sent; it is
// INTERRUPTED (not LOST: its worker is alive) and keeps its send time.
TEST(BeastRequestSenderTest, ShutdownCutsOffInflightAsInterruptedAndRefusesNewSends) {
  auto server = StartSim(/*ttft_ms=*/5000, 1);
  auto sender = MakeSender(RealClock(), Target(server->port(), "/v1/chat/completions", true));
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
  const RequestRecord late = SendAndWait(*sender, MakeAssignment(7, 2));
  EXPECT_EQ(late.status(), surge::v1::NOT_SENT);
  EXPECT_EQ(late.error(), "sender_shut_down");
  EXPECT_EQ(late.failure_kind(), surge::v1::FAILURE_KIND_NOT_SENT);
  EXPECT_EQ(late.index(), 7u);
  sender->Shutdown(std::chrono::milliseconds(0));  // idempotent
}

// Issue 8 item 3: a stream cut off mid-answer keeps TTFT, the gaps and the
// tokens received so far (counted by surge: estimated).
TEST(BeastRequestSenderTest, ShutdownKeepsTokensReceivedSoFar) {
  auto server = StartSim(/*ttft_ms=*/10, /*itl_ms=*/200);
  auto sender = MakeSender(RealClock(), Target(server->port(), "/v1/chat/completions", true));
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
  auto sender = MakeSender(RealClock(), Target(server->port(), "/v1/chat/completions", true));
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
  auto sender = MakeSender(RealClock(), Target(port, "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  EXPECT_EQ(SendAndWait(*sender, MakeAssignment(0, 2)).status(), surge::v1::OK);
  server.reset();  // closes the pooled connection from the server side
  SimServerConfig options = TestSimServerConfig();
  options.set_port(port);
  options.set_ttft_ms(1);
  auto again = SimServer::Create(options);
  ASSERT_TRUE(again.ok()) << again.status();
  (*again)->Start();
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(1, 2));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(sender->connections_opened(), 2u);
}

TEST(BeastRequestSenderTest, CreateRejectsBadTargets) {
  surge::v1::TargetConfig target = Target(80, "/v1/completions", true);
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

// --- Against the scripted server: wire format and failure modes. ---

TEST(BeastRequestSenderWireTest, RequestLineHeadersAndBody) {
  CannedServer server([](const std::string&) {
    return SseHeader() + Chunk("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n") +
           Chunk("data: [DONE]\n\n") + LastChunk();
  });
  ::setenv("OPENAI_API_KEY", "sk-test-123", 1);
  surge::v1::TargetConfig target;
  target.set_base_url(server.base_url() + "/prefix/");
  target.set_endpoint("/v1/chat/completions");
  target.set_model("my-model");
  target.set_stream(true);
  auto sender = MakeSender(RealClock(), target);
  ::unsetenv("OPENAI_API_KEY");
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(5, 9, 16));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  // No usage: one content event counted, estimated.
  EXPECT_EQ(r.output_tokens(), 1u);
  EXPECT_TRUE(r.output_tokens_estimated());
  const std::string prompt = BuildPrompt(16, 5 * 7919);
  EXPECT_EQ(r.input_tokens(), EstimateTokens(prompt));

  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string& raw = requests[0];
  EXPECT_THAT(raw, StartsWith("POST /prefix/v1/chat/completions HTTP/1.1\r\n"));
  EXPECT_THAT(raw, HasSubstr("\r\nHost: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"));
  EXPECT_THAT(raw, HasSubstr("\r\nAuthorization: Bearer sk-test-123\r\n"));
  EXPECT_THAT(raw, HasSubstr("\r\nContent-Type: application/json\r\n"));
  // INDEX/ATTEMPT, so a server log can show a request that came twice.
  EXPECT_THAT(raw, HasSubstr("\r\nX-Surge-Request: 5/2\r\n"));
  const nlohmann::json body = nlohmann::json::parse(raw.substr(raw.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["model"], "my-model");
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"], prompt);
  EXPECT_EQ(body["max_tokens"], 9);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
}

TEST(BeastRequestSenderWireTest, NoAuthorizationWithoutKey) {
  CannedServer server([](const std::string&) {
    return HttpAnswer(200, "OK", R"({"choices":[{"text":"abcdefgh"}]})");
  });
  ::unsetenv("OPENAI_API_KEY");
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 2u);  // EstimateTokens("abcdefgh"), no usage
  EXPECT_TRUE(r.output_tokens_estimated());
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_THAT(server.requests()[0], ::testing::Not(HasSubstr("Authorization")));
  const std::string raw = server.requests()[0];
  const nlohmann::json body = nlohmann::json::parse(raw.substr(raw.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["stream"], false);
  EXPECT_FALSE(body.contains("stream_options"));
  EXPECT_TRUE(body.contains("prompt"));
}

struct FailureCase {
  const char* name;
  std::string answer;
  surge::v1::RequestStatus status;
  std::string error_prefix;
  uint32_t http_status;
};

class BeastRequestSenderFailureTest : public ::testing::TestWithParam<FailureCase> {};

TEST_P(BeastRequestSenderFailureTest, MapsToRecord) {
  const FailureCase& c = GetParam();
  CannedServer server([&c](const std::string&) { return c.answer; });
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), c.status) << r.error();
  EXPECT_THAT(r.error(), StartsWith(c.error_prefix));
  // The kind set by the sender is the one its text names (issue 10 item 6).
  EXPECT_EQ(r.failure_kind(), FailureKindFromError(r.error())) << r.error();
  EXPECT_EQ(r.http_status(), c.http_status);
}

const std::string kRole = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
const std::string kToken = "data: {\"choices\":[{\"delta\":{\"content\":\"t\"}}]}\n\n";
const std::string kFinish = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
// An SSE answer with neither a length nor chunking: the body ends when the
// server closes the connection (CannedServer closes after the answer).
const std::string kCloseDelimitedSse =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, BeastRequestSenderFailureTest,
    ::testing::Values(
        FailureCase{"Http503", HttpAnswer(503, "Service Unavailable", std::string(300, 'z')),
                    surge::v1::FAILED, "http_503: " + std::string(200, 'z'), 503},
        FailureCase{"BadJsonEvent",
                    SseHeader() + Chunk(kRole) + Chunk("data: {oops\n\n") + LastChunk(),
                    surge::v1::FAILED, "bad_chunk: bad JSON in event", 200},
        FailureCase{"ServerErrorEvent",
                    SseHeader() + Chunk(kToken) +
                        Chunk("data: {\"error\":{\"message\":\"engine died\"}}\n\n") + LastChunk(),
                    surge::v1::FAILED, "stream_error: server error: engine died", 200},
        FailureCase{"ClosedMidStream", SseHeader() + Chunk(kRole) + Chunk(kToken),
                    surge::v1::FAILED, "closed_mid_stream", 200},
        FailureCase{"NoContent",
                    SseHeader() + Chunk(kRole) + Chunk("data: [DONE]\n\n") + LastChunk(),
                    surge::v1::FAILED, "no_content", 200},
        FailureCase{"DoneThenCloseWithoutTerminator",
                    SseHeader() + Chunk(kToken) + Chunk("data: [DONE]\n\n"), surge::v1::OK, "",
                    200},
        FailureCase{"GarbageStatusLine", "SPDY/9 what\r\n\r\n", surge::v1::FAILED,
                    "stream_error: ", 0},
        FailureCase{"ClosedBeforeAnswer", "", surge::v1::FAILED, "connection_closed: ", 0},
        // Issue 8 item 2: the body ends cleanly by its framing, but the
        // stream never said it was over (no [DONE], no finish_reason).
        FailureCase{"LastChunkWithoutDoneOrFinishReason", SseHeader() + Chunk(kToken) + LastChunk(),
                    surge::v1::FAILED, "incomplete_stream", 200},
        FailureCase{"CloseDelimitedWithoutDone", kCloseDelimitedSse + kToken, surge::v1::FAILED,
                    "incomplete_stream", 200},
        FailureCase{"CloseDelimitedWithDone", kCloseDelimitedSse + kToken + "data: [DONE]\n\n",
                    surge::v1::OK, "", 200},
        FailureCase{"ContentLengthWithoutDone", HttpAnswer(200, "OK", kToken, "text/event-stream"),
                    surge::v1::FAILED, "incomplete_stream", 200},
        // A finish_reason followed by a clean end of the body is complete
        // even without [DONE] (servers that omit it).
        FailureCase{"FinishReasonThenLastChunk",
                    SseHeader() + Chunk(kToken) + Chunk(kFinish) + LastChunk(), surge::v1::OK, "",
                    200},
        // The last event without its closing blank line still counts at a
        // clean end of the body.
        FailureCase{"DoneWithoutBlankLineThenLastChunk",
                    SseHeader() + Chunk(kToken) + Chunk("data: [DONE]\n") + LastChunk(),
                    surge::v1::OK, "", 200},
        FailureCase{"CloseDelimitedDoneWithoutLineEnd",
                    kCloseDelimitedSse + kToken + "data: [DONE]", surge::v1::OK, "", 200},
        // A finish_reason is no excuse for a body cut inside its framing.
        FailureCase{"FinishReasonThenCutChunking", SseHeader() + Chunk(kToken) + Chunk(kFinish),
                    surge::v1::FAILED, "closed_mid_stream", 200}),
    [](const ::testing::TestParamInfo<FailureCase>& info) { return info.param.name; });

TEST(BeastRequestSenderWireTest, BadNonStreamingJsonIsBadResponse) {
  CannedServer server([](const std::string&) { return HttpAnswer(200, "OK", "{nope"); });
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_THAT(r.error(), StartsWith("bad_response: "));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_BAD_RESPONSE);
}

TEST(BeastRequestSenderWireTest, KeepAliveRaceIsRetriedOnceOnAFreshConnection) {
  // 1st request: answered, connection kept. 2nd (on the reused connection):
  // the server closes without answering, as a server whose keep-alive
  // timeout fired would. The client sends it again on a new connection.
  std::atomic<int> calls{0};
  CannedServer server(
      [&calls](const std::string&) -> std::string {
        if (calls.fetch_add(1) == 1) return "";
        return HttpAnswer(200, "OK", R"({"choices":[{"text":"abcd"}]})");
      },
      /*close_after=*/false);
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  EXPECT_EQ(SendAndWait(*sender, MakeAssignment(0, 1)).status(), surge::v1::OK);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(1, 1));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(sender->connections_opened(), 2u);
  // Two requests sent; the retry is not a third.
  EXPECT_EQ(sender->sent_total(), 2u);
}

TEST(BeastRequestSenderWireTest, ConnectionsClosedByTheServerAreNotReused) {
  CannedServer server([](const std::string&) {
    return HttpAnswer(200, "OK", R"({"choices":[{"text":"abcd"}]})");
  });  // closes after every answer, without saying so
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  for (int i = 0; i < 5; ++i) {
    const RequestRecord r = SendAndWait(*sender, MakeAssignment(i, 1));
    EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  }
  EXPECT_EQ(sender->connections_opened(), 5u);
}

// --- FetchFirstModel ---

TEST(FetchFirstModelTest, ReturnsTheSimServersModel) {
  auto server = StartSim(1, 1);
  auto model = FetchFirstModel("http://127.0.0.1:" + std::to_string(server->port()),
                               std::chrono::seconds(5));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(*model, "surge-sim");
}

TEST(FetchFirstModelTest, UsesThePathPrefix) {
  CannedServer server([](const std::string&) {
    return HttpAnswer(200, "OK", R"({"object":"list","data":[{"id":"m1"},{"id":"m2"}]})");
  });
  auto model = FetchFirstModel(server.base_url() + "/api/", std::chrono::seconds(5));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(*model, "m1");
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_THAT(server.requests()[0], StartsWith("GET /api/v1/models HTTP/1.1\r\n"));
}

TEST(FetchFirstModelTest, EmptyListIsFailedPrecondition) {
  CannedServer server(
      [](const std::string&) { return HttpAnswer(200, "OK", R"({"object":"list","data":[]})"); });
  auto model = FetchFirstModel(server.base_url(), std::chrono::seconds(5));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(model.status().message(), "no model listed at " + server.base_url() + "/v1/models");
}

TEST(FetchFirstModelTest, UnreachableIsUnavailable) {
  uint16_t port = 0;
  {
    auto server = StartSim(1, 1);
    port = server->port();
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  auto model = FetchFirstModel(url, std::chrono::seconds(5));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(model.status().message()), StartsWith("cannot reach " + url));
}

TEST(FetchFirstModelTest, SilentServerTimesOut) {
  // Answers only after the client gave up.
  CannedServer server([](const std::string&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    return HttpAnswer(200, "OK", R"({"data":[{"id":"late"}]})");
  });
  auto model = FetchFirstModel(server.base_url(), std::chrono::milliseconds(100));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnavailable);
}

TEST(FetchFirstModelTest, HttpsClosedPortIsUnavailable) {
  auto model = FetchFirstModel("https://127.0.0.1:1", std::chrono::seconds(1));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(model.status().message()),
              StartsWith("cannot reach https://127.0.0.1:1/v1/models: connect: "));
}

// Issue 8 item 1, the exact input: a chunk whose content holds a raw 0xFF
// byte, then [DONE]. JSON text must be UTF-8, so the event is a bad chunk;
// the error quotes it with U+FFFD in place of the byte, so the record can
// travel in a proto string.
TEST(BeastRequestSenderWireTest, RawByteInAChunkIsBadChunkWithValidUtf8Error) {
  const std::string event =
      "data: {\"choices\":[{\"delta\":{\"content\":\"A\xff"
      "B\"}}]}\n\n";
  CannedServer server([&](const std::string&) {
    return SseHeader() + Chunk(event) + Chunk("data: [DONE]\n\n") + LastChunk();
  });
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(),
            "bad_chunk: bad JSON in event: {\"choices\":[{\"delta\":{\"content\":\"A\xEF\xBF\xBD"
            "B\"}}]}");
  EXPECT_TRUE(IsValidUtf8(r.error()));
  // And protobuf takes it: serialize and parse back.
  RequestRecord back;
  ASSERT_TRUE(back.ParseFromString(r.SerializeAsString()));
  EXPECT_EQ(back.error(), r.error());
}

// The same kind for an error body: raw bytes and a multi-byte character
// right at the 200-byte cut.
TEST(BeastRequestSenderWireTest, ErrorBodyIsQuotedAsValidUtf8CutAtACharacter) {
  // 199 'z' then "é" (2 bytes): the cut at 200 bytes would split it.
  const std::string body = std::string(199, 'z') + "\xC3\xA9" + "\xff\xfe tail";
  CannedServer server([&](const std::string&) { return HttpAnswer(500, "Oops", body); });
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "http_500: " + std::string(199, 'z'));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_HTTP_5XX);
  EXPECT_TRUE(IsValidUtf8(r.error()));
  CannedServer raw([&](const std::string&) {
    return HttpAnswer(502, "Bad",
                      "a\xff"
                      "b");
  });
  auto sender2 = MakeSender(RealClock(), Target(raw.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender2, nullptr);
  const RequestRecord r2 = SendAndWait(*sender2, MakeAssignment(1, 4));
  EXPECT_EQ(r2.error(),
            "http_502: a\xEF\xBF\xBD"
            "b");
}

// Issue 8 item 2, the exact input: HTTP/1.1 200, text/event-stream,
// Connection: close, no length, no chunking; one content chunk at 0.1 s,
// then a clean close without [DONE] or finish_reason. Failed
// incomplete_stream, with TTFT and the tokens that did arrive kept.
TEST(BeastRequestSenderWireTest, StreamClosedCleanlyWithoutEndMarkIsIncompleteStream) {
  const std::string event = "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\n\n";
  CannedServer server(
      [&](const std::string&) {
        return std::vector<CannedServer::Piece>{{0, kCloseDelimitedSse}, {100, event}};
      },
      /*close_after=*/true);
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "incomplete_stream");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_INCOMPLETE_STREAM);
  EXPECT_EQ(r.http_status(), 200u);
  EXPECT_GE(r.ttft_ns(), 95 * kMs);
  EXPECT_LT(r.ttft_ns(), 100 * kMs + kSlackNs);
  EXPECT_EQ(r.output_tokens(), 2u);  // ceil(5 bytes "Hello" / 4), no usage
  EXPECT_TRUE(r.output_tokens_estimated());
  EXPECT_EQ(r.e2el_ns(), 0);  // not a whole answer
}

// Non-streamed answers shorter than their framing says: incomplete_body.
TEST(BeastRequestSenderWireTest, ShortContentLengthBodyIsIncompleteBody) {
  // A complete JSON value, but the header promised 100 more bytes.
  const std::string body = R"({"choices":[{"text":"abcdefgh"}]})";
  CannedServer server([&](const std::string&) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size() + 100) + "\r\n\r\n" + body;
  });
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "incomplete_body");
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_INCOMPLETE_BODY);
  EXPECT_EQ(r.http_status(), 200u);
}

TEST(BeastRequestSenderWireTest, ChunkedBodyCutBeforeLastChunkIsIncompleteBody) {
  CannedServer server([](const std::string&) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           "Transfer-Encoding: chunked\r\n\r\n" +
           Chunk(R"({"choices":[{"text":"abcdefgh"}]})");
  });
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "incomplete_body");
}

// Issue 8 item 6(a): no usage from the server, 4,096 characters of content
// in 82 events of 50 (the last one 46). Output tokens are estimated from the
// text (ceil(4096 / 4) = 1024), not counted as one per event (82), and the
// non-streamed answer with the same text gives the same count.
TEST(BeastRequestSenderWireTest, OutputTokensAreEstimatedFromTextNotCountedPerEvent) {
  std::string content;
  std::string events;
  for (int i = 0; i < 82; ++i) {
    const std::string piece(i < 81 ? 50 : 46, static_cast<char>('a' + i % 26));
    content += piece;
    events += Chunk("data: {\"choices\":[{\"delta\":{\"content\":\"" + piece + "\"}}]}\n\n");
  }
  ASSERT_EQ(content.size(), 4096u);
  CannedServer streaming([&](const std::string&) {
    return SseHeader() + events + Chunk(kFinish) + Chunk("data: [DONE]\n\n") + LastChunk();
  });
  auto sender = MakeSender(RealClock(), Target(streaming.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 1024u);
  EXPECT_TRUE(r.output_tokens_estimated());

  CannedServer whole([&](const std::string&) {
    return HttpAnswer(200, "OK", R"({"choices":[{"message":{"content":")" + content + R"("}}]})");
  });
  auto sender2 = MakeSender(RealClock(), Target(whole.port(), "/v1/chat/completions", false));
  ASSERT_NE(sender2, nullptr);
  const RequestRecord r2 = SendAndWait(*sender2, MakeAssignment(1, 4));
  EXPECT_EQ(r2.status(), surge::v1::OK) << r2.error();
  EXPECT_EQ(r2.output_tokens(), 1024u);
  EXPECT_TRUE(r2.output_tokens_estimated());
}

// Server usage, when sent, wins over the estimate.
TEST(BeastRequestSenderWireTest, ServerUsageWinsOverTheEstimate) {
  CannedServer server([&](const std::string&) {
    return SseHeader() + Chunk(kToken) + Chunk(kFinish) +
           Chunk(
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":"
               "9}}\n\n") +
           Chunk("data: [DONE]\n\n") + LastChunk();
  });
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 4));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 9u);
  EXPECT_EQ(r.input_tokens(), 7u);
  EXPECT_FALSE(r.output_tokens_estimated());
}

// --- Issue 11: per-request records complete enough to trust every metric ---

// One chat chunk of choice `index` with `delta` (JSON) and `finish` (JSON:
// null or a string), as an SSE chunk of a chunked body.
std::string ChoiceEvent(int index, const std::string& delta, const std::string& finish = "null") {
  return Chunk("data: {\"choices\":[{\"index\":" + std::to_string(index) + ",\"delta\":" + delta +
               ",\"finish_reason\":" + finish + "}]}\n\n");
}
std::string UsageEvent(int completion_tokens) {
  return Chunk("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":" +
               std::to_string(completion_tokens) + "}}\n\n");
}

// Issue 11 item 1 (R-MET-1): with n = 2 the server interleaves choice 0 ("A"
// at 300 ms, "C" at 500 ms) and choice 1 ("B" at 350 ms, "D" at 600 ms).
// surge refuses n != 1 at start (ParseExtraBody); a server that streams
// several choices anyway fails the request instead of merging the gaps of
// different choices into one ITL list ([50, 150, 100] ms before).
TEST(BeastRequestSenderWireTest, SeveralChoicesInOneStreamAreRefusedNotMerged) {
  CannedServer server(
      [](const std::string&) {
        return std::vector<CannedServer::Piece>{
            {0, SseHeader()},
            {300, ChoiceEvent(0, R"({"content":"A"})")},
            {50, ChoiceEvent(1, R"({"content":"B"})")},
            {150, ChoiceEvent(0, R"({"content":"C"})") + ChoiceEvent(0, "{}", "\"stop\"")},
            {100, ChoiceEvent(1, R"({"content":"D"})") + ChoiceEvent(1, "{}", "\"stop\"") +
                      UsageEvent(4) + Chunk("data: [DONE]\n\n") + LastChunk()}};
      },
      /*close_after=*/true);
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 8));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_THAT(r.error(), StartsWith("multiple_choices: an event of choice 1"));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_MULTIPLE_CHOICES);
  EXPECT_EQ(r.itl_ns_size(), 0);  // no gap between choice 0's "A" and choice 1's "B"
  EXPECT_GE(r.ttft_ns(), 295 * kMs);

  // And the sender will not be built for such a body at all.
  surge::v1::TargetConfig n2 = Target(server.port(), "/v1/chat/completions", true);
  n2.set_extra_body_json(R"({"n":2})");
  auto refused = BeastRequestSender::Create(RealClock(), n2);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("extra_body_json: sets \"n\": 2; surge measures one answer per request"));
}

// Issue 11 item 2: --random-output-len 8 with ignore_eos; the server sends 3
// tokens and finish_reason "stop", usage 3. The record keeps why the stream
// ended and what was asked: finish_reason "stop", max_tokens 8, short_output.
TEST(BeastRequestSenderWireTest, IgnoreEosAnswerThatStopsEarlyIsAShortOutput) {
  auto answer = [](int tokens, const std::string& finish) {
    std::string body = SseHeader();
    for (int i = 0; i < tokens; ++i) body += ChoiceEvent(0, R"({"content":"x"})");
    return body + ChoiceEvent(0, "{}", "\"" + finish + "\"") + UsageEvent(tokens) +
           Chunk("data: [DONE]\n\n") + LastChunk();
  };
  CannedServer stops_early([&](const std::string&) { return answer(3, "stop"); });
  CannedServer full_length([&](const std::string&) { return answer(8, "length"); });
  for (const bool ignore_eos : {true, false}) {
    surge::v1::TargetConfig t = Target(stops_early.port(), "/v1/chat/completions", true);
    if (ignore_eos) t.set_extra_body_json(R"({"ignore_eos":true})");
    auto sender = MakeSender(RealClock(), t);
    ASSERT_NE(sender, nullptr);
    const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 8));
    EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
    EXPECT_EQ(r.output_tokens(), 3u);
    EXPECT_EQ(r.finish_reason(), "stop");
    EXPECT_EQ(r.max_tokens(), 8u);
    // Without ignore_eos, stopping at an end-of-sequence token is normal.
    EXPECT_EQ(r.short_output(), ignore_eos);
  }
  surge::v1::TargetConfig t = Target(full_length.port(), "/v1/chat/completions", true);
  t.set_extra_body_json(R"({"ignore_eos":true})");
  auto sender = MakeSender(RealClock(), t);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(1, 8));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.finish_reason(), "length");
  EXPECT_EQ(r.output_tokens(), 8u);
  EXPECT_FALSE(r.short_output());
  // The extra body's max_tokens is what was asked for.
  t.set_extra_body_json(R"({"ignore_eos":true,"max_tokens":16})");
  auto sender16 = MakeSender(RealClock(), t);
  ASSERT_NE(sender16, nullptr);
  const RequestRecord r16 = SendAndWait(*sender16, MakeAssignment(2, 8));
  EXPECT_EQ(r16.max_tokens(), 16u);
  EXPECT_TRUE(r16.short_output());  // 8 of 16
}

// Issue 11 item 3: reasoning at 200 and 300 ms, content at 600 and 700 ms.
// TTFT is the first token on any channel (200 ms, as vLLM's benchmark
// counts it); TTFC the first content token (600 ms). ITL covers all four.
TEST(BeastRequestSenderWireTest, ReasoningBeforeContentKeepsFirstTokenAndFirstContent) {
  CannedServer server(
      [](const std::string&) {
        return std::vector<CannedServer::Piece>{
            {0, SseHeader()},
            {200, ChoiceEvent(0, R"({"reasoning_content":"think"})")},
            {100, ChoiceEvent(0, R"({"reasoning_content":"more"})")},
            {300, ChoiceEvent(0, R"({"content":"ans"})")},
            {100, ChoiceEvent(0, R"({"content":"wer"})") + ChoiceEvent(0, "{}", "\"stop\"") +
                      UsageEvent(4) + Chunk("data: [DONE]\n\n") + LastChunk()}};
      },
      /*close_after=*/true);
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(0, 8));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_GE(r.ttft_ns(), 195 * kMs);
  EXPECT_LT(r.ttft_ns(), 200 * kMs + kSlackNs);
  EXPECT_GE(r.ttfc_ns(), 595 * kMs);
  EXPECT_LT(r.ttfc_ns(), 600 * kMs + kSlackNs);
  EXPECT_EQ(r.itl_ns_size(), 3);
  EXPECT_EQ(r.finish_reason(), "stop");

  // Reasoning only: a TTFT, no first-content time.
  CannedServer reasoning_only([](const std::string&) {
    return SseHeader() + ChoiceEvent(0, R"({"reasoning_content":"think"})") +
           ChoiceEvent(0, R"({"reasoning":"more"})", "\"length\"") + UsageEvent(2) +
           Chunk("data: [DONE]\n\n") + LastChunk();
  });
  auto sender2 =
      MakeSender(RealClock(), Target(reasoning_only.port(), "/v1/chat/completions", true));
  ASSERT_NE(sender2, nullptr);
  const RequestRecord r2 = SendAndWait(*sender2, MakeAssignment(1, 2));
  EXPECT_EQ(r2.status(), surge::v1::OK) << r2.error();
  EXPECT_GT(r2.ttft_ns(), 0);
  EXPECT_EQ(r2.ttfc_ns(), 0);
  EXPECT_EQ(r2.finish_reason(), "length");

  // A whole (non-streamed) answer: both are the time to the answer when it
  // has content, and no TTFC when it has only reasoning.
  CannedServer whole([](const std::string&) {
    return HttpAnswer(
        200, "OK",
        R"({"choices":[{"message":{"reasoning_content":"r"},"finish_reason":"length"}]})");
  });
  auto sender3 = MakeSender(RealClock(), Target(whole.port(), "/v1/chat/completions", false));
  ASSERT_NE(sender3, nullptr);
  const RequestRecord r3 = SendAndWait(*sender3, MakeAssignment(2, 2));
  EXPECT_EQ(r3.status(), surge::v1::OK) << r3.error();
  EXPECT_GT(r3.ttft_ns(), 0);
  EXPECT_EQ(r3.ttfc_ns(), 0);
  EXPECT_EQ(r3.finish_reason(), "length");
}

// Issue 11 item 4: a keep-alive server closes, without a byte, the
// connection on which a second request arrives, 100 ms after it arrived.
// The client sends it again on a fresh connection; the record counts that
// retry and its cause, sent_ns stays the first write (so lateness does not
// grow by the reconnect) and E2EL counts from it (the wait is latency).
// `attempt` (the coordinator's reassignment count) is untouched.
TEST(BeastRequestSenderWireTest, KeepAliveRetryIsInTheRecordAndTimesCountFromTheFirstWrite) {
  std::atomic<int> calls{0};
  CannedServer server(
      [&calls](const std::string&) -> std::vector<CannedServer::Piece> {
        if (calls.fetch_add(1) == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          return {};  // close without a byte, 100 ms after the request arrived
        }
        return {{0, HttpAnswer(200, "OK", R"({"choices":[{"text":"abcd"}]})")}};
      },
      /*close_after=*/false);
  auto sender = MakeSender(RealClock(), Target(server.port(), "/v1/completions", false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord first = SendAndWait(*sender, MakeAssignment(0, 1));
  EXPECT_EQ(first.status(), surge::v1::OK);
  EXPECT_EQ(first.http_retries(), 0u);
  EXPECT_EQ(first.retry_reason(), "");
  EXPECT_EQ(first.retry_sent_ns(), 0);

  const int64_t before = ToNanos(RealClock().Now());
  const RequestRecord r = SendAndWait(*sender, MakeAssignment(1, 1));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(r.attempt(), 2u);  // MakeAssignment's; not the HTTP retry
  EXPECT_EQ(r.http_retries(), 1u);
  EXPECT_THAT(r.retry_reason(), StartsWith("keepalive_closed: "));
  EXPECT_GE(r.sent_ns(), before);
  EXPECT_LT(r.sent_ns(), before + kSlackNs);  // the first write, not the retry's
  EXPECT_GE(r.retry_sent_ns() - r.sent_ns(), 95 * kMs);
  EXPECT_GE(r.e2el_ns(), r.retry_sent_ns() - r.sent_ns());
  EXPECT_GE(r.ttft_ns(), r.retry_sent_ns() - r.sent_ns());
}

}  // namespace
}  // namespace surge::worker
