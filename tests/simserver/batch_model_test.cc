// The built-in server's queueing model on simulated time, with exact
// timestamps: step lengths, the FIFO queue, slots, aborts, and the capacity
// formula checked by simulation below and above the rate it predicts.
#include "simserver/batch_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace surge::simserver {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using TimePoint = BatchModel::TimePoint;
using Token = BatchModel::Token;

const TimePoint kT0 = TimePoint() + std::chrono::seconds(100);

// 5 ms per step, 1 ms more per running sequence, 0.02 ms per prompt token.
BatchModelOptions TwoSlots() {
  return BatchModelOptions{
      .max_num_seqs = 2, .decode_ms_base = 5, .decode_ms_per_seq = 1, .prefill_ms_per_token = 0.02};
}

// (id, index) -> time offset from kT0, ms, of every token in `tokens`.
std::map<std::pair<uint64_t, int64_t>, double> OffsetsMs(const std::vector<Token>& tokens) {
  std::map<std::pair<uint64_t, int64_t>, double> out;
  for (const Token& t : tokens) {
    out[{t.id, t.index}] = std::chrono::duration<double, std::milli>(t.time - kT0).count();
  }
  return out;
}

TEST(SimServerBatchModelTest, StepDurationIsBasePlusPerSequencePlusPrefill) {
  const BatchModelOptions o = TwoSlots();
  EXPECT_EQ(StepDuration(o, 1, 0), milliseconds(6));
  EXPECT_EQ(StepDuration(o, 2, 100), milliseconds(9));
  EXPECT_EQ(StepDuration(o, 2, 150), milliseconds(10));
  // Never shorter than 1 ns, so the engine always moves on.
  const BatchModelOptions tiny{.max_num_seqs = 1, .decode_ms_base = 1e-9};
  EXPECT_EQ(StepDuration(tiny, 1, 0), nanoseconds(1));
}

TEST(SimServerBatchModelTest, OneRequestOnAnIdleEngine) {
  BatchModel model(TwoSlots());
  std::vector<Token> tokens;
  model.AdvanceTo(kT0, &tokens);
  model.Arrive(7, kT0, 100, 3);
  EXPECT_EQ(model.running(), 1u);
  EXPECT_EQ(model.waiting(), 0u);
  // Step 1: prefill of 100 tokens and one sequence: 5 + 1 + 2 = 8 ms.
  ASSERT_TRUE(model.step_end().has_value());
  EXPECT_EQ(*model.step_end(), kT0 + milliseconds(8));
  model.AdvanceTo(kT0 + milliseconds(8) - nanoseconds(1), &tokens);
  EXPECT_TRUE(tokens.empty());
  model.AdvanceTo(kT0 + milliseconds(100), &tokens);
  ASSERT_EQ(tokens.size(), 3u);
  // Then two decode steps of 5 + 1 = 6 ms.
  EXPECT_EQ(OffsetsMs(tokens), (std::map<std::pair<uint64_t, int64_t>, double>{
                                   {{7, 0}, 8}, {{7, 1}, 14}, {{7, 2}, 20}}));
  EXPECT_FALSE(tokens[0].last);
  EXPECT_FALSE(tokens[1].last);
  EXPECT_TRUE(tokens[2].last);
  EXPECT_FALSE(model.step_end().has_value());
  EXPECT_EQ(model.running(), 0u);
}

