// The harness of the BeastRequestSender tests that talk to the sim server
// or the canned server on 127.0.0.1 (bounded waits only).
#ifndef SURGE_TESTS_WORKER_HTTP_SENDER_TEST_UTIL_H_
#define SURGE_TESTS_WORKER_HTTP_SENDER_TEST_UTIL_H_

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "simserver/sim_server.h"
#include "tests/simserver/test_sim_server_config.h"
#include "surge/v1/config.pb.h"
#include "worker/http/beast_request_sender.h"

namespace surge::testing {

inline constexpr int64_t kMs = 1'000'000;
// Scheduling slack on a loaded 2-core CI box.
inline constexpr int64_t kSlackNs = 60 * kMs;

inline std::unique_ptr<simserver::SimServer> StartSimServer(
    const surge::v1::SimServerConfig& options) {
  auto server = simserver::SimServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  (*server)->Start();
  return *std::move(server);
}

// The sim server on 127.0.0.1:0 with the given timing.
inline std::unique_ptr<simserver::SimServer> StartSim(double ttft_ms, double itl_ms) {
  surge::v1::SimServerConfig options = TestSimServerConfig();
  options.set_ttft_ms(ttft_ms);
  options.set_itl_ms(itl_ms);
  return StartSimServer(options);
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

// A streaming (or not) target on 127.0.0.1:port, model "surge-sim", 30 s timeout.
inline surge::v1::TargetConfig LocalTarget(uint16_t port, bool https = false,
                                           const std::string& endpoint = "/v1/chat/completions",
                                           bool stream = true) {
  surge::v1::TargetConfig target;
  target.set_base_url((https ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port));
  target.set_endpoint(endpoint);
  target.set_model("surge-sim");
  target.set_stream(stream);
  target.set_request_timeout_s(30);
  return target;
}

// A plain http target (LocalTarget without TLS).
inline surge::v1::TargetConfig PlainTarget(uint16_t port, const std::string& endpoint,
                                           bool stream) {
  return LocalTarget(port, /*https=*/false, endpoint, stream);
}

// Request `index` (prompt seed index * 7919).
inline surge::v1::Assignment Request(uint64_t index, uint32_t max_tokens,
                                     uint32_t input_tokens = 16, uint32_t attempt = 1) {
  surge::v1::Assignment a;
  a.set_index(index);
  a.set_attempt(attempt);
  a.set_input_tokens(input_tokens);
  a.set_max_tokens(max_tokens);
  a.set_prompt_seed(index * 7919);
  return a;
}

// The sender tests' request: attempt 2 (so a record shows it is the
// assignment's, not an HTTP retry's), 32 input tokens by default.
inline surge::v1::Assignment MakeAssignment(uint64_t index, uint32_t max_tokens,
                                            uint32_t input_tokens = 32) {
  return Request(index, max_tokens, input_tokens, /*attempt=*/2);
}

inline std::unique_ptr<worker::BeastRequestSender> NewSender(Clock& clock,
                                                             const surge::v1::TargetConfig& target,
                                                             int io_threads = 1) {
  auto sender = worker::BeastRequestSender::Create(clock, target, io_threads);
  EXPECT_TRUE(sender.ok()) << sender.status();
  return sender.ok() ? *std::move(sender) : nullptr;
}

inline std::unique_ptr<worker::BeastRequestSender> NewSender(
    const surge::v1::TargetConfig& target) {
  return NewSender(RealClock(), target);
}

// Sends `a` and waits (at most 20 s) for its record.
inline surge::v1::RequestRecord SendOne(worker::RequestSender& sender,
                                        const surge::v1::Assignment& a) {
  auto done = std::make_shared<std::promise<surge::v1::RequestRecord>>();
  auto future = done->get_future();
  sender.Send(a, [done](surge::v1::RequestRecord r) { done->set_value(std::move(r)); });
  if (future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "no callback within 20 s";
    return surge::v1::RequestRecord();
  }
  return future.get();
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_WORKER_HTTP_SENDER_TEST_UTIL_H_
