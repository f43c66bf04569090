// `--tokenizer server`'s client against the built-in server on 127.0.0.1:
// the shape it finds, the counts it reads (the same as the server's usage),
// and the error when the server has no tokenize endpoint.
#include "client/tokenize_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "simserver/sim_server.h"
#include "simserver/sim_tokenizer.h"
#include "tests/simserver/test_sim_server_config.h"
#include "tests/worker/http/canned_server.h"

namespace surge::client {
namespace {

using ::testing::HasSubstr;

constexpr std::chrono::milliseconds kTimeout{10000};

class TokenizeClientTest : public ::testing::Test {
 protected:
  void StartServer() {
    surge::v1::SimServerConfig config = surge::testing::TestSimServerConfig();
    auto server = simserver::SimServer::Create(config);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    server_->Start();
    target_.set_base_url(absl::StrCat("http://127.0.0.1:", server_->port()));
    target_.set_model("surge-sim");
  }
  std::unique_ptr<simserver::SimServer> server_;
  surge::v1::TargetConfig target_;
};

TEST_F(TokenizeClientTest, ChatCountsTheTemplateAsTheServersUsageDoes) {
  StartServer();
  auto client = TokenizeClient::Connect(target_, /*chat=*/true, kTimeout);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->shape(), TokenizeShape::kVllm);
  EXPECT_TRUE((*client)->counts_template());
  EXPECT_EQ((*client)->url(), absl::StrCat(target_.base_url(), "/tokenize"));
  // "Hello, world!" is 4 tokens of the rule; one message adds 3, the
  // generation prompt 1.
  EXPECT_EQ(*(*client)->Count("Hello, world!"), 4u + simserver::kChatTokensPerMessage +
                                                    simserver::kChatGenerationTokens);
  EXPECT_EQ(*(*client)->Count(""), 4u);
  // One probe, two counts, all over one kept-alive connection.
  EXPECT_EQ((*client)->calls(), 3u);
}

TEST_F(TokenizeClientTest, CompletionsCountTheTextAloneAndABaseUrlV1IsStripped) {
  StartServer();
  target_.set_base_url(absl::StrCat(target_.base_url(), "/v1"));
  auto client = TokenizeClient::Connect(target_, /*chat=*/false, kTimeout);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_FALSE((*client)->counts_template());
  EXPECT_EQ(*(*client)->Count("Hello, world!"), 4u);
  EXPECT_EQ(*(*client)->Count("extraordinarily"), 2u);
}

// A canned answer: status line, JSON headers, body.
std::string HttpAnswer(int status, const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", status, status == 200 ? " OK" : " Not Found",
                      "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n\r\n", body);
}

// A server that answers POST /tokenize only for bodies with `key`, with
// `answer` (TGI and llama.cpp answer the vLLM shape's body with 4xx).
surge::testing::CannedServer ShapeServer(std::string key, std::string answer) {
  return surge::testing::CannedServer([key, answer](const std::string& request) {
    if (request.find("POST /tokenize ") != 0) return HttpAnswer(404, "{}");
    if (request.find(key) == std::string::npos) return HttpAnswer(422, R"({"error":"bad"})");
    return HttpAnswer(200, answer);
  });
}

TEST(TokenizeShapeDetectionTest, TgiIsFoundByItsInputsBody) {
  auto server = ShapeServer(R"("inputs":)", R"([{"id":1,"text":"He"},{"id":2,"text":"llo"}])");
  surge::v1::TargetConfig target;
  target.set_base_url(server.base_url());
  auto client = TokenizeClient::Connect(target, /*chat=*/true, kTimeout);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->shape(), TokenizeShape::kTgi);
  EXPECT_FALSE((*client)->counts_template());  // TGI counts text, not messages
  EXPECT_EQ(*(*client)->Count("Hello"), 2u);
}

TEST(TokenizeShapeDetectionTest, LlamaCppIsFoundByItsContentBody) {
  auto server = ShapeServer(R"("content":)", R"({"tokens":[15043,29892,3186]})");
  surge::v1::TargetConfig target;
  target.set_base_url(server.base_url() + "/v1");
  auto client = TokenizeClient::Connect(target, /*chat=*/false, kTimeout);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->shape(), TokenizeShape::kLlamaCpp);
  EXPECT_EQ(*(*client)->Count("Hello, world"), 3u);
  // The probes: vLLM's and TGI's refused, llama.cpp's answered, then one count.
  EXPECT_EQ((*client)->calls(), 4u);
}

TEST(TokenizeShapeDetectionTest, NoEndpointNamesTheFlagAndEveryShapeTried) {
  surge::testing::CannedServer server(
      [](const std::string&) { return HttpAnswer(404, R"({"detail":"Not Found"})"); });
  surge::v1::TargetConfig target;
  target.set_base_url(server.base_url());
  auto client = TokenizeClient::Connect(target, /*chat=*/true, kTimeout);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(client.status().message());
  EXPECT_THAT(message, HasSubstr("--tokenizer server"));
  EXPECT_THAT(message, HasSubstr(server.base_url() + "/tokenize"));
  EXPECT_THAT(message, HasSubstr("vLLM/SGLang shape (HTTP 404"));
  EXPECT_THAT(message, HasSubstr("TGI shape (HTTP 404"));
  EXPECT_THAT(message, HasSubstr("llama.cpp shape (HTTP 404"));
  // Only the three probes reached the server.
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(TokenizeClientTest, NoServerIsUnavailable) {
  target_.set_base_url("http://127.0.0.1:1");
  auto client = TokenizeClient::Connect(target_, /*chat=*/false, kTimeout);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace surge::client
