// The sim server over real loopback sockets with a plain POSIX client, so
// the wire format itself (status lines, chunking, SSE framing) is checked.
#include "simserver/sim_server.h"
#include "simserver/sim_tokenizer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "common/clock.h"
#include "common/prompt_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/simserver/test_sim_server_config.h"
#include "tests/worker/http/self_signed_cert.h"

namespace surge::simserver {
namespace {

using ::surge::testing::TestSimServerConfig;
using ::surge::v1::SimServerConfig;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

// A blocking loopback connection with a 10 s receive timeout.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  bool connected() const { return connected_; }

  void Write(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
  // Reads until the peer closes (or the timeout); returns everything.
  std::string ReadAll() {
    std::string out;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // Like ReadAll; `reads` counts the recv calls that returned bytes.
  std::string ReadAllCounting(int* reads) {
    std::string out;
    char buf[4096];
    *reads = 0;
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      ++*reads;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // Reads exactly `n` bytes (fewer on close or timeout).
  std::string ReadExactly(size_t n) {
    std::string out;
    char c;
    while (out.size() < n && ::recv(fd_, &c, 1, 0) == 1) out += c;
    return out;
  }
  // Reads one response with a Content-Length body.
  std::string ReadOneSized() {
    std::string out;
    char c;
    while (out.find("\r\n\r\n") == std::string::npos && ::recv(fd_, &c, 1, 0) == 1) out += c;
    const size_t cl = absl::AsciiStrToLower(out).find("content-length: ");
    if (cl == std::string::npos) return out;
    size_t left = std::stoul(out.substr(cl + 16));
    while (left > 0 && ::recv(fd_, &c, 1, 0) == 1) {
      out += c;
      --left;
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
};

Response ParseResponse(const std::string& raw) {
  Response r;
  const size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos) return r;
  std::string head = raw.substr(0, header_end);
  r.status = std::stoi(head.substr(9, 3));
  size_t pos = head.find("\r\n");
  while (pos != std::string::npos) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string line = head.substr(pos + 2, next - pos - 2);
    const size_t colon = line.find(':');
    r.headers[absl::AsciiStrToLower(line.substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    pos = next;
  }
  std::string rest = raw.substr(header_end + 4);
  if (r.headers["transfer-encoding"] == "chunked") {
    size_t at = 0;
    for (;;) {
      const size_t eol = rest.find("\r\n", at);
      if (eol == std::string::npos) break;
      const size_t size = std::stoul(rest.substr(at, eol - at), nullptr, 16);
      if (size == 0) break;
      r.body += rest.substr(eol + 2, size);
      at = eol + 2 + size + 2;
    }
  } else {
    r.body = rest;
  }
  return r;
}

// "data: X\n\n" events of an SSE body.
std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    std::string event = body.substr(at, end - at);
    EXPECT_THAT(event, StartsWith("data: "));
    out.push_back(event.substr(6));
    at = end + 2;
  }
  EXPECT_EQ(at, body.size()) << "trailing bytes in SSE body";
  return out;
}

std::string Post(const std::string& path, const std::string& body, bool close = true) {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
         (close ? "Connection: close\r\n" : "") + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

Response Exchange(uint16_t port, const std::string& request) {
  RawConnection conn(port);
  EXPECT_TRUE(conn.connected());
  conn.Write(request);
  return ParseResponse(conn.ReadAll());
}

class SimServerTest : public ::testing::Test {
 protected:
  void StartServer(double ttft_ms = 1, double itl_ms = 1, int threads = 1) {
    SimServerConfig options = TestSimServerConfig();
    options.set_ttft_ms(ttft_ms);
    options.set_itl_ms(itl_ms);
    options.set_threads(threads);
    auto server = SimServer::Create(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_NE(server_->port(), 0);
    server_->Start();
  }
  std::unique_ptr<SimServer> server_;
};

TEST_F(SimServerTest, ListsOneModel) {
  StartServer();
  const Response r =
      Exchange(server_->port(), "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-type"), "application/json");
  EXPECT_EQ(Json::parse(r.body),
            Json::parse(R"({"object":"list","data":[{"id":"surge-sim","object":"model",
                            "owned_by":"surge"}]})"));
  EXPECT_EQ(server_->requests_served(), 1u);
}

TEST_F(SimServerTest, StreamingChatFollowsTheOpenAiChunkFormat) {
  StartServer();
  const std::string content = "Hello there, simulated server!";
  const Json request = {
      {"model", "surge-sim"},
      {"messages",
       {{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", content}}}},
      {"max_tokens", 3},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}}};
  const Response r = Exchange(server_->port(), Post("/v1/chat/completions", request.dump()));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
  EXPECT_EQ(r.headers.at("transfer-encoding"), "chunked");
  const std::vector<std::string> events = SseData(r.body);
  ASSERT_EQ(events.size(), 6u);  // role, 3 tokens, usage, [DONE]

  const Json role = Json::parse(events[0]);
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["model"], "surge-sim");
  EXPECT_EQ(role["choices"][0]["delta"], Json({{"role", "assistant"}}));
  for (int k = 1; k <= 3; ++k) {
    const Json token = Json::parse(events[k]);
    EXPECT_EQ(token["object"], "chat.completion.chunk");
    EXPECT_EQ(token["id"], role["id"]);
    EXPECT_EQ(token["choices"][0]["delta"]["content"], " tok");
    EXPECT_EQ(token["choices"][0]["finish_reason"], k == 3 ? Json("length") : Json(nullptr));
  }
  const Json usage = Json::parse(events[4]);
  EXPECT_EQ(usage["choices"], Json::array());
  // The server counts with its own tokenizer, through its chat template.
  const uint32_t prompt_tokens =
      SimTokenizer().TokenizeChat({{"system", "be brief"}, {"user", content}}).size();
  EXPECT_EQ(usage["usage"]["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
  EXPECT_EQ(usage["usage"]["total_tokens"], prompt_tokens + 3);
  EXPECT_EQ(events[5], "[DONE]");
}

TEST_F(SimServerTest, ToolsInTheRequestGetAStreamedToolCall) {
  StartServer();
  const Json request = {
      {"messages", {{{"role", "user"}, {"content", "weather?"}}}},
      {"tools", {{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}},
      {"max_tokens", 3},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}}};
  const Response r = Exchange(server_->port(), Post("/v1/chat/completions", request.dump()));
  ASSERT_EQ(r.status, 200);
  const std::vector<std::string> events = SseData(r.body);
  ASSERT_EQ(events.size(), 6u);  // role, name, 2 argument pieces, usage, [DONE]
  EXPECT_EQ(Json::parse(events[1])["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
            "get_weather");
  std::string arguments;
  for (int k = 1; k <= 3; ++k) {
    const Json chunk = Json::parse(events[k]);
    const Json& choice = chunk["choices"][0];
    arguments += choice["delta"]["tool_calls"][0]["function"]["arguments"].get<std::string>();
    EXPECT_EQ(choice["finish_reason"], k == 3 ? Json("tool_calls") : Json(nullptr));
  }
  EXPECT_EQ(arguments, R"({"text":" tok tok"})");
  EXPECT_EQ(Json::parse(events[4])["usage"]["completion_tokens"], 3);
  EXPECT_EQ(events[5], "[DONE]");
}

TEST_F(SimServerTest, StreamingCompletionsWithoutUsage) {
  StartServer();
  const Response r =
      Exchange(server_->port(),
               Post("/v1/completions", R"({"prompt":"abcdefgh","max_tokens":2,"stream":true})"));
  ASSERT_EQ(r.status, 200);
  const std::vector<std::string> events = SseData(r.body);
  ASSERT_EQ(events.size(), 3u);  // 2 tokens, [DONE]; no role event, no usage
  for (int k = 0; k < 2; ++k) {
    const Json token = Json::parse(events[k]);
    EXPECT_EQ(token["object"], "text_completion");
    EXPECT_EQ(token["choices"][0]["text"], " tok");
  }
  EXPECT_EQ(events[2], "[DONE]");
}

TEST_F(SimServerTest, NonStreamingAnswers) {
  StartServer(/*ttft_ms=*/30, /*itl_ms=*/10);
  const auto t0 = RealClock().Now();
  const Response chat =
      Exchange(server_->port(),
               Post("/v1/chat/completions",
                    R"({"messages":[{"role":"user","content":[{"type":"text","text":"abcd"}]}],
               "max_completion_tokens":3})"));
  const auto elapsed = RealClock().Now() - t0;
  ASSERT_EQ(chat.status, 200);
  // ttft + 2 · itl before the answer.
  EXPECT_GE(elapsed, std::chrono::milliseconds(50));
  const Json body = Json::parse(chat.body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], " tok tok tok");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 1 + kChatTokensPerMessage + kChatGenerationTokens);
  EXPECT_EQ(body["usage"]["completion_tokens"], 3);

  const Response completion =
      Exchange(server_->port(), Post("/v1/completions", R"({"prompt":"x"})"));
  ASSERT_EQ(completion.status, 200);
  const Json c = Json::parse(completion.body);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["usage"]["completion_tokens"], 16);  // the default
}

// With --api-key-file every /v1/ request must carry the key (vLLM's
// --api-key): none or a wrong one is 401; /tokenize, /metrics and /health
// stay open.
TEST(SimServerApiKeyTest, V1PathsNeedTheKey) {
  const std::string key_path = ::testing::TempDir() + "/sim_server_api_key";
  std::ofstream(key_path) << "  sk-sim-123\n";
  SimServerConfig options = TestSimServerConfig();
  options.set_api_key_file(key_path);
  auto server = SimServer::Create(options);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  const uint16_t port = (*server)->port();
  const std::string body = R"({"prompt":"p","max_tokens":2})";
  auto with_header = [&](const std::string& header) {
    std::string request = Post("/v1/completions", body);
    return request.insert(request.find("\r\n") + 2, header);
  };
  const Response none = Exchange(port, Post("/v1/completions", body));
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(Json::parse(none.body)["error"]["type"], "authentication_error");
  EXPECT_EQ(Exchange(port, with_header("Authorization: Bearer sk-sim-12\r\n")).status, 401);
  EXPECT_EQ(
      Exchange(port, "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status,
      401);
  EXPECT_EQ(Exchange(port, with_header("Authorization: Bearer sk-sim-123\r\n")).status, 200);
  EXPECT_EQ(Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status,
            200);
  // GET /health is the readiness probe's: 200 with an empty body, no key;
  // any other method is 405.
  const Response health =
      Exchange(port, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "");
  EXPECT_EQ(Exchange(port, Post("/health", "{}")).status, 405);
  // A key file that cannot be read stops the server before it listens.
  options.set_api_key_file(key_path + ".missing");
  auto broken = SimServer::Create(options);
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(std::string(broken.status().message()),
              StartsWith("api_key_file: cannot read " + key_path + ".missing"));
}

TEST_F(SimServerTest, ErrorsAreOpenAiStyle) {
  StartServer();
  struct Case {
    std::string request;
    int status;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {Post("/v1/chat/completions", "{not json"), 400, "not valid JSON"},
      {Post("/v1/chat/completions", R"({"max_tokens":3})"), 400, "messages"},
      {Post("/v1/completions", R"({"messages":[]})"), 400, "prompt"},
      {Post("/v1/completions", R"({"prompt":"p","max_tokens":0})"), 400, "max_tokens"},
      {Post("/v1/completions", R"({"prompt":"p","stream":"yes"})"), 400, "stream"},
      {Post("/v1/completions", "[1,2]"), 400, "object"},
      {Post("/v2/whatever", "{}"), 404, "no route"},
      {"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "POST"},
      {"BLAH\r\n\r\n", 400, "bad HTTP request"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request);
    const Response r = Exchange(server_->port(), c.request);
    EXPECT_EQ(r.status, c.status);
    const Json body = Json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << r.body;
    EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr(c.message_part));
  }
  // Still serving.
  const Response ok = Exchange(server_->port(), Post("/v1/completions", R"({"prompt":"p"})"));
  EXPECT_EQ(ok.status, 200);
}

TEST_F(SimServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  StartServer();
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.connected());
  for (int i = 0; i < 3; ++i) {
    conn.Write(Post("/v1/completions", R"({"prompt":"p","max_tokens":2})", /*close=*/false));
    const Response r = ParseResponse(conn.ReadOneSized());
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(Json::parse(r.body)["usage"]["completion_tokens"], 2);
  }
  // Counted once the write completed, which may be just after we read it.
  for (int i = 0; i < 2000 && server_->requests_served() < 3u; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(server_->requests_served(), 3u);
}

TEST_F(SimServerTest, ExpectContinueIsAnswered) {
  StartServer();
  RawConnection conn(server_->port());
  const std::string body = R"({"prompt":"p","max_tokens":1})";
  conn.Write(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
      "Connection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n");
  // The client waits for the interim answer before it sends the body.
  EXPECT_EQ(conn.ReadExactly(25), "HTTP/1.1 100 Continue\r\n\r\n");
  conn.Write(body);
  const std::string raw = conn.ReadAll();
  EXPECT_THAT(raw, StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST_F(SimServerTest, ManyConcurrentStreams) {
  StartServer(/*ttft_ms=*/20, /*itl_ms=*/2, /*threads=*/2);
  constexpr int kStreams = 64;
  std::vector<std::unique_ptr<RawConnection>> conns;
  const std::string request =
      Post("/v1/chat/completions",
           R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true})");
  for (int i = 0; i < kStreams; ++i) {
    conns.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(conns.back()->connected());
    conns.back()->Write(request);
  }
  for (auto& conn : conns) {
    const Response r = ParseResponse(conn->ReadAll());
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(SseData(r.body).size(), 7u);  // role, 5 tokens, [DONE]
  }
  EXPECT_EQ(server_->requests_served(), static_cast<uint64_t>(kStreams));
}

TEST_F(SimServerTest, StopClosesOpenStreams) {
  StartServer(/*ttft_ms=*/10000, 1);
  RawConnection conn(server_->port());
  conn.Write(Post("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"hi"}],"stream":true})"));
  // The header and the role event come at once; the first token in 10 s.
  std::thread stopper([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server_->Stop();
  });
  const auto t0 = RealClock().Now();
  const std::string raw = conn.ReadAll();  // returns on close
  stopper.join();
  EXPECT_LT(RealClock().Now() - t0, std::chrono::seconds(5));
  EXPECT_THAT(raw, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(raw, ::testing::Not(HasSubstr("[DONE]")));
  server_->Stop();  // idempotent
  RawConnection after(server_->port());
  EXPECT_FALSE(after.connected());
}

TEST(SimServerCreateTest, RejectsBadOptionsAndBusyPorts) {
  SimServerConfig options = TestSimServerConfig();
  options.set_address("not-an-ip");
  EXPECT_EQ(SimServer::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = TestSimServerConfig();
  options.set_ttft_ms(-1);
  EXPECT_EQ(SimServer::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = TestSimServerConfig();
  options.set_threads(0);
  EXPECT_EQ(SimServer::Create(options).status().code(), absl::StatusCode::kInvalidArgument);

  auto first = SimServer::Create(TestSimServerConfig());
  ASSERT_TRUE(first.ok());
  options = TestSimServerConfig();
  options.set_port((*first)->port());
  auto second = SimServer::Create(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("cannot bind 127.0.0.1:"));
}

// --request-log: one JSON line per request read, with the client's address
// and the X-Surge-Request tag (null without one): what the tests that no request is sent twice
// read.
TEST(SimServerRequestLogTest, OneLinePerRequestWithPeerAndTag) {
  const std::string file = ::testing::TempDir() + "/sim_request_log.jsonl";
  SimServerConfig options = TestSimServerConfig();
  options.set_ttft_ms(1);
  options.set_itl_ms(1);
  options.set_request_log_file(file);
  auto server = SimServer::Create(options);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  const uint16_t port = (*server)->port();
  Exchange(port, "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string body = R"({"prompt":"p","max_tokens":1})";
  const Response r =
      Exchange(port,
               "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Surge-Request: 42/3\r\n"
               "Connection: close\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 200);
  (*server)->Stop();
  std::ifstream in(file);
  std::vector<Json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["method"], "GET");
  EXPECT_EQ(lines[0]["path"], "/v1/models");
  EXPECT_TRUE(lines[0]["surge_request"].is_null());
  EXPECT_EQ(lines[1]["method"], "POST");
  EXPECT_EQ(lines[1]["path"], "/v1/completions");
  EXPECT_EQ(lines[1]["surge_request"], "42/3");
  EXPECT_EQ(lines[1]["peer"], "127.0.0.1");
  EXPECT_GT(lines[1]["t_ns"].get<int64_t>(), lines[0]["t_ns"].get<int64_t>() - 1);
  EXPECT_GT(lines[0]["t_ns"].get<int64_t>(), int64_t{1'600'000'000} * 1'000'000'000);
}

TEST(SimServerRequestLogTest, UnwritableLogIsAnInvalidArgument) {
  SimServerConfig options = TestSimServerConfig();
  options.set_request_log_file("/nonexistent-dir/requests.jsonl");
  const auto server = SimServer::Create(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("request_log_file"));
}

TEST(SimServerCreateTest, DestroyWithoutStart) {
  auto server = SimServer::Create(TestSimServerConfig());
  ASSERT_TRUE(server.ok());
  server->reset();
}

// `surge sim-server --host 0.0.0.0` in a container (deploy/docker-compose.yml,
// docs/DEPLOY.md): the wildcard address binds, and the server answers on
// loopback (the only address this test may send to).
TEST(SimServerCreateTest, BindsTheWildcardAddressForContainers) {
  SimServerConfig options = TestSimServerConfig();
  options.set_address("0.0.0.0");
  options.set_port(0);
  auto server = SimServer::Create(options);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_NE((*server)->port(), 0);
  (*server)->Start();
  const Response r = Exchange((*server)->port(),
                              "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Json::parse(r.body)["data"][0]["id"], "surge-sim");
  (*server)->Stop();
}

// --- Fault injection and https ---

std::unique_ptr<SimServer> StartWith(const SimServerConfig& options) {
  auto server = SimServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  (*server)->Start();
  return *std::move(server);
}

SimServerConfig Fast() {
  SimServerConfig options = TestSimServerConfig();
  options.set_ttft_ms(1);
  options.set_itl_ms(1);
  return options;
}

const char kStreamCompletion[] = R"({"prompt":"p","max_tokens":4,"stream":true})";

TEST(SimServerFaultTest, ErrorStatusesAreOpenAiStyleAndKeepTheConnection) {
  struct Case {
    void (SimServerConfig::*fraction)(double);
    int status;
    std::string message_part;
  };
  for (const Case& c : {Case{&SimServerConfig::set_fault_429, 429, "rate limit"},
                        Case{&SimServerConfig::set_fault_500, 500, "internal error"},
                        Case{&SimServerConfig::set_fault_503, 503, "overload"}}) {
    SCOPED_TRACE(c.status);
    SimServerConfig options = Fast();
    (options.*(c.fraction))(1);
    auto server = StartWith(options);
    ASSERT_NE(server, nullptr);
    RawConnection conn(server->port());
    ASSERT_TRUE(conn.connected());
    for (int i = 0; i < 2; ++i) {  // keep-alive: both on one connection
      conn.Write(Post("/v1/completions", kStreamCompletion, /*close=*/false));
      const Response r = ParseResponse(conn.ReadOneSized());
      EXPECT_EQ(r.status, c.status);
      EXPECT_EQ(r.headers.at("content-type"), "application/json");
      EXPECT_THAT(Json::parse(r.body)["error"]["message"].get<std::string>(),
                  HasSubstr(c.message_part));
    }
    // /v1/models is never faulted.
    const Response models =
        Exchange(server->port(), "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(models.status, 200);
  }
}

TEST(SimServerFaultTest, MalformedEventComesAfterKTokens) {
  SimServerConfig options = Fast();
  options.set_fault_malformed(1);
  options.set_fault_after_tokens(2);
  auto server = StartWith(options);
  ASSERT_NE(server, nullptr);
  const Response r = Exchange(server->port(), Post("/v1/completions", kStreamCompletion));
  ASSERT_EQ(r.status, 200);
  const std::vector<std::string> events = SseData(r.body);
  ASSERT_EQ(events.size(), 6u);  // 2 tokens, the bad line, 2 tokens, [DONE]
  EXPECT_EQ(Json::parse(events[1])["choices"][0]["text"], " tok");
  EXPECT_EQ(events[2], "surge-sim malformed chunk");
  EXPECT_TRUE(Json::parse(events[2], nullptr, false).is_discarded());
  EXPECT_EQ(events[5], "[DONE]");
}

TEST(SimServerFaultTest, ErrorEventEndsTheStreamCleanly) {
  SimServerConfig options = Fast();
  options.set_fault_error_event(1);
  options.set_fault_after_tokens(1);
  auto server = StartWith(options);
  ASSERT_NE(server, nullptr);
  RawConnection conn(server->port());
  conn.Write(Post("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,
                      "stream_options":{"include_usage":true}})"));
  const std::string raw = conn.ReadAll();
  EXPECT_THAT(raw, ::testing::EndsWith("0\r\n\r\n"));  // the chunked terminator
  const std::vector<std::string> events = SseData(ParseResponse(raw).body);
  ASSERT_EQ(events.size(), 4u);  // role, 1 token, the error, [DONE]
  EXPECT_EQ(Json::parse(events[2])["error"]["message"], "simulated engine failure");
  EXPECT_EQ(events[3], "[DONE]");
}

TEST(SimServerFaultTest, ResetClosesAfterKTokens) {
  SimServerConfig options = Fast();
  options.set_fault_reset(1);
  options.set_fault_after_tokens(2);
  auto server = StartWith(options);
  ASSERT_NE(server, nullptr);
  RawConnection conn(server->port());
  conn.Write(Post("/v1/completions", kStreamCompletion, /*close=*/false));
  const std::string raw = conn.ReadAll();  // returns because the server closed
  EXPECT_THAT(raw, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(raw, ::testing::Not(HasSubstr("[DONE]")));
  EXPECT_THAT(raw, ::testing::Not(::testing::EndsWith("0\r\n\r\n")));
  EXPECT_EQ(SseData(ParseResponse(raw).body).size(), 2u);
  EXPECT_EQ(server->requests_served(), 0u);
}

TEST(SimServerFaultTest, StallPausesThenTheRestFollows) {
  SimServerConfig options = Fast();
  options.set_fault_stall(1);
  options.set_fault_after_tokens(1);
  options.set_fault_stall_ms(150);
  auto server = StartWith(options);
  ASSERT_NE(server, nullptr);
  const auto t0 = RealClock().Now();
  const Response r = Exchange(server->port(), Post("/v1/completions", kStreamCompletion));
  EXPECT_GE(RealClock().Now() - t0, std::chrono::milliseconds(150));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(SseData(r.body).size(), 5u);  // 4 tokens, [DONE]
}

TEST(SimServerFaultTest, SplitWritesTheSameBytesInManyPieces) {
  auto plain = StartWith(Fast());
  SimServerConfig options = Fast();
  options.set_fault_split(1);
  auto split = StartWith(options);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(split, nullptr);
  RawConnection a(plain->port());
  RawConnection b(split->port());
  a.Write(Post("/v1/completions", kStreamCompletion));
  b.Write(Post("/v1/completions", kStreamCompletion));
  int reads_a = 0;
  int reads_b = 0;
  const Response ra = ParseResponse(a.ReadAllCounting(&reads_a));
  const Response rb = ParseResponse(b.ReadAllCounting(&reads_b));
  ASSERT_EQ(ra.status, 200);
  ASSERT_EQ(rb.status, 200);
  const std::vector<std::string> ea = SseData(ra.body);
  const std::vector<std::string> eb = SseData(rb.body);
  ASSERT_EQ(ea.size(), eb.size());
  for (size_t i = 0; i + 1 < ea.size(); ++i) {
    Json ja = Json::parse(ea[i]);
    Json jb = Json::parse(eb[i]);
    ja.erase("created");
    jb.erase("created");
    EXPECT_EQ(ja, jb);
  }
  EXPECT_EQ(eb.back(), "[DONE]");
  // How many reads the pieces take depends on scheduling (a busy reader sees
  // them coalesced), so only the bytes are compared here; the client-side
  // reassembly is tested in tests/worker/http/sim_faults_test.cc.
  EXPECT_GE(reads_a, 1);
  EXPECT_GE(reads_b, 1);
}

TEST(SimServerFaultTest, NonStreamedFaults) {
  SimServerConfig options = Fast();
  options.set_fault_malformed(1);
  auto malformed = StartWith(options);
  ASSERT_NE(malformed, nullptr);
  const Response m = Exchange(malformed->port(), Post("/v1/completions", R"({"prompt":"p"})"));
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body, "surge-sim malformed chunk");

  options = Fast();
  options.set_fault_reset(1);
  auto reset = StartWith(options);
  ASSERT_NE(reset, nullptr);
  const Response r = Exchange(reset->port(), Post("/v1/completions", R"({"prompt":"p"})"));
  EXPECT_EQ(r.status, 200);
  const size_t promised = std::stoul(r.headers.at("content-length"));
  EXPECT_LT(r.body.size(), promised);  // half of it, then the close
  EXPECT_GT(r.body.size(), 0u);
}

// Statuses of `n` requests, one after another on one connection.
std::vector<int> Statuses(uint64_t seed, int n) {
  SimServerConfig options = Fast();
  options.set_fault_503(0.5);
  options.set_fault_seed(seed);
  auto server = StartWith(options);
  std::vector<int> out;
  if (server == nullptr) return out;
  RawConnection conn(server->port());
  for (int i = 0; i < n; ++i) {
    conn.Write(Post("/v1/completions", R"({"prompt":"p","max_tokens":1})", /*close=*/false));
    out.push_back(ParseResponse(conn.ReadOneSized()).status);
  }
  return out;
}

TEST(SimServerFaultTest, DrawsDependOnlyOnTheSeedAndTheRequestNumber) {
  const std::vector<int> first = Statuses(3, 30);
  EXPECT_EQ(first, Statuses(3, 30));
  EXPECT_NE(first, Statuses(4, 30));
  const long faulted = std::count(first.begin(), first.end(), 503);
  EXPECT_EQ(std::count(first.begin(), first.end(), 200) + faulted, 30);
  EXPECT_GT(faulted, 5);  // about half
  EXPECT_LT(faulted, 25);
}

TEST(SimServerFaultTest, CreateRejectsBadFaultAndTlsOptions) {
  SimServerConfig options = TestSimServerConfig();
  options.set_fault_503(1.5);
  auto over = SimServer::Create(options);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(over.status().message()), StartsWith("fault_503: "));

  options = TestSimServerConfig();
  options.set_fault_429(0.6);
  options.set_fault_reset(0.6);
  auto sum = SimServer::Create(options);
  EXPECT_EQ(sum.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(sum.status().message()), HasSubstr("must be <= 1"));

  options = TestSimServerConfig();
  options.set_fault_stall_ms(-1);
  EXPECT_EQ(SimServer::Create(options).status().code(), absl::StatusCode::kInvalidArgument);

  options = TestSimServerConfig();
  options.set_tls_cert_file("/no/such.crt");
  auto half = SimServer::Create(options);
  EXPECT_EQ(half.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(half.status().message()), HasSubstr("give both"));

  options.set_tls_key_file("/no/such.key");
  auto missing = SimServer::Create(options);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()), StartsWith("tls_cert_file: cannot load"));
}

TEST(SimServerTlsTest, PlainHttpGetsNoHttpAnswer) {
  const auto cert = surge::testing::MakeSelfSignedCert(::testing::TempDir(), "sim-tls-test");
  ASSERT_FALSE(cert.cert_path.empty());
  SimServerConfig options = Fast();
  options.set_tls_cert_file(cert.cert_path);
  options.set_tls_key_file(cert.key_path);
  auto server = StartWith(options);
  ASSERT_NE(server, nullptr);
  const auto t0 = RealClock().Now();
  RawConnection conn(server->port());
  conn.Write("GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string raw = conn.ReadAll();
  EXPECT_THAT(raw, ::testing::Not(StartsWith("HTTP/1.1")));
  EXPECT_LT(RealClock().Now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(server->requests_served(), 0u);
}

// Every option a run can give its built-in server is one Create takes.
TEST(SimServerConfigTest, CreateTakesEveryRunOption) {
  SimServerConfig config = TestSimServerConfig();
  config.set_ttft_ms(7);
  config.set_itl_ms(3);
  config.set_fault_429(0.1);
  config.set_fault_500(0.01);
  config.set_fault_503(0.2);
  config.set_fault_reset(0.03);
  config.set_fault_malformed(0.04);
  config.set_fault_stall(0.05);
  config.set_fault_split(0.06);
  config.set_fault_error_event(0.07);
  config.set_fault_after_tokens(4);
  config.set_fault_stall_ms(250);
  config.set_fault_seed(99);
  EXPECT_TRUE(config.tls_cert_file().empty());
  EXPECT_TRUE(SimServer::Create(config).ok());
}

}  // namespace
}  // namespace surge::simserver

namespace surge::simserver {
namespace {

// The prefix cache through the server: the second equal prompt reports its
// whole blocks as cached (streamed usage and whole answer alike), and the
// prefill time of uncached tokens delays the first token.
TEST(SimServerPrefixCacheTest, CachedTokensInUsageAndPrefillDelay) {
  SimServerConfig options = Fast();
  options.set_cache_blocks(100);
  options.set_block_tokens(4);
  options.set_prefill_ms_per_token(10);
  auto server = StartWith(options);
  ASSERT_NE(server, nullptr);
  // 10 words: 10 tokens by the server's rule, 2 whole blocks of 4.
  const std::string prompt = "a b c d e f g h i j";
  const std::string whole = R"({"prompt":")" + prompt + R"(","max_tokens":1})";
  const auto t0 = RealClock().Now();
  const Response first = Exchange(server->port(), Post("/v1/completions", whole));
  EXPECT_GE(RealClock().Now() - t0, std::chrono::milliseconds(100));  // 10 tokens x 10 ms
  ASSERT_EQ(first.status, 200);
  const Json a = Json::parse(first.body);
  EXPECT_EQ(a["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const std::string streamed = R"({"prompt":")" + prompt +
                               R"(","max_tokens":1,"stream":true,"stream_options":{"include_usage":true}})";
  const Response second = Exchange(server->port(), Post("/v1/completions", streamed));
  ASSERT_EQ(second.status, 200);
  const std::vector<std::string> events = SseData(second.body);
  ASSERT_GE(events.size(), 2u);
  const Json usage = Json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
}

TEST(SimServerPrefixCacheTest, NoCacheNoDetails) {
  auto server = StartWith(Fast());
  ASSERT_NE(server, nullptr);
  const Response r =
      Exchange(server->port(), Post("/v1/completions", R"({"prompt":"a b c","max_tokens":1})"));
  ASSERT_EQ(r.status, 200);
  EXPECT_FALSE(Json::parse(r.body)["usage"].contains("prompt_tokens_details"));
}

}  // namespace
}  // namespace surge::simserver
