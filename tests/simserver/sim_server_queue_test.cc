// The sim server's queueing model and GET /metrics end to end, over real
// loopback sockets on 127.0.0.1: a small max_num_seqs, a bounded number of
// concurrent streams, the waiting queue seen in /metrics while the first
// batch runs, and the token counters equal to what was sent and answered.
// Real time: the tests assert order and generous bounds only.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "simserver/sim_server.h"
#include "tests/simserver/test_sim_server_config.h"

namespace surge::simserver {
namespace {

using ::surge::testing::TestSimServerConfig;
using Json = nlohmann::json;
using SteadyTime = std::chrono::steady_clock::time_point;

// One blocking loopback exchange (Connection: close): sends `request`,
// reads until the server closes, noting when the first token and the
// end of the stream came. 10 s receive timeout.
struct Exchange {
  std::string raw;
  SteadyTime first_token{};
  SteadyTime done{};
};

Exchange Talk(uint16_t port, const std::string& request) {
  Exchange out;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return out;
  }
  for (size_t off = 0; off < request.size();) {
    const ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.raw.append(buf, static_cast<size_t>(n));
    const SteadyTime now = std::chrono::steady_clock::now();
    if (out.first_token == SteadyTime{} && out.raw.find(" tok") != std::string::npos) {
      out.first_token = now;
    }
    if (out.done == SteadyTime{} && out.raw.find("[DONE]") != std::string::npos) out.done = now;
  }
  ::close(fd);
  return out;
}

std::string Post(const std::string& path, const Json& body) {
  const std::string text = body.dump();
  return absl::StrCat("POST ", path,
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: ",
                      text.size(), "\r\n\r\n", text);
}

// The body of GET /metrics.
std::string Metrics(uint16_t port) {
  const Exchange e =
      Talk(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const size_t body = e.raw.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : e.raw.substr(body + 4);
}

// The value of the sample whose name and labels start with `series` (e.g.
// "vllm:num_requests_waiting{"); -1 when absent.
double Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, series)) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) return v;
  }
  return -1;
}

// The usage object of a streamed answer (its include_usage chunk), or null.
Json StreamUsage(const std::string& raw) {
  for (absl::string_view line : absl::StrSplit(raw, '\n')) {
    if (!absl::StartsWith(line, "data: {")) continue;
    Json chunk = Json::parse(line.substr(6), nullptr, false);
    if (chunk.is_object() && chunk.contains("usage") && !chunk["usage"].is_null()) {
      return chunk["usage"];
    }
  }
  return Json();
}

Json StreamRequest(int i, int max_tokens) {
  return Json{{"prompt", absl::StrCat("request number ", i, " asks for some tokens")},
              {"max_tokens", max_tokens},
              {"stream", true},
              {"stream_options", {{"include_usage", true}}}};
}

