// MakeRequestFormat, HeaderBlock and BuildHttpRequest: the bytes of every
// request and the checks of a target, without a socket.
#include "worker/http/request_format.h"

#include <stdlib.h>

#include <string>

#include "client/url.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace surge::worker {
namespace {

using ::testing::StartsWith;

client::ParsedUrl Url(const std::string& base_url) {
  absl::StatusOr<client::ParsedUrl> url = client::ParseBaseUrl(base_url);
  EXPECT_TRUE(url.ok()) << url.status();
  return url.ok() ? *url : client::ParsedUrl();
}

surge::v1::TargetConfig Target() {
  surge::v1::TargetConfig target;
  target.set_base_url("http://127.0.0.1:8000/api/");
  target.set_model("m");
  target.set_stream(true);
  target.set_request_timeout_s(30);
  return target;
}

TEST(RequestFormatTest, DefaultsToChatUnderThePathPrefix) {
  ::unsetenv("OPENAI_API_KEY");
  const surge::v1::TargetConfig target = Target();
  absl::StatusOr<RequestFormat> format = MakeRequestFormat(target, Url(target.base_url()));
  ASSERT_TRUE(format.ok()) << format.status();
  EXPECT_EQ(format->target_path, "/api/v1/chat/completions");
  EXPECT_EQ(format->kind, ApiKind::kChat);
  EXPECT_EQ(format->model, "m");
  EXPECT_TRUE(format->stream);
  EXPECT_EQ(format->timeout_s, 30);
  EXPECT_EQ(format->api_key, "");
  EXPECT_EQ(format->extra(), nullptr);
  EXPECT_TRUE(format->verify_peer);
  EXPECT_EQ(format->header_block,
            "Host: 127.0.0.1:8000\r\nUser-Agent: surge\r\nContent-Type: application/json\r\n"
            "Accept: text/event-stream\r\nAccept-Encoding: identity\r\n");
}

TEST(RequestFormatTest, CompletionsEndpointExtraBodyAndInsecure) {
  surge::v1::TargetConfig target = Target();
  target.set_endpoint("/v1/completions");
  target.set_extra_body_json(R"({"ignore_eos":true})");
  target.set_insecure_skip_verify(true);
  absl::StatusOr<RequestFormat> format = MakeRequestFormat(target, Url(target.base_url()));
  ASSERT_TRUE(format.ok()) << format.status();
  EXPECT_EQ(format->kind, ApiKind::kCompletions);
  EXPECT_EQ(format->target_path, "/api/v1/completions");
  ASSERT_NE(format->extra(), nullptr);
  EXPECT_EQ(format->extra()->dump(), R"({"ignore_eos":true})");
  EXPECT_FALSE(format->verify_peer);
}

TEST(RequestFormatTest, RefusesBadSettingsInOrder) {
  surge::v1::TargetConfig target = Target();
  target.set_endpoint("v1/completions");
  target.set_request_timeout_s(-1);
  auto format = MakeRequestFormat(target, Url(target.base_url()));
  EXPECT_EQ(format.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(format.status().message(),
            "endpoint: \"v1/completions\" must be a path starting with '/', e.g. "
            "/v1/chat/completions");

  target.set_endpoint("/v1/chat completions");
  EXPECT_THAT(std::string(MakeRequestFormat(target, Url(target.base_url())).status().message()),
              StartsWith("endpoint: "));

  target.set_endpoint("/v1/completions");
  EXPECT_EQ(MakeRequestFormat(target, Url(target.base_url())).status().message(),
            "request_timeout_s: -1 must be >= 0 (0 = no timeout)");

  target.set_request_timeout_s(0);
  target.add_headers("X-Ok: 1");
  target.add_headers("Host: evil");
  EXPECT_EQ(MakeRequestFormat(target, Url(target.base_url())).status().message(),
            "headers[1]: sets Host, which the client sets itself");

  target.clear_headers();
  target.set_extra_body_json("[1]");
  EXPECT_THAT(std::string(MakeRequestFormat(target, Url(target.base_url())).status().message()),
              StartsWith("extra_body_json: must be a JSON object"));
}

TEST(RequestFormatTest, HeaderBlockKeyAndOverrides) {
  const std::vector<client::HeaderLine> extra = {
      {"accept", "text/plain"}, {"X-Team", "a b"}, {"accept-encoding", "gzip"}};
  EXPECT_EQ(HeaderBlock(Url("https://example.com/"), /*stream=*/false, "sk-1", extra),
            "Host: example.com\r\nUser-Agent: surge\r\nContent-Type: application/json\r\n"
            "Authorization: Bearer sk-1\r\naccept: text/plain\r\nX-Team: a b\r\n"
            "accept-encoding: gzip\r\n");
  EXPECT_EQ(HeaderBlock(Url("http://h:81"), /*stream=*/false, "", {}),
            "Host: h:81\r\nUser-Agent: surge\r\nContent-Type: application/json\r\n"
            "Accept: application/json\r\nAccept-Encoding: identity\r\n");
}

TEST(RequestFormatTest, RequestBytesNameTheRequestAndCountTheBody) {
  RequestFormat format;
  format.target_path = "/v1/completions";
  format.kind = ApiKind::kCompletions;
  format.model = "m";
  format.stream = false;
  format.header_block = "Host: h\r\n";
  const std::string body = R"({"max_tokens":5,"model":"m","prompt":"hi","stream":false})";
  EXPECT_EQ(BuildHttpRequest(format, "hi", 5, 12, 3),
            "POST /v1/completions HTTP/1.1\r\nHost: h\r\nX-Surge-Request: 12/3\r\n"
            "Content-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
}

}  // namespace
}  // namespace surge::worker
