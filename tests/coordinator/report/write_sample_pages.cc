// Writes sample RPS pages for the browser tests (tests/browser/) and for
// timing runs:
//   write_sample_pages <dir> [num_requests]
// writes into <dir>
//   synthetic_rps_distribution_plot.html                  ramped (linear 10→200 RPS), bursty
//   synthetic_rps_distribution_plot_with_actual_rps.html  (β = 0.5) plan, seed 42, default 3,000
//                                                         requests, with simulated sends and a
//                                                         simulated worker loss at 40% of the plan
//   instant_rps_distribution_plot_with_actual_rps.html    instant mode, 500 requests
//   classes_rps_distribution_plot.html                    two traffic classes (chat 20 RPS,
//   classes_rps_distribution_plot_with_actual_rps.html    β = 0.5, 10 s; batch a 1→10 RPS ramp
//                                                         over 10 s), with simulated sends
// (and the .json beside each) and prints how long each page took and its
// size without plotly.js. Exit status 1 on any error.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/plan/traffic_classes.h"
#include "coordinator/report/plot_pages.h"
#include "coordinator/report/run_context.h"
#include "coordinator/report/worker_losses.h"
#include "nlohmann/json.hpp"

namespace {

using surge::coordinator::ActualSend;
using surge::coordinator::ArrivalSchedule;
using surge::coordinator::ResolvedTraffic;

// Process CPU time, seconds: steadier than wall time on a shared machine.
double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Stopwatch {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = CpuNow();
  void Reset() { *this = Stopwatch(); }
  double Wall() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  }
  double Cpu() const { return CpuNow() - cpu; }
};

// A deterministic stand-in for a real sender: never earlier than planned,
// at least 50 µs after the previous send, a small jitter, and every 97th
// request bunched onto the previous one (a zero difference).
std::vector<ActualSend> SimulateSends(const ArrivalSchedule& plan) {
  std::vector<ActualSend> sends;
  sends.reserve(plan.size());
  uint64_t state = 0x9e3779b97f4a7c15ull;
  double previous = 0;
  for (uint64_t i = 0; i < plan.size(); ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const double jitter = static_cast<double>(state % 1000) * 1e-6;  // 0–1 ms
    double t = std::max(plan.offset_s[i], previous + 50e-6) + jitter;
    if (i > 0 && i % 97 == 0) t = previous;
    sends.push_back({i, t});
    previous = t;
  }
  return sends;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "write_sample_pages: %s\n", s.ToString().c_str());
  return 1;
}

void Report(const char* what, const std::filesystem::path& path, const Stopwatch& watch) {
  const auto bytes =
      std::filesystem::file_size(path) - surge::coordinator::EmbeddedPlotlyJs().size();
  std::printf("%-8s %s: %.3f s wall, %.3f s CPU, %ju bytes besides plotly.js\n", what, path.c_str(),
              watch.Wall(), watch.Cpu(), static_cast<uintmax_t>(bytes));
}