TEST(SimServerBatchModelTest, FifoQueueWaitsForAFreeSlot) {
  BatchModel model(TwoSlots());
  std::vector<Token> tokens;
  // A, B and C arrive together: A starts a step alone, B and C wait for it.
  for (uint64_t id : {1, 2, 3}) {
    model.AdvanceTo(kT0, &tokens);
    model.Arrive(id, kT0, 100, 2);
  }
  EXPECT_EQ(model.running(), 1u);
  EXPECT_EQ(model.waiting(), 2u);
  // At 8 ms: A's first token; the next step admits B (2 slots): 5+2+2 = 9.
  model.AdvanceTo(kT0 + milliseconds(8), &tokens);
  EXPECT_EQ(model.running(), 2u);
  EXPECT_EQ(model.waiting(), 1u);
  // At 17 ms A is done; C takes its slot: 9 ms again. At 26 ms B is done;
  // C decodes alone: 6 ms.
  model.AdvanceTo(kT0 + milliseconds(1000), &tokens);
  EXPECT_EQ(
      OffsetsMs(tokens),
      (std::map<std::pair<uint64_t, int64_t>, double>{
          {{1, 0}, 8}, {{1, 1}, 17}, {{2, 0}, 17}, {{2, 1}, 26}, {{3, 0}, 26}, {{3, 1}, 32}}));
  // Within a step, admission order.
  EXPECT_EQ(tokens[1].id, 1u);
  EXPECT_EQ(tokens[2].id, 2u);
  EXPECT_EQ(model.waiting(), 0u);
  EXPECT_EQ(model.running(), 0u);
}

TEST(SimServerBatchModelTest, ArrivalDuringAStepWaitsForItsEnd) {
  BatchModel model(TwoSlots());
  std::vector<Token> tokens;
  model.Arrive(1, kT0, 0, 1);  // one 6 ms step
  model.AdvanceTo(kT0 + milliseconds(2), &tokens);
  model.Arrive(2, kT0 + milliseconds(2), 0, 1);
  EXPECT_EQ(model.waiting(), 1u);  // a slot is free, but the step is under way
  model.AdvanceTo(kT0 + milliseconds(100), &tokens);
  EXPECT_EQ(OffsetsMs(tokens),
            (std::map<std::pair<uint64_t, int64_t>, double>{{{1, 0}, 6}, {{2, 0}, 12}}));
}

TEST(SimServerBatchModelTest, AbortedRequestsLeaveTheQueueAndFreeTheirSlot) {
  BatchModelOptions one = TwoSlots();
  one.max_num_seqs = 1;
  BatchModel model(one);
  std::vector<Token> tokens;
  model.Arrive(1, kT0, 0, 10);
  model.Arrive(2, kT0, 0, 1);
  model.Arrive(3, kT0, 0, 1);
  model.Abort(2);  // waiting: gone at once
  EXPECT_EQ(model.waiting(), 1u);
  model.AdvanceTo(kT0 + milliseconds(6), &tokens);  // request 1's first token
  model.Abort(1);   // running: its slot is free when the current step ends
  model.Abort(99);  // unknown: nothing
  EXPECT_EQ(model.running(), 1u);
  model.AdvanceTo(kT0 + milliseconds(100), &tokens);
  EXPECT_EQ(OffsetsMs(tokens),
            (std::map<std::pair<uint64_t, int64_t>, double>{{{1, 0}, 6}, {{3, 0}, 18}}));
}

// The formula by hand: S = 4, O = 10, P = 100, 5 ms + 1 ms/seq, 0.02 ms per
// prompt token: 1000 · 4 / (10 · (5 + 4) + 4 · 100 · 0.02) = 4000 / 98.
TEST(SimServerBatchModelTest, CapacityFormula) {
  const BatchModelOptions o{
      .max_num_seqs = 4, .decode_ms_base = 5, .decode_ms_per_seq = 1, .prefill_ms_per_token = 0.02};
  EXPECT_DOUBLE_EQ(CapacityRps(o, 100, 10), 4000.0 / 98.0);
  // One token per request: every step admits S requests.
  EXPECT_DOUBLE_EQ(CapacityRps(o, 100, 1), 4000.0 / (9 + 8));
  // Decode alone: S tokens per step of 5 + S ms.
  EXPECT_DOUBLE_EQ(CapacityRps(o, 0, 10), 4000.0 / 90.0);
}