// Two slots, 40 ms steps, 20 tokens per request: four concurrent streams
// run as two batches of about 800 ms each.
TEST(SimServerQueueTest, WaitingQueueAndTokenCountersInMetrics) {
  surge::v1::SimServerConfig config = TestSimServerConfig();
  config.set_max_num_seqs(2);
  config.set_decode_ms_base(40);
  auto server = SimServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  const uint16_t port = (*server)->port();
  constexpr int kRequests = 4;
  constexpr int kTokens = 20;

  // Before any request: all zero.
  const std::string idle = Metrics(port);
  EXPECT_EQ(Sample(idle, "vllm:num_requests_running{"), 0);
  EXPECT_EQ(Sample(idle, "vllm:generation_tokens_total{"), 0);

  std::vector<Exchange> exchanges(kRequests);
  std::atomic<int> finished{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      exchanges[i] = Talk(port, Post("/v1/completions", StreamRequest(i, kTokens)));
      finished.fetch_add(1);
    });
  }
  // Poll /metrics every 5 ms while the streams run (bounded: 5 s).
  struct Gauges {
    SteadyTime asked;  // the server's snapshot is taken after this
    double running = -1, waiting = -1;
  };
  std::vector<Gauges> samples;
  for (int poll = 0; poll < 1000 && finished.load() < kRequests; ++poll) {
    Gauges g{.asked = std::chrono::steady_clock::now()};
    const std::string text = Metrics(port);
    g.running = Sample(text, "vllm:num_requests_running{");
    g.waiting = Sample(text, "vllm:num_requests_waiting{");
    samples.push_back(g);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (std::thread& t : clients) t.join();
  // Never more than two in the batch; at some point two run and two wait
  // (the first step admits only the request that found the engine idle,
  // so for its 40 ms one runs and three wait).
  bool two_and_two = false;
  for (const Gauges& g : samples) {
    EXPECT_LE(g.running, 2);
    EXPECT_LE(g.running + g.waiting, kRequests);
    two_and_two |= g.running == 2 && g.waiting == 2;
  }
  EXPECT_TRUE(two_and_two);

  // Every stream complete, with its usage.
  uint64_t prompt_tokens = 0, completion_tokens = 0;
  for (const Exchange& e : exchanges) {
    ASSERT_THAT(e.raw, ::testing::StartsWith("HTTP/1.1 200"));
    ASSERT_NE(e.done, SteadyTime{});
    const Json usage = StreamUsage(e.raw);
    ASSERT_TRUE(usage.is_object()) << e.raw;
    prompt_tokens += usage["prompt_tokens"].get<uint64_t>();
    completion_tokens += usage["completion_tokens"].get<uint64_t>();
  }
  EXPECT_EQ(completion_tokens, uint64_t{kRequests * kTokens});
  EXPECT_GT(prompt_tokens, 0u);

  // Order: the third request to get a first token got it only after a slot
  // was freed, i.e. about 20 steps (800 ms) after the first one's; 15 steps
  // is the generous bound.
  std::vector<SteadyTime> firsts;
  for (const Exchange& e : exchanges) firsts.push_back(e.first_token);
  std::sort(firsts.begin(), firsts.end());
  EXPECT_GE(firsts[2] - firsts[0], std::chrono::milliseconds(15 * 40));
  // And the queue was still there well into the first batch: some sample
  // asked for at least 15 steps after the first token saw waiting > 0 (the
  // model keeps two waiting until the first request's 20th token).
  bool waiting_late = false;
  for (const Gauges& g : samples) {
    waiting_late |= g.waiting > 0 && g.asked >= firsts[0] + std::chrono::milliseconds(15 * 40);
  }
  EXPECT_TRUE(waiting_late);

  // The counters equal what was sent and answered; the queue is empty.
  const std::string after = Metrics(port);
  EXPECT_EQ(Sample(after, "vllm:num_requests_running{"), 0);
  EXPECT_EQ(Sample(after, "vllm:num_requests_waiting{"), 0);
  EXPECT_EQ(Sample(after, "vllm:prompt_tokens_total{"), static_cast<double>(prompt_tokens));
  EXPECT_EQ(Sample(after, "vllm:generation_tokens_total{"), static_cast<double>(completion_tokens));
  EXPECT_EQ(Sample(after, "vllm:time_to_first_token_seconds_count{"), kRequests);
  // The first request's TTFT is one 40 ms step on the model's clock; the
  // two queued ones waited a whole batch (> 0.5 s).
  EXPECT_GE(Sample(after,
                   "vllm:time_to_first_token_seconds_bucket{model_name=\"surge-sim\","
                   "le=\"0.04\"}"),
            1);
  EXPECT_EQ(Sample(after,
                   "vllm:time_to_first_token_seconds_bucket{model_name=\"surge-sim\","
                   "le=\"0.5\"}"),
            2);
  EXPECT_EQ(Sample(after,
                   "vllm:time_to_first_token_seconds_bucket{model_name=\"surge-sim\","
                   "le=\"+Inf\"}"),
            kRequests);
  EXPECT_EQ(Sample(after, "vllm:kv_cache_usage_perc{"), 0);
  (*server)->Stop();
}

// A non-streamed answer with the model on: the whole body with its usage,
// due with the last token.
TEST(SimServerQueueTest, NonStreamedAnswerWithTheModel) {
  surge::v1::SimServerConfig config = TestSimServerConfig();
  config.set_max_num_seqs(1);
  config.set_decode_ms_base(5);
  auto server = SimServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  const auto t0 = std::chrono::steady_clock::now();
  const Exchange e =
      Talk((*server)->port(), Post("/v1/completions", Json{{"prompt", "hi"}, {"max_tokens", 6}}));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(30));
  ASSERT_THAT(e.raw, ::testing::StartsWith("HTTP/1.1 200"));
  const Json body = Json::parse(e.raw.substr(e.raw.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["usage"]["completion_tokens"], 6);
  EXPECT_EQ(body["choices"][0]["text"], " tok tok tok tok tok tok");
  const std::string text = Metrics((*server)->port());
  EXPECT_EQ(Sample(text, "vllm:generation_tokens_total{"), 6);
  EXPECT_EQ(Sample(text, "vllm:prompt_tokens_total{"), body["usage"]["prompt_tokens"]);
  (*server)->Stop();
}

