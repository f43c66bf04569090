// client::FetchFirstModel against the sim server and a scripted server on
// 127.0.0.1:0.
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
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simserver/sim_server.h"
#include "tests/worker/http/canned_server.h"
#include "tests/worker/http/sender_test_util.h"

namespace surge::worker {
namespace {

using ::surge::client::FetchFirstModel;
using ::surge::testing::CannedServer;
using ::surge::testing::HttpAnswer;
using ::surge::testing::StartSim;
using ::testing::StartsWith;

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

}  // namespace
}  // namespace surge::worker
