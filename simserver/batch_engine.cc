#include "simserver/batch_engine.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>

namespace surge::simserver {

namespace net = boost::asio;
using boost::system::error_code;

BatchEngine::BatchEngine(net::io_context& ioc, Clock& clock, const BatchModelOptions& options,
                         ServerMetrics& metrics)
    : clock_(clock),
      metrics_(metrics),
      model_(options),
      strand_(net::make_strand(ioc)),
      timer_(strand_) {}

std::shared_ptr<EngineTicket> BatchEngine::Submit(net::any_io_executor session, uint64_t id,
                                                  uint64_t prompt_tokens, uint64_t prefill_tokens,
                                                  int64_t output_tokens) {
  auto ticket = std::make_shared<EngineTicket>(std::move(session), id, prompt_tokens);
  Woken woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::TimePoint now = clock_.Now();
    AdvanceLocked(now, woken);
    const std::optional<Clock::TimePoint> before = model_.step_end();
    ticket->arrival = now;
    tickets_[id] = ticket;
    model_.Arrive(id, now, prefill_tokens, output_tokens);
    if (model_.step_end() != before) net::post(strand_, [this] { Arm(); });
  }
  Wake(woken);
  return ticket;
}

net::awaitable<Clock::TimePoint> BatchEngine::TokenTime(EngineTicket& ticket, int64_t k) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (static_cast<int64_t>(ticket.token_times.size()) > k) co_return ticket.token_times[k];
    }
    // The check and the start of this wait run in one go on the strand,
    // so a cancel posted after a new token cannot slip in between.
    ticket.wake.expires_at(Clock::TimePoint::max());
    error_code ec;
    co_await ticket.wake.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

void BatchEngine::Abort(const EngineTicket& ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  model_.Abort(ticket.id);
  tickets_.erase(ticket.id);
}

std::pair<uint64_t, uint64_t> BatchEngine::RunningAndWaiting() {
  Woken woken;
  std::pair<uint64_t, uint64_t> counts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    AdvanceLocked(clock_.Now(), woken);
    counts = {model_.running(), model_.waiting()};
  }
  Wake(woken);
  return counts;
}

void BatchEngine::Arm() {
  std::optional<Clock::TimePoint> end;
  {
    std::lock_guard<std::mutex> lock(mu_);
    end = model_.step_end();
  }
  if (!end.has_value()) return;
  timer_.expires_at(*end);
  timer_.async_wait([this](error_code ec) {
    if (!ec) OnStepEnd();
  });
}

void BatchEngine::OnStepEnd() {
  Woken woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    AdvanceLocked(clock_.Now(), woken);
  }
  Wake(woken);
  Arm();
}

void BatchEngine::AdvanceLocked(Clock::TimePoint now, Woken& woken) {
  tokens_.clear();
  model_.AdvanceTo(now, &tokens_);
  for (const BatchModel::Token& token : tokens_) {
    auto it = tickets_.find(token.id);
    if (it == tickets_.end()) continue;
    EngineTicket& ticket = *it->second;
    ticket.token_times.push_back(token.time);
    metrics_.Generated(1);
    if (token.index == 0) {
      metrics_.FirstToken(ticket.prompt_tokens,
                          std::chrono::duration<double>(token.time - ticket.arrival).count());
    }
    if (woken.empty() || woken.back() != it->second) woken.push_back(it->second);
    if (token.last) tickets_.erase(it);
  }
}

void BatchEngine::Wake(const Woken& woken) {
  for (const std::shared_ptr<EngineTicket>& ticket : woken) {
    net::post(ticket->executor, [ticket] { ticket->wake.cancel(); });
  }
}

}  // namespace surge::simserver