// Without the model (max_num_seqs 0) /metrics counts too: tokens as they
// fall due, TTFT = ttft_ms, nothing waits.
TEST(SimServerQueueTest, MetricsWithoutTheModel) {
  surge::v1::SimServerConfig config = TestSimServerConfig();
  auto server = SimServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  const Exchange e = Talk((*server)->port(), Post("/v1/completions", StreamRequest(0, 5)));
  const Json usage = StreamUsage(e.raw);
  ASSERT_TRUE(usage.is_object()) << e.raw;
  const std::string text = Metrics((*server)->port());
  EXPECT_THAT(text, ::testing::HasSubstr("# TYPE vllm:num_requests_waiting gauge\n"));
  EXPECT_EQ(Sample(text, "vllm:num_requests_running{"), 0);
  EXPECT_EQ(Sample(text, "vllm:num_requests_waiting{"), 0);
  EXPECT_EQ(Sample(text, "vllm:generation_tokens_total{"), 5);
  EXPECT_EQ(Sample(text, "vllm:prompt_tokens_total{"), usage["prompt_tokens"]);
  // TTFT 20 ms: in the le="0.02" bucket, not in le="0.01".
  EXPECT_EQ(Sample(text,
                   "vllm:time_to_first_token_seconds_bucket{model_name=\"surge-sim\","
                   "le=\"0.01\"}"),
            0);
  EXPECT_EQ(Sample(text,
                   "vllm:time_to_first_token_seconds_bucket{model_name=\"surge-sim\","
                   "le=\"0.02\"}"),
            1);
  EXPECT_DOUBLE_EQ(Sample(text, "vllm:time_to_first_token_seconds_sum{"), 0.02);
  (*server)->Stop();
}

// Stop while one stream runs and two wait: every connection is closed, and
// the server goes away cleanly (no answer completes).
TEST(SimServerQueueTest, StopWithRequestsRunningAndWaiting) {
  surge::v1::SimServerConfig config = TestSimServerConfig();
  config.set_max_num_seqs(1);
  config.set_decode_ms_base(10);
  auto server = SimServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  const uint16_t port = (*server)->port();
  std::vector<Exchange> exchanges(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back(
        [&, i] { exchanges[i] = Talk(port, Post("/v1/completions", StreamRequest(i, 100000))); });
  }
  double waiting = -1;
  for (int poll = 0; poll < 400 && waiting != 2; ++poll) {
    waiting = Sample(Metrics(port), "vllm:num_requests_waiting{");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(waiting, 2);
  server->reset();
  for (std::thread& t : clients) t.join();
  for (const Exchange& e : exchanges) EXPECT_EQ(e.done, SteadyTime{});
}

// With the prefix cache on, the step that admits a request prefills only
// the tokens the cache did not hold, and kv_cache_usage_perc is the cache's
// share of blocks in use. One token per answer, so its time is its TTFT.
TEST(SimServerQueueTest, PrefixCacheShortensThePrefillStep) {
  surge::v1::SimServerConfig config = TestSimServerConfig();
  config.set_max_num_seqs(1);
  config.set_decode_ms_base(1);
  config.set_prefill_ms_per_token(1);
  config.set_cache_blocks(100);
  config.set_block_tokens(16);
  auto server = SimServer::Create(config);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  std::string prompt;
  for (int i = 0; i < 80; ++i) absl::StrAppend(&prompt, " w", i);
  const Json request = {{"prompt", prompt}, {"max_tokens", 1}};
  std::vector<std::chrono::nanoseconds> took;
  std::vector<Json> usages;
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const Exchange e = Talk((*server)->port(), Post("/v1/completions", request));
    took.push_back(std::chrono::steady_clock::now() - t0);
    ASSERT_THAT(e.raw, ::testing::StartsWith("HTTP/1.1 200"));
    usages.push_back(Json::parse(e.raw.substr(e.raw.find("\r\n\r\n") + 4))["usage"]);
  }
  const uint64_t prompt_tokens = usages[0]["prompt_tokens"].get<uint64_t>();
  ASSERT_GE(prompt_tokens, 80u);
  const uint64_t blocks = prompt_tokens / 16;
  EXPECT_EQ(usages[0]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(usages[1]["prompt_tokens_details"]["cached_tokens"], blocks * 16);
  // First: a step of 1 + 1 + prompt_tokens ms; second: at most 15 tokens
  // to prefill (generous bounds on real time).
  EXPECT_GE(took[0], std::chrono::milliseconds(prompt_tokens));
  EXPECT_LT(took[1], took[0] - std::chrono::milliseconds(40));
  const std::string text = Metrics((*server)->port());
  EXPECT_DOUBLE_EQ(Sample(text, "vllm:kv_cache_usage_perc{"), blocks / 100.0);
  EXPECT_EQ(Sample(text, "vllm:prompt_tokens_total{"), 2.0 * prompt_tokens);
  (*server)->Stop();
}

TEST(SimServerQueueTest, CreateRejectsAStepWithoutTime) {
  surge::v1::SimServerConfig config = TestSimServerConfig();
  config.set_max_num_seqs(4);
  config.set_decode_ms_base(0);
  auto server = SimServer::Create(config);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(),
              ::testing::HasSubstr("decode_ms_base + decode_ms_per_seq"));
  config.set_decode_ms_per_seq(0.5);
  EXPECT_TRUE(SimServer::Create(config).ok());
  config.set_decode_ms_per_seq(-1);
  EXPECT_FALSE(SimServer::Create(config).ok());
}

}  // namespace
}  // namespace surge::simserver
