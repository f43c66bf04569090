// A target host with several addresses: the start-up line names them all,
// new connections spread over them (round-robin) or all go to the first,
// an address that refuses is skipped, and the host is resolved again when
// every known address refuses. Three sim servers on 127.0.0.1, 127.0.0.2
// and 127.0.0.3 (same port) stand for one host; an injected resolver gives
// the name "three.test" those addresses (no /etc/hosts).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/worker/http/sender_test_util.h"
#include "worker/http/http_connection.h"

namespace surge::worker {
namespace {

using surge::testing::MakeAssignment;
using surge::testing::StartSimServer;
using surge::testing::TestSimServerConfig;
using surge::v1::RequestRecord;
using ::testing::HasSubstr;
using tcp = boost::asio::ip::tcp;

constexpr int kRequests = 300;

// Sim servers on `addresses`, all on the port the first one got; empty when
// one cannot listen.
std::vector<std::unique_ptr<simserver::SimServer>> ServersOn(
    const std::vector<std::string>& addresses) {
  std::vector<std::unique_ptr<simserver::SimServer>> servers;
  uint32_t port = 0;
  for (const std::string& address : addresses) {
    surge::v1::SimServerConfig config = TestSimServerConfig();
    config.set_address(address);
    config.set_port(port);
    // Long enough that all requests overlap: each opens its own connection.
    config.set_ttft_ms(300);
    servers.push_back(StartSimServer(config));
    if (servers.back() == nullptr) return {};
    port = servers.front()->port();
  }
  return servers;
}

surge::v1::TargetConfig ThreeTarget(uint16_t port, const std::string& policy) {
  surge::v1::TargetConfig target = surge::testing::LocalTarget(port);
  target.set_base_url("http://three.test:" + std::to_string(port));
  target.set_address_policy(policy);
  return target;
}

// A resolver that gives "three.test" `answers[k]` on its k-th call (the
// last one after that) and counts the calls.
struct FakeResolver {
  std::vector<std::vector<std::string>> answers;
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);

