// The R-REQ-1 target options of the HTTP client, end to end on 127.0.0.1:
// https against the sim server with a certificate made here, the API key
// file, extra headers and extra body fields.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "client/api_key.h"
#include "client/model_lister.h"
#include "client/target_checks.h"
#include "common/failure_kind.h"
#include "common/log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "simserver/sim_server.h"
#include "tests/simserver/test_sim_server_config.h"
#include "tests/worker/http/canned_server.h"
#include "tests/worker/http/self_signed_cert.h"
#include "tests/worker/http/sender_test_util.h"
#include "worker/http/beast_request_sender.h"

namespace surge::worker {
namespace {

using ::surge::client::FetchFirstModel;
using ::surge::client::LoadApiKey;
using ::surge::client::ParseExtraBody;
using ::surge::client::RedactApiKey;
using ::surge::simserver::SimServer;
using ::surge::testing::CannedServer;
using ::surge::testing::CertFiles;
using ::surge::testing::Chunk;
using ::surge::testing::HttpAnswer;
using ::surge::testing::LastChunk;
using ::surge::testing::LocalTarget;
using ::surge::testing::MakeSelfSignedCert;
using ::surge::testing::NewSender;
using ::surge::testing::Request;
using ::surge::testing::SendOne;
using ::surge::testing::SseHeader;
using ::surge::testing::StartSimServer;
using ::surge::testing::TestSimServerConfig;
using ::surge::v1::RequestRecord;
using ::surge::v1::SimServerConfig;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / (std::to_string(getpid()) + "_" + name))
      .string();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The JSON body of a raw request the canned server recorded.
nlohmann::json BodyOf(const std::string& raw) {
  return nlohmann::json::parse(raw.substr(raw.find("\r\n\r\n") + 4));
}

// --- https ---

class HttpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = MakeSelfSignedCert(::testing::TempDir(), "surge-https-test");
    ASSERT_FALSE(cert_.cert_path.empty()) << "OpenSSL could not make a certificate";
  }

  std::unique_ptr<SimServer> StartTlsSim(const CertFiles& cert) {
    SimServerConfig options = TestSimServerConfig();
    options.set_ttft_ms(5);
    options.set_itl_ms(1);
    options.set_tls_cert_file(cert.cert_path);
    options.set_tls_key_file(cert.key_path);
    return StartSimServer(options);
  }

  CertFiles cert_;
};

TEST_F(HttpsTest, RoundTripVerifiedWithTheCaFileAndPooled) {
  auto server = StartTlsSim(cert_);
  ASSERT_NE(server, nullptr);
  auto target = LocalTarget(server->port(), /*https=*/true);
  target.set_ca_cert_path(cert_.cert_path);
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  for (int i = 0; i < 3; ++i) {
    const RequestRecord r = SendOne(*sender, Request(i, 5));
    EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
    EXPECT_EQ(r.http_status(), 200u);
    EXPECT_EQ(r.output_tokens(), 5u);
    EXPECT_FALSE(r.output_tokens_estimated());
    EXPECT_EQ(r.itl_ns_size(), 4);
    EXPECT_GE(r.ttft_ns(), 5'000'000);
    EXPECT_GT(r.sent_ns(), 0);
  }
  // Keep-alive works over TLS: one handshake for the three requests.
  EXPECT_EQ(sender->connections_opened(), 1u);

  // Non-streamed answers over TLS too.
  auto plain_target = LocalTarget(server->port(), true, "/v1/completions", /*stream=*/false);
  plain_target.set_ca_cert_path(cert_.cert_path);
  auto plain_sender = NewSender(plain_target);
  ASSERT_NE(plain_sender, nullptr);
  const RequestRecord whole = SendOne(*plain_sender, Request(9, 3));
  EXPECT_EQ(whole.status(), surge::v1::OK) << whole.error();
  EXPECT_EQ(whole.output_tokens(), 3u);
}

TEST_F(HttpsTest, HostNameFormIsVerifiedToo) {
  auto server = StartTlsSim(cert_);
  ASSERT_NE(server, nullptr);
  auto target = LocalTarget(server->port(), true);
  target.set_base_url("https://localhost:" + std::to_string(server->port()));
  target.set_ca_cert_path(cert_.cert_path);
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, Request(0, 2));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
}

