// Helpers of the BeastRequestSender tests that talk to the sim server or
// the canned server on 127.0.0.1 (bounded waits only).
#ifndef SURGE_TESTS_WORKER_HTTP_SENDER_TEST_UTIL_H_
#define SURGE_TESTS_WORKER_HTTP_SENDER_TEST_UTIL_H_

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "simserver/sim_server.h"
#include "surge/v1/config.pb.h"
#include "worker/http/beast_request_sender.h"

namespace surge::testing {

inline std::unique_ptr<simserver::SimServer> StartSimServer(
    const surge::v1::SimServerConfig& options) {
  auto server = simserver::SimServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  (*server)->Start();
  return *std::move(server);
}

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

inline surge::v1::Assignment Request(uint64_t index, uint32_t max_tokens) {
  surge::v1::Assignment a;
  a.set_index(index);
  a.set_attempt(1);
  a.set_input_tokens(16);
  a.set_max_tokens(max_tokens);
  a.set_prompt_seed(index * 7919);
  return a;
}

inline std::unique_ptr<worker::BeastRequestSender> NewSender(
    const surge::v1::TargetConfig& target) {
  auto sender = worker::BeastRequestSender::Create(RealClock(), target, 1);
  EXPECT_TRUE(sender.ok()) << sender.status();
  return sender.ok() ? *std::move(sender) : nullptr;
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
