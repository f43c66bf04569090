// Google Benchmark micro-benchmarks of surge's hot paths:
// plan math, anomaly classification, SSE parsing (bytes/s), request body and
// prompt build, record encode/decode, the streaming statistics. Not a test:
// numbers go to docs/PERFORMANCE.md.
//
// Usage: build/bench/hot_paths_bench [--benchmark_filter=REGEX]
//        [--benchmark_min_time=0.2] (Google Benchmark's own flags)
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "common/prompt_builder.h"
#include "common/stats.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"
#include "worker/http/openai_request.h"
#include "worker/http/sse_parser.h"
#include "surge/v1/record.pb.h"
#include "surge/v1/wire.pb.h"

namespace {

using surge::coordinator::ResolvedTraffic;

// The plan for state.range(0) requests at 1,000 RPS, β = 0.5 (Gamma draws,
// cumulative sums, classification): items/s = planned requests per second.
void BM_BuildPlan(benchmark::State& state) {
  ResolvedTraffic traffic;
  traffic.request_rate_rps = traffic.target_rate_rps = 1000;
  traffic.burstiness = 0.5;
  const auto n = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    auto plan = surge::coordinator::BuildArrivalSchedule(traffic, n, 42);
    benchmark::DoNotOptimize(plan);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_BuildPlan)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_ClassifyInterval(benchmark::State& state) {
  double interval = 1e-4;
  for (auto _ : state) {
    benchmark::DoNotOptimize(surge::coordinator::ClassifyInterval(interval, 1000, 0.5));
    interval = interval < 0.1 ? interval * 1.01 : 1e-4;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClassifyInterval);

// One streamed chat answer of 256 tokens as vLLM sends it (one SSE event per
// token, a usage event, [DONE]), fed in 1,400-byte TCP-sized pieces and
// each event's JSON parsed: bytes/s = the worker's SSE throughput.
std::string StreamedAnswer(int tokens) {
  std::string s;
  for (int i = 0; i < tokens; ++i) {
    s += "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
         "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"},"
         "\"finish_reason\":null}]}\n\n";
  }
  s += "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],"
       "\"usage\":{\"prompt_tokens\":512,\"completion_tokens\":256,\"total_tokens\":768}}\n\n"
       "data: [DONE]\n\n";
  return s;
}

void BM_SseParseAndDecode(benchmark::State& state) {
  const std::string stream = StreamedAnswer(256);
  for (auto _ : state) {
    surge::worker::SseParser parser;
    size_t events = 0;
    for (size_t at = 0; at < stream.size(); at += 1400) {
      for (const std::string& data : parser.Feed(std::string_view(stream).substr(at, 1400))) {
        if (data == "[DONE]") continue;
        auto answer = surge::worker::ParseStreamEvent(surge::worker::ApiKind::kChat, data);
        benchmark::DoNotOptimize(answer);
        ++events;
      }
    }
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(stream.size()));
}
BENCHMARK(BM_SseParseAndDecode);

// Prompt of state.range(0) tokens from the corpus + the chat JSON body.
void BM_BuildRequest(benchmark::State& state) {
  uint64_t seed = 1;
  for (auto _ : state) {
    const std::string prompt = surge::BuildPrompt(static_cast<uint32_t>(state.range(0)), seed++);
    benchmark::DoNotOptimize(
        surge::worker::BuildRequestBody(surge::worker::ApiKind::kChat, "m", prompt, 128, true));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BuildRequest)->Arg(512)->Arg(8192);

surge::v1::RecordBatch MakeBatch() {
  surge::v1::RecordBatch batch;
  for (int i = 0; i < 64; ++i) {
    auto* r = batch.add_records();
    r->set_index(i);
    r->set_status(surge::v1::OK);
    r->set_planned_ns(i * 1'000'000);
    r->set_sent(true);
    r->set_sent_ns(i * 1'000'000 + 25'000);
    r->set_ttft_ns(40'000'000);
    r->set_e2el_ns(300'000'000);
    for (int k = 0; k < 127; ++k) r->add_itl_ns(2'000'000 + k);
    r->set_input_tokens(512);
    r->set_output_tokens(128);
    r->set_finish_reason("length");
  }
  return batch;
}

// A RecordBatch of 64 streamed-answer records (127 ITL gaps each):
// items/s = records encoded or decoded per second.
void BM_RecordBatchEncode(benchmark::State& state) {
  const surge::v1::RecordBatch batch = MakeBatch();
  std::string wire;
  for (auto _ : state) {
    batch.SerializeToString(&wire);
    benchmark::DoNotOptimize(wire);
  }
  state.SetItemsProcessed(state.iterations() * batch.records_size());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(wire.size()));
}
BENCHMARK(BM_RecordBatchEncode);

void BM_RecordBatchDecode(benchmark::State& state) {
  const std::string wire = MakeBatch().SerializeAsString();
  surge::v1::RecordBatch decoded;
  for (auto _ : state) {
    benchmark::DoNotOptimize(decoded.ParseFromString(wire));
  }
  state.SetItemsProcessed(state.iterations() * decoded.records_size());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(wire.size()));
}
BENCHMARK(BM_RecordBatchDecode);

// StreamingStats::Add while exact (a vector push) and once it is a histogram.
void BM_StreamingStatsAdd(benchmark::State& state) {
  surge::StreamingStats stats(state.range(0) == 0 ? 0 : surge::StreamingStats::kUnlimited);
  double v = 1e-3;
  for (auto _ : state) {
    stats.Add(v);
    v = v < 10 ? v * 1.0001 : 1e-3;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) == 0 ? "histogram" : "exact");
}
BENCHMARK(BM_StreamingStatsAdd)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