TEST_F(HttpsTest, VerificationIsOnByDefault) {
  auto server = StartTlsSim(cert_);
  ASSERT_NE(server, nullptr);
  // No CA file: the system store does not know our self-signed certificate.
  auto sender = NewSender(LocalTarget(server->port(), true));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, Request(0, 2));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_THAT(r.error(), StartsWith("tls: "));
  EXPECT_EQ(r.failure_kind(), surge::v1::FAILURE_KIND_TLS);
  EXPECT_THAT(r.error(), HasSubstr("certificate verify failed"));
  EXPECT_THAT(r.error(), HasSubstr("self-signed certificate"));
  EXPECT_EQ(r.sent_ns(), 0);  // nothing was sent
  EXPECT_EQ(r.http_status(), 0u);
  EXPECT_EQ(server->requests_served(), 0u);
}

TEST_F(HttpsTest, CertificateForAnotherHostIsRejected) {
  const CertFiles other =
      MakeSelfSignedCert(::testing::TempDir(), "surge-other-host", "DNS:other.example");
  ASSERT_FALSE(other.cert_path.empty());
  auto server = StartTlsSim(other);
  ASSERT_NE(server, nullptr);
  auto target = LocalTarget(server->port(), true);
  target.set_ca_cert_path(other.cert_path);  // trusted, but not for 127.0.0.1
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, Request(0, 2));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_THAT(r.error(), StartsWith("tls: "));
  EXPECT_THAT(r.error(), HasSubstr("IP address mismatch"));
}

TEST_F(HttpsTest, InsecureSkipsVerification) {
  auto server = StartTlsSim(cert_);
  ASSERT_NE(server, nullptr);
  auto target = LocalTarget(server->port(), true);
  target.set_insecure_skip_verify(true);
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, Request(0, 2));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
}

TEST_F(HttpsTest, PlainHttpClientOnHttpsServerFails) {
  auto server = StartTlsSim(cert_);
  ASSERT_NE(server, nullptr);
  auto sender = NewSender(LocalTarget(server->port(), /*https=*/false));
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, Request(0, 2));
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_NE(r.error(), "");
}

TEST_F(HttpsTest, FetchFirstModelOverHttps) {
  auto server = StartTlsSim(cert_);
  ASSERT_NE(server, nullptr);
  auto target = LocalTarget(server->port(), true);
  target.set_ca_cert_path(cert_.cert_path);
  auto model = FetchFirstModel(target, std::chrono::seconds(5));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(*model, "surge-sim");

  target.clear_ca_cert_path();
  auto unverified = FetchFirstModel(target, std::chrono::seconds(5));
  EXPECT_EQ(unverified.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(unverified.status().message()),
              HasSubstr("tls: certificate verify failed"));

  target.set_insecure_skip_verify(true);
  auto insecure = FetchFirstModel(target, std::chrono::seconds(5));
  ASSERT_TRUE(insecure.ok()) << insecure.status();
}

// --- API key ---

class ApiKeyTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ::unsetenv("OPENAI_API_KEY");
    SetLogLevel(LogLevel::kInfo);
  }
};

TEST_F(ApiKeyTest, FileKeyIsSentStrippedAndNeverLoggedOrRecorded) {
  const std::string key = "sk-file-key-6f1d2a";
  const std::string key_path = TempPath("api_key.txt");
  WriteFile(key_path, key + "\n");
  // The file wins over the environment.
  ::setenv("OPENAI_API_KEY", "sk-env-key-should-not-be-used", 1);
  int calls = 0;
  CannedServer server([&calls](const std::string&) {
    // First answer fails, so the error path is covered too.
    if (calls++ == 0) return HttpAnswer(401, "Unauthorized", R"({"error":"bad key"})");
    return SseHeader() + Chunk("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n") +
           Chunk("data: [DONE]\n\n") + LastChunk();
  });
  surge::v1::TargetConfig target = LocalTarget(server.port());
  target.set_api_key_file(key_path);

  SetLogLevel(LogLevel::kDebug);
  ::testing::internal::CaptureStderr();
  auto sender = NewSender(target);
  std::vector<RequestRecord> records;
  if (sender != nullptr) {
    records.push_back(SendOne(*sender, Request(0, 2)));
    records.push_back(SendOne(*sender, Request(1, 2)));
    sender->Shutdown(std::chrono::seconds(1));
  }
  const std::string logged = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(sender, nullptr);

  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].status(), surge::v1::FAILED);
  EXPECT_THAT(records[0].error(), StartsWith("http_401: "));
  EXPECT_EQ(records[1].status(), surge::v1::OK) << records[1].error();
  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const std::string& raw : requests) {
    EXPECT_THAT(raw, HasSubstr("\r\nAuthorization: Bearer " + key + "\r\n"));
    EXPECT_THAT(raw, Not(HasSubstr("sk-env-key")));
  }
  EXPECT_THAT(logged, Not(HasSubstr(key)));
  for (const RequestRecord& r : records) {
    EXPECT_THAT(r.DebugString(), Not(HasSubstr(key)));
  }
  // The configuration carries the path only.
  EXPECT_THAT(target.DebugString(), Not(HasSubstr(key)));

  // The model lister sends the same key.
  CannedServer models(
      [](const std::string&) { return HttpAnswer(200, "OK", R"({"data":[{"id":"m"}]})"); });
  target.set_base_url(models.base_url());
  ASSERT_TRUE(FetchFirstModel(target, std::chrono::seconds(5)).ok());
  ASSERT_EQ(models.requests().size(), 1u);
  EXPECT_THAT(models.requests()[0], HasSubstr("\r\nAuthorization: Bearer " + key + "\r\n"));
}