// What a run of evenly spaced arrivals did to the queue.
struct RunResult {
  uint64_t max_waiting_first_half = 0;
  uint64_t max_waiting_second_half = 0;
  uint64_t waiting_at_last_arrival = 0;
  // Requests finished per second between the first and the last arrival's
  // second half (the steady state).
  double finished_rps_second_half = 0;
};

// `n` requests of `prompt` prompt tokens and `output` tokens, one every
// 1/rate_rps seconds (exact to the nanosecond), from kT0.
RunResult EvenArrivals(const BatchModelOptions& options, double rate_rps, int n, uint64_t prompt,
                       int64_t output) {
  BatchModel model(options);
  std::vector<Token> tokens;
  RunResult r;
  const auto at = [&](int i) {
    return kT0 + nanoseconds(static_cast<int64_t>(std::llround(i * 1e9 / rate_rps)));
  };
  for (int i = 0; i < n; ++i) {
    model.AdvanceTo(at(i), &tokens);
    model.Arrive(static_cast<uint64_t>(i), at(i), prompt, output);
    uint64_t& max = i < n / 2 ? r.max_waiting_first_half : r.max_waiting_second_half;
    max = std::max(max, model.waiting());
  }
  r.waiting_at_last_arrival = model.waiting();
  const TimePoint from = at(n / 2);
  const TimePoint to = at(n - 1);
  const auto finished = std::count_if(tokens.begin(), tokens.end(), [&](const Token& t) {
    return t.last && t.time > from && t.time <= to;
  });
  r.finished_rps_second_half =
      static_cast<double>(finished) / std::chrono::duration<double>(to - from).count();
  return r;
}

// Below the predicted capacity the queue stays short and every request is
// served (finished rate = arrival rate); above it the engine serves exactly
// the capacity and the queue grows by (rate - capacity) per second.
TEST(SimServerBatchModelTest, CapacityHoldsBySimulation) {
  const BatchModelOptions o{.max_num_seqs = 8,
                            .decode_ms_base = 10,
                            .decode_ms_per_seq = 0.5,
                            .prefill_ms_per_token = 0.01};
  const uint64_t prompt = 200;
  const int64_t output = 20;
  const int n = 6000;
  // 1000 · 8 / (20 · 14 + 8 · 200 · 0.01) = 8000 / 296 ≈ 27.03 RPS.
  const double capacity = CapacityRps(o, prompt, output);
  ASSERT_NEAR(capacity, 8000.0 / 296.0, 1e-9);

  for (double factor : {0.5, 0.9, 0.97}) {
    SCOPED_TRACE(factor);
    const RunResult below = EvenArrivals(o, factor * capacity, n, prompt, output);
    // Bounded: no longer at the end than early on, and short.
    EXPECT_LE(below.max_waiting_second_half, std::max<uint64_t>(below.max_waiting_first_half, 1));
    EXPECT_LE(below.max_waiting_second_half, o.max_num_seqs);
    EXPECT_NEAR(below.finished_rps_second_half, factor * capacity, 0.01 * capacity);
  }
  for (double factor : {1.03, 1.1, 1.5}) {
    SCOPED_TRACE(factor);
    const double rate = factor * capacity;
    const RunResult above = EvenArrivals(o, rate, n, prompt, output);
    // Served at the capacity, not at the offered rate.
    EXPECT_NEAR(above.finished_rps_second_half, capacity, 0.005 * capacity);
    // The queue grows by (rate - capacity) per second over the n/rate
    // seconds of arrivals, less the requests in the slots.
    const double growth = (rate - capacity) * (n / rate);
    EXPECT_NEAR(static_cast<double>(above.waiting_at_last_arrival), growth,
                0.02 * growth + o.max_num_seqs);
    EXPECT_GT(above.max_waiting_second_half, above.max_waiting_first_half);
  }
}

}  // namespace
}  // namespace surge::simserver
