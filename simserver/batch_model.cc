#include "simserver/batch_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace surge::simserver {

BatchModelOptions BatchModelOptionsOf(const surge::v1::SimServerConfig& config) {
  BatchModelOptions options;
  options.max_num_seqs = std::max<uint32_t>(config.max_num_seqs(), 1);
  options.decode_ms_base = config.decode_ms_base();
  options.decode_ms_per_seq = config.decode_ms_per_seq();
  options.prefill_ms_per_token = config.prefill_ms_per_token();
  return options;
}

std::chrono::nanoseconds StepDuration(const BatchModelOptions& options, uint64_t running,
                                      uint64_t prefill_tokens) {
  const double ms = options.decode_ms_base +
                    options.decode_ms_per_seq * static_cast<double>(running) +
                    options.prefill_ms_per_token * static_cast<double>(prefill_tokens);
  return std::max(std::chrono::nanoseconds(std::llround(ms * 1e6)), std::chrono::nanoseconds(1));
}

double CapacityRps(const BatchModelOptions& options, uint64_t prompt_tokens,
                   uint64_t output_tokens) {
  const double s = options.max_num_seqs;
  const double o = static_cast<double>(output_tokens);
  const double p = static_cast<double>(prompt_tokens);
  const double ms_per_o_steps = o * (options.decode_ms_base + options.decode_ms_per_seq * s) +
                                s * p * options.prefill_ms_per_token;
  return 1000.0 * s / ms_per_o_steps;
}

void BatchModel::AdvanceTo(TimePoint now, std::vector<Token>* out) {
  while (step_end_.has_value() && *step_end_ <= now) EndStep(out);
}

void BatchModel::Arrive(uint64_t id, TimePoint now, uint64_t prefill_tokens,
                        int64_t output_tokens) {
  waiting_.push_back(Sequence{.id = id,
                              .prefill_tokens = prefill_tokens,
                              .output_tokens = std::max<int64_t>(output_tokens, 1)});
  if (!step_end_.has_value()) StartStep(now);
}

void BatchModel::Abort(uint64_t id) {
  const auto same = [id](const Sequence& s) { return s.id == id; };
  if (auto it = std::find_if(waiting_.begin(), waiting_.end(), same); it != waiting_.end()) {
    waiting_.erase(it);
    return;
  }
  if (auto it = std::find_if(running_.begin(), running_.end(), same); it != running_.end()) {
    it->aborted = true;
  }
}

void BatchModel::StartStep(TimePoint at) {
  uint64_t prefill_tokens = 0;
  while (!waiting_.empty() && running_.size() < options_.max_num_seqs) {
    prefill_tokens += waiting_.front().prefill_tokens;
    running_.push_back(waiting_.front());
    waiting_.pop_front();
  }
  if (running_.empty()) {
    step_end_.reset();
    return;
  }
  step_end_ = at + StepDuration(options_, running_.size(), prefill_tokens);
}

void BatchModel::EndStep(std::vector<Token>* out) {
  const TimePoint end = *step_end_;
  std::vector<Sequence> still_running;
  still_running.reserve(running_.size());
  for (Sequence& s : running_) {
    if (s.aborted) continue;
    const bool last = s.generated + 1 == s.output_tokens;
    out->push_back(Token{.id = s.id, .index = s.generated, .time = end, .last = last});
    ++s.generated;
    if (!last) still_running.push_back(s);
  }
  running_ = std::move(still_running);
  StartStep(end);
}

}  // namespace surge::simserver