TEST_F(ApiKeyTest, BadKeyFilesAreConfigurationErrorsThatDoNotQuoteTheKey) {
  surge::v1::TargetConfig target = LocalTarget(1);
  target.set_api_key_file(TempPath("no_such_key_file"));
  auto missing = BeastRequestSender::Create(RealClock(), target);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()), StartsWith("api_key_file: cannot read "));

  const std::string empty_path = TempPath("empty_key.txt");
  WriteFile(empty_path, "\n");
  target.set_api_key_file(empty_path);
  auto empty = BeastRequestSender::Create(RealClock(), target);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("is empty"));

  const std::string bad_path = TempPath("bad_key.txt");
  WriteFile(bad_path, "sk-secret-part1\nsk-secret-part2\n");
  target.set_api_key_file(bad_path);
  auto bad = BeastRequestSender::Create(RealClock(), target);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("control characters"));
  EXPECT_THAT(std::string(bad.status().message()), Not(HasSubstr("sk-secret")));
}

TEST_F(ApiKeyTest, EnvironmentKeyWhenNoFile) {
  ::setenv("OPENAI_API_KEY", "  sk-env-1  ", 1);
  surge::v1::TargetConfig target;
  auto key = LoadApiKey(target);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "sk-env-1");
  ::unsetenv("OPENAI_API_KEY");
  key = LoadApiKey(target);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "");
}

// --- Extra headers and body ---

TEST(ExtraRequestFieldsTest, HeadersAndBodyReachTheServer) {
  CannedServer server([](const std::string&) {
    return SseHeader() + Chunk("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n") +
           Chunk("data: [DONE]\n\n") + LastChunk();
  });
  ::unsetenv("OPENAI_API_KEY");
  surge::v1::TargetConfig target = LocalTarget(server.port());
  target.add_headers("X-Request-Source:   surge-test  ");
  target.add_headers("User-Agent: custom-agent/1.0");
  target.set_extra_body_json(
      R"({"temperature":0,"ignore_eos":true,"stream_options":{"continuous_usage_stats":true},
          "top_k":null})");
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, Request(3, 7));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  ASSERT_EQ(server.requests().size(), 1u);
  const std::string raw = server.requests()[0];
  EXPECT_THAT(raw, HasSubstr("\r\nX-Request-Source: surge-test\r\n"));
  EXPECT_THAT(raw, HasSubstr("\r\nUser-Agent: custom-agent/1.0\r\n"));
  EXPECT_THAT(raw, Not(HasSubstr("User-Agent: surge")));
  EXPECT_THAT(raw, HasSubstr("\r\nContent-Type: application/json\r\n"));
  const nlohmann::json body = BodyOf(raw);
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["ignore_eos"], true);
  // Merged, not replaced: the client's include_usage stays.
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["stream_options"]["continuous_usage_stats"], true);
  EXPECT_FALSE(body.contains("top_k"));
  EXPECT_EQ(body["max_tokens"], 7);
  EXPECT_EQ(body["model"], "surge-sim");
  EXPECT_TRUE(body["messages"].is_array());
}

