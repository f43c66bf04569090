// BeastRequestSender::Prepare on 127.0.0.1: a prepared request goes out as
// the same bytes as an unprepared one, its sent_ns is the time of the write
// made on Send's thread, a preparation that is never sent gives its
// connection back, and the pacer drives Prepare/CancelPrepared for real.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/prompt_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "simserver/sim_server.h"
#include "tests/simserver/test_sim_server_config.h"
#include "tests/worker/http/canned_server.h"
#include "tests/worker/http/self_signed_cert.h"
#include "tests/worker/http/sender_test_util.h"
#include "worker/http/beast_request_sender.h"
#include "worker/send_loop.h"

namespace surge::worker {
namespace {

using ::surge::testing::CannedServer;
using ::surge::testing::HttpAnswer;
using ::surge::testing::kMs;
using ::surge::testing::LocalTarget;
using ::surge::testing::NewSender;
using ::surge::testing::OffsetClock;
using ::surge::testing::Request;
using ::surge::testing::SendOne;
using ::surge::testing::StartSimServer;
using ::surge::testing::TestSimServerConfig;
using ::surge::v1::RequestRecord;
using ::surge::v1::SimServerConfig;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Waits (at most 10 s) until `sender` has opened `n` connections, then a
// little longer for the preparation to finish after its connect.
void WaitForConnections(const BeastRequestSender& sender, uint64_t n) {
  for (int i = 0; i < 10000 && sender.connections_opened() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(sender.connections_opened(), n);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

SimServerConfig SimOptions(double ttft_ms, double itl_ms) {
  SimServerConfig options = TestSimServerConfig();
  options.set_ttft_ms(ttft_ms);
  options.set_itl_ms(itl_ms);
  return options;
}

std::string OkAnswer() { return HttpAnswer(200, "OK", R"({"choices":[{"text":"abcd"}]})"); }

surge::v1::TargetConfig CannedTarget(const CannedServer& server) {
  return LocalTarget(server.port(), false, "/v1/completions", /*stream=*/false);
}

TEST(PreparedSendTest, SameBytesAsAnUnpreparedRequest) {
  CannedServer server([](const std::string&) { return OkAnswer(); });
  const surge::v1::Assignment a = Request(5, 9);
  // 1: not prepared.
  auto plain = NewSender(CannedTarget(server));
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(SendOne(*plain, a).status(), surge::v1::OK);
  // 2: prepared well ahead (bytes built, connection open), then sent.
  auto ahead = NewSender(CannedTarget(server));
  ASSERT_NE(ahead, nullptr);
  ahead->Prepare(a);
  WaitForConnections(*ahead, 1);
  const RequestRecord r = SendOne(*ahead, a);
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.index(), 5u);
  EXPECT_EQ(r.attempt(), 1u);
  EXPECT_EQ(r.input_tokens(), EstimateTokens(BuildPrompt(16, 5 * 7919)));
  // 3: sent right after Prepare (it waits for the preparation or not).
  auto at_once = NewSender(CannedTarget(server));
  ASSERT_NE(at_once, nullptr);
  at_once->Prepare(a);
  EXPECT_EQ(SendOne(*at_once, a).status(), surge::v1::OK);

  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_THAT(requests[0], StartsWith("POST /v1/completions HTTP/1.1\r\n"));
  // The request names itself (index/attempt) on both paths, so that a server log can show one that
  // came twice.
  EXPECT_THAT(requests[0], HasSubstr("\r\nX-Surge-Request: 5/1\r\n"));
  EXPECT_EQ(requests[1], requests[0]);
  EXPECT_EQ(requests[2], requests[0]);
  EXPECT_EQ(ahead->connections_opened(), 1u);
}

TEST(PreparedSendTest, LargeRequestIsWrittenWholeAfterAPartialFirstWrite) {
  // 16 MB: more than one non-blocking send(2) takes on loopback; the I/O
  // thread writes the rest.
  CannedServer server([](const std::string&) { return OkAnswer(); });
  surge::v1::Assignment a = Request(2, 3);
  a.set_input_tokens(4'000'000);
  auto plain = NewSender(CannedTarget(server));
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(SendOne(*plain, a).status(), surge::v1::OK);
  auto prepared = NewSender(CannedTarget(server));
  ASSERT_NE(prepared, nullptr);
  prepared->Prepare(a);
  WaitForConnections(*prepared, 1);
  const RequestRecord r = SendOne(*prepared, a);
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GT(requests[0].size(), 16'000'000u);
  EXPECT_TRUE(requests[1] == requests[0]);
  const std::string& raw = requests[1];
  const nlohmann::json body = nlohmann::json::parse(raw.substr(raw.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["prompt"], BuildPrompt(4'000'000, 2 * 7919));
}

TEST(PreparedSendTest, SentNsIsTheWriteMadeDuringSend) {
  auto server = StartSimServer(SimOptions(20, 2));
  ASSERT_NE(server, nullptr);
  OffsetClock clock(std::chrono::hours(1000));
  auto sender_or = BeastRequestSender::Create(clock, LocalTarget(server->port()), 1);
  ASSERT_TRUE(sender_or.ok()) << sender_or.status();
  auto& sender = **sender_or;
  const surge::v1::Assignment a = Request(7, 4);
  sender.Prepare(a);
  WaitForConnections(sender, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));

  auto done = std::make_shared<std::promise<RequestRecord>>();
  auto future = done->get_future();
  const int64_t before = ToNanos(clock.Now());
  sender.Send(a, [done](RequestRecord r) { done->set_value(std::move(r)); });
  const int64_t after = ToNanos(clock.Now());
  ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const RequestRecord r = future.get();
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  // Plain http, prepared: the first bytes went out on this thread, inside
  // Send, not when the request was prepared 80 ms earlier.
  EXPECT_GE(r.sent_ns(), before);
  EXPECT_LE(r.sent_ns(), after);
  // TTFT still counts from that write.
  EXPECT_GE(r.ttft_ns(), 20 * kMs);
  EXPECT_EQ(r.output_tokens(), 4u);
  EXPECT_EQ(sender.connections_opened(), 1u);
}

TEST(PreparedSendTest, CancelledPreparationGivesItsConnectionBack) {
  auto server = StartSimServer(SimOptions(1, 0));
  ASSERT_NE(server, nullptr);
  auto sender = NewSender(LocalTarget(server->port()));
  ASSERT_NE(sender, nullptr);
  sender->Prepare(Request(0, 2));
  WaitForConnections(*sender, 1);
  sender->CancelPrepared(Request(0, 2));
  // The next request, not prepared, takes the connection from the pool.
  EXPECT_EQ(SendOne(*sender, Request(1, 2)).status(), surge::v1::OK);
  EXPECT_EQ(sender->connections_opened(), 1u);

  // Cancelled while still being prepared: the preparation either does not
  // connect at all or puts its connection in the pool; either way the next
  // request uses exactly one connection.
  auto second = NewSender(LocalTarget(server->port()));
  ASSERT_NE(second, nullptr);
  second->Prepare(Request(2, 2));
  second->CancelPrepared(Request(2, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(SendOne(*second, Request(3, 2)).status(), surge::v1::OK);
  EXPECT_EQ(second->connections_opened(), 1u);
  // Cancelling what was never prepared, or twice, does nothing.
  second->CancelPrepared(Request(2, 2));
  second->CancelPrepared(Request(99, 2));
}

TEST(PreparedSendTest, ShutdownClosesPreparedConnectionsNeverSent) {
  // The canned server serves one connection at a time and moves to the next
  // only when the client closes the current one: a leaked reservation
  // would block the second sender's request.
  CannedServer server([](const std::string&) { return OkAnswer(); }, /*close_after=*/false);
  auto first = NewSender(CannedTarget(server));
  ASSERT_NE(first, nullptr);
  first->Prepare(Request(0, 1));
  WaitForConnections(*first, 1);
  first->Shutdown(std::chrono::milliseconds(0));
  EXPECT_EQ(first->inflight(), 0u);
  auto second = NewSender(CannedTarget(server));
  ASSERT_NE(second, nullptr);
  const RequestRecord r = SendOne(*second, Request(1, 1));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(server.requests().size(), 1u);
  // After Shutdown, Prepare does nothing and Send is refused as before.
  first->Prepare(Request(2, 1));
  EXPECT_EQ(SendOne(*first, Request(2, 1)).status(), surge::v1::NOT_SENT);
}

TEST(PreparedSendTest, SendWhilePreparingWaitsForThePreparation) {
  CannedServer server([](const std::string&) { return OkAnswer(); });
  surge::v1::Assignment a = Request(4, 3);
  a.set_input_tokens(200'000);  // building takes a moment
  auto plain = NewSender(CannedTarget(server));
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(SendOne(*plain, a).status(), surge::v1::OK);
  auto sender = NewSender(CannedTarget(server));
  ASSERT_NE(sender, nullptr);
  for (int i = 0; i < 3; ++i) {
    surge::v1::Assignment next = a;
    next.set_attempt(10 + i);  // another (index, attempt): prepared anew
    sender->Prepare(next);
    const RequestRecord r = SendOne(*sender, next);
    EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
    EXPECT_EQ(r.attempt(), 10u + i);
    EXPECT_GT(r.sent_ns(), 0);
  }
  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  // The same bytes but for the attempt in the X-Surge-Request header.
  const std::string first_tag = "\r\nX-Surge-Request: 4/1\r\n";
  const size_t at = requests[0].find(first_tag);
  ASSERT_NE(at, std::string::npos);
  for (size_t i = 1; i < requests.size(); ++i) {
    std::string expected = requests[0];
    expected.replace(at, first_tag.size(),
                     "\r\nX-Surge-Request: 4/" + std::to_string(10 + i - 1) + "\r\n");
    EXPECT_TRUE(requests[i] == expected) << i;
  }
}

TEST(PreparedSendTest, FailedPreparationConnectIsRecordedAtSend) {
  // A port nobody listens on: the preparation's connect fails; Send tries
  // again and records the failure as an unprepared request would.
  uint16_t port = 0;
  {
    CannedServer gone([](const std::string&) { return std::string(); });
    port = gone.port();
  }
  auto sender = NewSender(LocalTarget(port));
  ASSERT_NE(sender, nullptr);
  sender->Prepare(Request(0, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const RequestRecord r = SendOne(*sender, Request(0, 2));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_THAT(r.error(), StartsWith("connect: "));
  EXPECT_EQ(r.sent_ns(), 0);
  EXPECT_FALSE(r.sent());
}

TEST(PreparedSendTest, HttpsPreparedRequestHandshakesAhead) {
  const surge::testing::CertFiles cert =
      surge::testing::MakeSelfSignedCert(::testing::TempDir(), "surge-prepared-https");
  ASSERT_FALSE(cert.cert_path.empty());
  SimServerConfig options = TestSimServerConfig();
  options.set_ttft_ms(5);
  options.set_itl_ms(1);
  options.set_tls_cert_file(cert.cert_path);
  options.set_tls_key_file(cert.key_path);
  auto server = StartSimServer(options);
  ASSERT_NE(server, nullptr);
  auto target = LocalTarget(server->port(), /*https=*/true);
  target.set_ca_cert_path(cert.cert_path);
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  for (uint64_t i = 0; i < 3; ++i) {
    sender->Prepare(Request(i, 3));
    WaitForConnections(*sender, 1);
    const int64_t before = ToNanos(RealClock().Now());
    const RequestRecord r = SendOne(*sender, Request(i, 3));
    EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
    EXPECT_EQ(r.output_tokens(), 3u);
    // Written by the I/O thread after Send, never at Prepare.
    EXPECT_GE(r.sent_ns(), before);
  }
  EXPECT_EQ(sender->connections_opened(), 1u);
}

TEST(PreparedSendTest, PacerPreparesSendsAndCancelsOnStop) {
  auto server = StartSimServer(SimOptions(2, 1));
  ASSERT_NE(server, nullptr);
  auto sender = NewSender(LocalTarget(server->port()));
  ASSERT_NE(sender, nullptr);
  std::mutex mu;
  std::vector<RequestRecord> records;
  SendLoopOptions options;
  options.prepare_lead = std::chrono::milliseconds(500);
  SendLoop loop(RealClock(), *sender, options, [&](RequestRecord r) {
    std::lock_guard<std::mutex> lock(mu);
    records.push_back(std::move(r));
  });
  std::vector<surge::v1::Assignment> list;
  for (uint64_t i = 0; i < 20; ++i) {
    surge::v1::Assignment a = Request(i, 3);
    a.set_offset_ns(100 * kMs + static_cast<int64_t>(i) * 5 * kMs);
    list.push_back(a);
  }
  // Far behind the others: prepared (500 ms lead), never released.
  surge::v1::Assignment last = Request(20, 3);
  last.set_offset_ns(600 * kMs);
  list.push_back(last);
  loop.Enqueue(list);
  const int64_t t0 = ToNanos(RealClock().Now()) + 50 * kMs;
  loop.SetStart(t0);
  std::thread pacer([&loop] { loop.Run(); });
  for (int i = 0; i < 10000; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (records.size() == 20) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  loop.Stop();
  pacer.join();
  const auto unreleased = loop.TakeUnreleased();
  ASSERT_EQ(unreleased.size(), 1u);
  EXPECT_EQ(unreleased[0].index(), 20u);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(records.size(), 20u);
    for (const RequestRecord& r : records) {
      EXPECT_EQ(r.status(), surge::v1::OK) << r.index() << ": " << r.error();
      EXPECT_TRUE(r.sent());
      // Never before the plan; well within a loaded machine's slack after.
      EXPECT_GE(r.sent_ns(), r.planned_ns()) << r.index();
      EXPECT_LT(r.sent_ns() - r.planned_ns(), 60 * kMs) << r.index();
    }
  }
  // The cancelled reservation is back in the pool: a request now needs no
  // new connection.
  const uint64_t opened = sender->connections_opened();
  EXPECT_EQ(SendOne(*sender, Request(30, 2)).status(), surge::v1::OK);
  EXPECT_EQ(sender->connections_opened(), opened);
  sender->Shutdown(std::chrono::seconds(1));
  EXPECT_EQ(sender->inflight(), 0u);
}

// Runs `n` requests through a pacer at `rate_rps` (each prepared 50 ms
// ahead) on `sender`; returns their records once all have come back.
std::vector<RequestRecord> PaceRequests(BeastRequestSender& sender, int n, double rate_rps) {
  std::mutex mu;
  std::vector<RequestRecord> records;
  SendLoop loop(RealClock(), sender, SendLoopOptions{}, [&](RequestRecord r) {
    std::lock_guard<std::mutex> lock(mu);
    records.push_back(std::move(r));
  });
  std::vector<surge::v1::Assignment> list;
  for (int i = 0; i < n; ++i) {
    surge::v1::Assignment a = Request(static_cast<uint64_t>(i), 3);
    a.set_offset_ns(static_cast<int64_t>(i * 1e9 / rate_rps));
    list.push_back(a);
  }
  loop.Enqueue(list);
  loop.SetStart(ToNanos(RealClock().Now()) + 100 * kMs);
  std::thread pacer([&loop] { loop.Run(); });
  for (int i = 0; i < 20000; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (records.size() == static_cast<size_t>(n)) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  loop.Stop();
  pacer.join();
  std::lock_guard<std::mutex> lock(mu);
  return records;
}

// A sender to 127.0.0.1:`port` with the default warm pool; nullptr (and a
// test failure naming the status) when it cannot be made.
std::unique_ptr<BeastRequestSender> NewWarmSender(uint16_t port) {
  auto created = BeastRequestSender::Create(RealClock(), LocalTarget(port), 1, {}, std::nullopt,
                                            WarmPoolOptions{});
  if (!created.ok()) {
    ADD_FAILURE() << created.status();
    return nullptr;
  }
  return *std::move(created);
}

TEST(PreparedSendTest, WarmPoolOpensConnectionsAheadAndAccountsForEachOne) {
  // Answers take 20 ms: at 1,000 RPS about 70 connections are held at once
  // (a 50 ms reservation plus the answer).
  auto server = StartSimServer(SimOptions(20, 1));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<BeastRequestSender> warm = NewWarmSender(server->port());
  ASSERT_NE(warm, nullptr);
  BeastRequestSender& sender = *warm;
  const std::vector<RequestRecord> records = PaceRequests(sender, 600, 1000);
  ASSERT_EQ(records.size(), 600u);
  for (const RequestRecord& r : records) {
    EXPECT_EQ(r.status(), surge::v1::OK) << r.index() << ": " << r.error();
  }
  sender.Shutdown(std::chrono::seconds(1));
  const WarmPoolCounts counts = sender.warm_pool_counts();
  // Every preparation took a connection, and every connection opened is
  // either a take that found none idle or a refill.
  EXPECT_EQ(counts.takes, 600u);
  EXPECT_GT(counts.refills_ok, 0u);
  EXPECT_LE(counts.refills_ok, counts.refills);
  EXPECT_EQ(sender.connections_opened(), counts.cold_takes + counts.refills_ok);
  // The refills ran ahead of the takes: most takes found a warm connection.
  EXPECT_LT(counts.cold_takes, counts.takes / 2) << counts.cold_takes << " cold takes";
}

TEST(PreparedSendTest, TheStartsConnectionsAreOpenBeforeTheFirstTake) {
  auto server = StartSimServer(SimOptions(20, 1));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<BeastRequestSender> warm = NewWarmSender(server->port());
  ASSERT_NE(warm, nullptr);
  BeastRequestSender& sender = *warm;
  // 20,000/s from the start with 128 preparations: 224 (WarmPool's own test).
  sender.WarmConnections(20000, 128);
  for (int i = 0; i < 5000 && sender.connections_opened() < 224; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(sender.connections_opened(), 224u);
  // A second call opens only what is missing: nothing.
  sender.WarmConnections(20000, 128);
  WarmPoolCounts counts = sender.warm_pool_counts();
  EXPECT_EQ(counts.takes, 0u);
  EXPECT_EQ(counts.at_start, 224u);
  EXPECT_EQ(counts.refills_ok, 224u);
  // ~70 held at once at 1,000 RPS: every take finds one of them idle.
  const std::vector<RequestRecord> records = PaceRequests(sender, 200, 1000);
  ASSERT_EQ(records.size(), 200u);
  sender.Shutdown(std::chrono::seconds(1));
  counts = sender.warm_pool_counts();
  EXPECT_EQ(counts.takes, 200u);
  EXPECT_EQ(counts.cold_takes, 0u);
  EXPECT_EQ(sender.connections_opened(), counts.cold_takes + counts.refills_ok);
}

TEST(PreparedSendTest, WithoutAWarmPoolOnlyTakesOpenConnections) {
  auto server = StartSimServer(SimOptions(20, 1));
  ASSERT_NE(server, nullptr);
  auto sender = NewSender(LocalTarget(server->port()));
  ASSERT_NE(sender, nullptr);
  const std::vector<RequestRecord> records = PaceRequests(*sender, 200, 1000);
  ASSERT_EQ(records.size(), 200u);
  sender->Shutdown(std::chrono::seconds(1));
  const WarmPoolCounts counts = sender->warm_pool_counts();
  EXPECT_EQ(counts.takes, 0u);
  EXPECT_EQ(counts.refills, 0u);
  // About as many as are held at once (~70), never one per request.
  EXPECT_GT(sender->connections_opened(), 10u);
  EXPECT_LT(sender->connections_opened(), 200u);
}

}  // namespace
}  // namespace surge::worker