// The docs' two traffic classes (docs/examples/traffic_classes.yaml), 10 s
// of each, with both pages.
absl::Status WriteClassesPages(const std::filesystem::path& dir, surge::v1::RunConfig config) {
  surge::v1::TrafficClass* chat = config.add_classes();
  chat->set_name("chat");
  chat->set_request_rate(20);
  chat->set_num_prompts(200);
  chat->set_model("base");
  chat->mutable_traffic_cfg()->set_burstiness(0.5);
  surge::v1::TrafficClass* batch = config.add_classes();
  batch->set_name("batch");
  batch->set_model("lora-a");
  batch->set_num_prompts(1000);  // a cap: the ramp plans about 55
  batch->mutable_traffic_cfg()->set_burstiness(1);
  surge::v1::TrafficStage* ramp = batch->mutable_traffic_cfg()->add_stages();
  ramp->set_duration_s(10);
  ramp->set_ramp_up_strategy(surge::v1::RAMP_UP_STRATEGY_LINEAR);
  ramp->set_ramp_up_start_rps(1);
  ramp->set_ramp_up_end_rps(10);
  absl::StatusOr<ArrivalSchedule> plan = surge::coordinator::BuildClassesPlan(config);
  if (!plan.ok()) return plan.status();
  const surge::coordinator::PageContext context = surge::coordinator::RunContextItems(
      config, *plan, "classes", "2026-01-01 00:00:00 +0000", "sample");
  if (absl::Status s = surge::coordinator::WriteExpectedPlotPage(
          *plan, dir / surge::coordinator::ExpectedPlotFileName("classes"), context);
      !s.ok()) {
    return s;
  }
  return surge::coordinator::WriteActualPlotPage(
      *plan, SimulateSends(*plan), dir / surge::coordinator::ActualPlotFileName("classes"),
      context);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <dir> [num_requests]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const uint64_t n = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 3000;
  if (n == 0) {
    std::fprintf(stderr, "num_requests must be >= 1\n");
    return 2;
  }

  ResolvedTraffic traffic;
  traffic.request_rate_rps = 100;
  traffic.burstiness = 0.5;
  traffic.strategy = surge::coordinator::RampStrategy::kLinear;
  traffic.ramp_active = true;
  traffic.ramp_start_rps = 10;
  traffic.ramp_end_rps = 200;
  traffic.target_rate_rps = 200;

  Stopwatch watch;
  absl::StatusOr<ArrivalSchedule> plan = surge::coordinator::BuildArrivalSchedule(traffic, n, 42);
  if (!plan.ok()) return Fail(plan.status());
  std::printf("plan     %ju requests: %.3f s wall, %.3f s CPU\n", static_cast<uintmax_t>(n),
              watch.Wall(), watch.Cpu());

  // The run context both pages show (item 8), as `surge run` would give it.
  surge::v1::RunConfig config;
  config.mutable_target()->set_model("sample-model");
  config.mutable_target()->set_base_url("http://127.0.0.1:8000");
  config.mutable_target()->set_endpoint("/v1/chat/completions");
  config.mutable_dataset()->set_dataset_name("synthetic");
  config.mutable_dataset()->set_random_input_len(1024);
  config.mutable_dataset()->set_random_output_len(128);
  config.set_seed(42);
  config.set_workers(2);
  const surge::coordinator::PageContext context = surge::coordinator::RunContextItems(
      config, *plan, "synthetic", "2026-01-01 00:00:00 +0000", "sample");

  const std::filesystem::path expected =
      dir / surge::coordinator::ExpectedPlotFileName("synthetic");
  watch.Reset();
  if (absl::Status s = surge::coordinator::WriteExpectedPlotPage(*plan, expected, context);
      !s.ok()) {
    return Fail(s);
  }
  Report("expected", expected, watch);

  const std::vector<ActualSend> sends = SimulateSends(*plan);
  const std::filesystem::path actual = dir / surge::coordinator::ActualPlotFileName("synthetic");
  watch.Reset();
  // A worker lost at 40% of the plan, as run.worker_losses would hold it:
  // the page shows it as a red line on the time axes.
  surge::coordinator::WorkerLossFacts losses;
  *losses.Add() = surge::coordinator::WorkerLossFactOf(
      1, static_cast<int64_t>(plan->offset_s[plan->size() * 2 / 5] * 1e9), "silent for 1500 ms", 52,
      25, 3010);
  const std::vector<surge::coordinator::RunEvent> events =
      surge::coordinator::WorkerLossEvents(losses);
  // TTFT/E2EL from actual vs from planned send, as the summary gives them:
  // fixed numbers the browser test reads back.
  const std::vector<surge::coordinator::LatencyView> latency = {
      {"TTFT", 400, {0.0202, 0.0211, 0.0219}, {0.0204, 0.0312, 0.0587}},
      {"E2EL", 400, {0.2743, 0.2748, 0.2758}, {0.2745, 0.2849, 0.3126}}};
  if (absl::Status s = surge::coordinator::WriteActualPlotPage(*plan, sends, actual, context, "",
                                                               events, latency);
      !s.ok()) {
    return Fail(s);
  }
  Report("actual", actual, watch);

  ResolvedTraffic instant_traffic;
  instant_traffic.instant = true;
  absl::StatusOr<ArrivalSchedule> instant_plan =
      surge::coordinator::BuildArrivalSchedule(instant_traffic, 500, 42);
  if (!instant_plan.ok()) return Fail(instant_plan.status());
  // All due at 0; the sender gets them out 20–220 µs apart.
  std::vector<ActualSend> instant_sends;
  uint64_t state = 0x2545f4914f6cdd1dull;
  double t = 0;
  for (uint64_t i = 0; i < instant_plan->size(); ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    t += 20e-6 + static_cast<double>(state % 200) * 1e-6;
    instant_sends.push_back({i, t});
  }
  const std::filesystem::path instant = dir / surge::coordinator::ActualPlotFileName("instant");
  watch.Reset();
  if (absl::Status s = surge::coordinator::WriteActualPlotPage(
          *instant_plan, instant_sends, instant,
          surge::coordinator::RunContextItems(config, *instant_plan, "instant",
                                              "2026-01-01 00:00:00 +0000", "sample"));
      !s.ok()) {
    return Fail(s);
  }
  Report("instant", instant, watch);
  if (absl::Status s = WriteClassesPages(dir, config); !s.ok()) return Fail(s);
  return 0;
}
