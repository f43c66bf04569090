// The simulated server's queueing model at work: a BatchModel (pure, in
// batch_model.h) driven on real time by a timer, handing each generated
// token to the session that waits for it. Used by sim_server.cc when
// max_num_seqs > 0.
#ifndef SURGE_SIMSERVER_BATCH_ENGINE_H_
#define SURGE_SIMSERVER_BATCH_ENGINE_H_

// clang-format off
// Asio's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>
// clang-format on

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "simserver/batch_model.h"
#include "simserver/server_metrics.h"

namespace surge::simserver {

// One request in the queueing model: the engine writes the times of its
// tokens; its session waits for them on `wake`, which the engine cancels
// (on the session's strand) after each new token.
struct EngineTicket {
  EngineTicket(boost::asio::any_io_executor session_executor, uint64_t id, uint64_t prompt_tokens)
      : executor(session_executor), wake(session_executor), id(id), prompt_tokens(prompt_tokens) {}
  const boost::asio::any_io_executor executor;
  boost::asio::steady_timer wake;  // used on the session's strand only
  const uint64_t id;
  const uint64_t prompt_tokens;
  Clock::TimePoint arrival;                   // guarded by BatchEngine::mu_
  std::vector<Clock::TimePoint> token_times;  // guarded by BatchEngine::mu_
};

// Drives a BatchModel on `clock`'s time: a timer on its own strand ends
// each step when it is due, and each token goes to its request's ticket.
// The model's time is exact (a late timer makes the tokens late, not the
// model). Counts the tokens and first tokens into `metrics`. Thread-safe.
class BatchEngine {
 public:
  BatchEngine(boost::asio::io_context& ioc, Clock& clock, const BatchModelOptions& options,
              ServerMetrics& metrics);

  // Puts a request into the waiting queue now: `prefill_tokens` of its
  // `prompt_tokens` to prefill, `output_tokens` to generate; `id` unique.
  std::shared_ptr<EngineTicket> Submit(boost::asio::any_io_executor session, uint64_t id,
                                       uint64_t prompt_tokens, uint64_t prefill_tokens,
                                       int64_t output_tokens);

  // When token k of `ticket` was generated; waits (on the session's strand)
  // until it is.
  boost::asio::awaitable<Clock::TimePoint> TokenTime(EngineTicket& ticket, int64_t k);

  // The request's client is gone (or its answer is complete): it leaves the
  // queue or frees its slot at the current step's end.
  void Abort(const EngineTicket& ticket);

  // Sequences in the batch and requests waiting, now.
  std::pair<uint64_t, uint64_t> RunningAndWaiting();

 private:
  using Woken = std::vector<std::shared_ptr<EngineTicket>>;
  // On strand_: the timer waits for the current step's end.
  void Arm();
  // On strand_: every step due by now ends; the timer waits for the next.
  void OnStepEnd();
  // Ends the steps due by `now`: their tokens go to the tickets (collected
  // in `woken`, once each) and into the metrics; a finished request's
  // ticket leaves the table.
  void AdvanceLocked(Clock::TimePoint now, Woken& woken);
  // Tells each ticket's session (on its strand) to look again.
  static void Wake(const Woken& woken);

  Clock& clock_;
  ServerMetrics& metrics_;
  std::mutex mu_;
  BatchModel model_;                                                     // guarded by mu_
  std::unordered_map<uint64_t, std::shared_ptr<EngineTicket>> tickets_;  // guarded by mu_
  std::vector<BatchModel::Token> tokens_;                                // guarded by mu_
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;  // used on strand_ only
};

}  // namespace surge::simserver

#endif  // SURGE_SIMSERVER_BATCH_ENGINE_H_