TEST(ExtraRequestFieldsTest, BodyFieldsReachTheSimServer) {
  // The sim server honours an overriding max_tokens from the extra body.
  SimServerConfig options = TestSimServerConfig();
  options.set_ttft_ms(1);
  options.set_itl_ms(0);
  auto server = StartSimServer(options);
  ASSERT_NE(server, nullptr);
  surge::v1::TargetConfig target = LocalTarget(server->port());
  target.set_extra_body_json(R"({"max_tokens":3,"ignore_eos":true})");
  target.add_headers("X-Trace: 1");
  auto sender = NewSender(target);
  ASSERT_NE(sender, nullptr);
  const RequestRecord r = SendOne(*sender, Request(0, 9));
  EXPECT_EQ(r.status(), surge::v1::OK) << r.error();
  EXPECT_EQ(r.output_tokens(), 3u);
}

TEST(ExtraRequestFieldsTest, BadHeadersAndBodiesAreRejectedByName) {
  struct Case {
    std::vector<std::string> headers;
    std::string extra_body;
    std::string message_prefix;
  };
  const std::vector<Case> cases = {
      {{"Authorization: Bearer sk-x"}, "", "headers[0]: sets Authorization"},
      {{"X-Ok: 1", "no colon here"}, "", "headers[1]: must be \"Name: value\""},
      {{"Bad Name: 1"}, "", "headers[0]: has a header name with characters"},
      {{"Host: elsewhere"}, "", "headers[0]: sets Host"},
      {{"X-Evil: a\rb"}, "", "headers[0]: has control characters"},
      {{}, "{oops", "extra_body_json: is not valid JSON"},
      {{}, "[1,2]", "extra_body_json: must be a JSON object"},
      {{}, R"({"stream":false})", "extra_body_json: must not set \"stream\""},
      // One answer per request.
      {{}, R"({"n":2})", "extra_body_json: sets \"n\": 2; surge measures one answer"},
      {{}, R"({"n":"2"})", "extra_body_json: sets \"n\": \"2\"; surge measures one answer"},
      {{}, R"({"best_of":3})", "extra_body_json: sets \"best_of\": 3; surge measures one answer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message_prefix);
    surge::v1::TargetConfig target = LocalTarget(1);
    for (const std::string& h : c.headers) target.add_headers(h);
    target.set_extra_body_json(c.extra_body);
    auto sender = BeastRequestSender::Create(RealClock(), target);
    EXPECT_EQ(sender.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(sender.status().message()), StartsWith(c.message_prefix));
    EXPECT_THAT(std::string(sender.status().message()), Not(HasSubstr("sk-x")));
  }
}

// Servers quote a rejected key back; what surge keeps never holds it
// (R-REQ-1).
TEST(RedactApiKeyTest, EveryOccurrenceAndACutOffTailAreReplaced) {
  const std::string key = "sk-secret-0123456789";
  std::string text = "Incorrect API key provided: sk-secret-0123456789 (sk-secret-0123456789)";
  RedactApiKey(&text, key);
  EXPECT_EQ(text, "Incorrect API key provided: [API key redacted] ([API key redacted])");
  // A quote cut short by a length limit: the key's first characters at the end.
  std::string cut = "http_401: {\"message\":\"bad key sk-secr";
  RedactApiKey(&cut, key);
  EXPECT_EQ(cut, "http_401: {\"message\":\"bad key [API key redacted]");
  // Three characters are too few to stand for the key (and are common text).
  std::string short_tail = "expected sk-";
  RedactApiKey(&short_tail, key);
  EXPECT_EQ(short_tail, "expected sk-");
  // No key: nothing to redact.
  std::string untouched = "sk-secret-0123456789";
  RedactApiKey(&untouched, "");
  EXPECT_EQ(untouched, "sk-secret-0123456789");
  // A key that contains the mask text cannot loop forever.
  std::string odd = "x [API key redacted] y";
  RedactApiKey(&odd, "[API key redacted]");
  EXPECT_EQ(odd, "x [API key redacted] y");
}

// n and best_of of 1 (or null, the server's default) ask
// for one answer and are allowed.
TEST(ExtraRequestFieldsTest, OneChoiceIsAllowed) {
  for (const char* text : {R"({"n":1})", R"({"n":1.0,"best_of":1})", R"({"n":null})"}) {
    EXPECT_TRUE(ParseExtraBody(text).ok()) << text;
  }
  for (const char* text : {R"({"n":0})", R"({"n":true})", R"({"best_of":2,"n":1})"}) {
    EXPECT_EQ(ParseExtraBody(text).status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

}  // namespace
}  // namespace surge::worker