  BeastRequestSender::AddressResolver Hook() const {
    return [answers = answers,
            calls = calls](const std::string& host) -> absl::StatusOr<std::vector<std::string>> {
      EXPECT_EQ(host, "three.test");
      const int k = calls->fetch_add(1);
      return answers[std::min<size_t>(static_cast<size_t>(k), answers.size() - 1)];
    };
  }
};

// Sends `n` requests at once and waits (at most 30 s) for every record.
std::vector<RequestRecord> SendAll(BeastRequestSender& sender, int n) {
  std::mutex mu;
  std::vector<RequestRecord> records;
  auto all = std::make_shared<std::promise<void>>();
  for (int i = 0; i < n; ++i) {
    sender.Send(MakeAssignment(static_cast<uint64_t>(i), 2), [&, all, n](RequestRecord r) {
      std::lock_guard<std::mutex> lock(mu);
      records.push_back(std::move(r));
      if (static_cast<int>(records.size()) == n) all->set_value();
    });
  }
  EXPECT_EQ(all->get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  std::lock_guard<std::mutex> lock(mu);
  return records;
}

// The server counts an answer when its last write completes, which can be
// just after the client has read it: waits (at most 10 s) until the servers
// together count `n`, so that each one's share can be read.
void WaitUntilServed(const std::vector<std::unique_ptr<simserver::SimServer>>& servers,
                     uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto served = [&servers] {
    uint64_t total = 0;
    for (const auto& server : servers) total += server->requests_served();
    return total;
  };
  while (served() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(served(), n);
}

int OkCount(const std::vector<RequestRecord>& records) {
  int ok = 0;
  for (const auto& r : records) ok += r.status() == surge::v1::OK;
  return ok;
}

TEST(TargetAddressesTest, RoundRobinSpreadsNewConnectionsOverEveryAddress) {
  auto servers = ServersOn({"127.0.0.1", "127.0.0.2", "127.0.0.3"});
  ASSERT_EQ(servers.size(), 3u);
  FakeResolver resolver{{{"127.0.0.1", "127.0.0.2", "127.0.0.3"}}};
  auto sender = BeastRequestSender::Create(
      RealClock(), ThreeTarget(servers[0]->port(), "round-robin"), 1, resolver.Hook());
  ASSERT_TRUE(sender.ok()) << sender.status();
  const auto records = SendAll(**sender, kRequests);
  EXPECT_EQ(OkCount(records), kRequests);
  WaitUntilServed(servers, kRequests);
  // 20-47 % of the requests per address (each had its own connection).
  for (const auto& server : servers) {
    EXPECT_GE(server->requests_served(), kRequests * 20 / 100);
    EXPECT_LE(server->requests_served(), kRequests * 47 / 100);
  }
  EXPECT_EQ(resolver.calls->load(), 1);  // resolved once, at start
}

TEST(TargetAddressesTest, FirstPolicySendsEverythingToTheFirstAddress) {
  auto servers = ServersOn({"127.0.0.1", "127.0.0.2", "127.0.0.3"});
  ASSERT_EQ(servers.size(), 3u);
  FakeResolver resolver{{{"127.0.0.2", "127.0.0.1", "127.0.0.3"}}};
  auto sender = BeastRequestSender::Create(RealClock(), ThreeTarget(servers[0]->port(), "first"), 1,
                                           resolver.Hook());
  ASSERT_TRUE(sender.ok()) << sender.status();
  EXPECT_EQ(OkCount(SendAll(**sender, 30)), 30);
  WaitUntilServed(servers, 30);
  EXPECT_EQ(servers[0]->requests_served(), 0u);
  EXPECT_EQ(servers[1]->requests_served(), 30u);
  EXPECT_EQ(servers[2]->requests_served(), 0u);
}

// 127.0.0.4 has no server: connections that start there go on to the next
// address; nothing fails and nothing is resolved again.
TEST(TargetAddressesTest, AnAddressThatRefusesIsSkipped) {
  auto servers = ServersOn({"127.0.0.1", "127.0.0.2"});
  ASSERT_EQ(servers.size(), 2u);
  FakeResolver resolver{{{"127.0.0.4", "127.0.0.1", "127.0.0.2"}}};
  auto sender = BeastRequestSender::Create(
      RealClock(), ThreeTarget(servers[0]->port(), "round-robin"), 1, resolver.Hook());
  ASSERT_TRUE(sender.ok()) << sender.status();
  EXPECT_EQ(OkCount(SendAll(**sender, 30)), 30);
  WaitUntilServed(servers, 30);
  // Starts at .4 fall over to .1: 20 there, 10 at .2.
  EXPECT_EQ(servers[0]->requests_served(), 20u);
  EXPECT_EQ(servers[1]->requests_served(), 10u);
  EXPECT_EQ(resolver.calls->load(), 1);
}

// The host "moved": its only known address refuses, so the sender
// resolves it again and connects to the new address.
TEST(TargetAddressesTest, EveryAddressRefusingResolvesTheHostAgain) {
  auto servers = ServersOn({"127.0.0.1"});
  ASSERT_EQ(servers.size(), 1u);
  FakeResolver resolver{{{"127.0.0.5"}, {"127.0.0.1"}}};
  auto sender = BeastRequestSender::Create(
      RealClock(), ThreeTarget(servers[0]->port(), "round-robin"), 1, resolver.Hook());
  ASSERT_TRUE(sender.ok()) << sender.status();
  const RequestRecord r = surge::testing::SendOne(**sender, MakeAssignment(0, 2));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(resolver.calls->load(), 2);
  WaitUntilServed(servers, 1);
}

TEST(TargetAddressesTest, StartUpLineListsEveryAddress) {
  const std::vector<tcp::endpoint> three = {{boost::asio::ip::make_address("127.0.0.1"), 8000},
                                            {boost::asio::ip::make_address("127.0.0.2"), 8000},
                                            {boost::asio::ip::make_address("127.0.0.3"), 8000}};
  EXPECT_EQ(AddressesLine("three.test", 8000, three, AddressPolicy::kRoundRobin),
            "target three.test:8000 resolves to 3 addresses: 127.0.0.1, 127.0.0.2, 127.0.0.3; "
            "new connections take them in turn (--target-address-policy round-robin)");
  EXPECT_THAT(AddressesLine("three.test", 8000, three, AddressPolicy::kFirst),
              HasSubstr("every connection goes to the first (--target-address-policy first)"));
  EXPECT_EQ(AddressesLine("localhost", 80, {{boost::asio::ip::make_address("::1"), 80}},
                          AddressPolicy::kRoundRobin),
            "target localhost:80 resolves to 1 address: [::1]");
}

TEST(TargetAddressesTest, UnknownPolicyIsRefusedNamingTheField) {
  surge::v1::TargetConfig target = ThreeTarget(8000, "random");
  FakeResolver resolver{{{"127.0.0.1"}}};
  auto sender = BeastRequestSender::Create(RealClock(), target, 1, resolver.Hook());
  ASSERT_FALSE(sender.ok());
  EXPECT_THAT(sender.status().message(), HasSubstr("address_policy"));
  EXPECT_THAT(sender.status().message(), HasSubstr("round-robin or first"));
}

}  // namespace
}  // namespace surge::worker
