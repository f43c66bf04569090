// Benchmark (not a test): the cost of `surge plan` for a large N, phase by
// phase — plan math, plan CSV, expected page — plus the actual page for
// on-time sends, with peak memory and file sizes. Results go to
// docs/PERFORMANCE.md. Usage: plan_pages_bench [N=10000000] [out_dir=/tmp/surge_bench]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/peak_rss.h"
#include "common/clock.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"
#include "coordinator/report/plot_pages.h"
#include "coordinator/results/run_files.h"

using surge::bench::PeakRssMb;

namespace {

namespace fs = std::filesystem;
using surge::coordinator::ResolvedTraffic;

double MbOf(const fs::path& p) { return static_cast<double>(fs::file_size(p)) / 1e6; }

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
  const fs::path out = argc > 2 ? fs::path(argv[2]) : fs::path("/tmp/surge_bench");
  fs::create_directories(out);
  surge::Clock& clock = surge::RealClock();
  auto seconds_since = [&clock](surge::Clock::TimePoint t) {
    return std::chrono::duration<double>(clock.Now() - t).count();
  };

  ResolvedTraffic traffic;  // `surge plan --request-rate 1000 --burstiness 0.5`
  traffic.request_rate_rps = traffic.target_rate_rps = 1000;
  traffic.burstiness = 0.5;

  auto t = clock.Now();
  auto plan = surge::coordinator::BuildArrivalSchedule(traffic, n, 0);
  if (!plan.ok()) return 1;
  const double plan_s = seconds_since(t);

  t = clock.Now();
  const fs::path csv = out / "bench_plan.csv";
  if (!surge::coordinator::WritePlanCsv(*plan, csv).ok()) return 1;
  const double csv_s = seconds_since(t);

  t = clock.Now();
  const fs::path expected = out / surge::coordinator::ExpectedPlotFileName("bench");
  if (!surge::coordinator::WriteExpectedPlotPage(*plan, expected).ok()) return 1;
  const double expected_s = seconds_since(t);
  const double rss_after_plan = PeakRssMb();

  // Actual sends: on time plus a deterministic 0–200 µs lateness.
  std::vector<surge::coordinator::ActualSend> sends(n);
  for (uint64_t i = 0; i < n; ++i) {
    sends[i] = {i, plan->offset_s[i] + static_cast<double>((i * 2654435761ULL) % 200) * 1e-6};
  }
  t = clock.Now();
  const fs::path actual = out / surge::coordinator::ActualPlotFileName("bench");
  if (!surge::coordinator::WriteActualPlotPage(*plan, sends, actual).ok()) return 1;
  const double actual_s = seconds_since(t);

  const double plotly_mb = static_cast<double>(surge::coordinator::EmbeddedPlotlyJs().size()) / 1e6;
  std::printf("requests                       %llu (request_rate 1000, burstiness 0.5)\n",
              static_cast<unsigned long long>(n));
  std::printf("plan math (s)                  %.3f\n", plan_s);
  std::printf("plan CSV (s)                   %.3f  (%.1f MB)\n", csv_s, MbOf(csv));
  std::printf("expected page (s)              %.3f  (%.2f MB besides plotly.js %.2f MB)\n",
              expected_s, MbOf(expected) - plotly_mb, plotly_mb);
  std::printf("surge plan total (s)           %.3f\n", plan_s + csv_s + expected_s);
  std::printf("peak RSS after plan (MB)       %.0f\n", rss_after_plan);
  std::printf("actual page (s)                %.3f  (%.2f MB besides plotly.js)\n", actual_s,
              MbOf(actual) - plotly_mb);
  std::printf("peak RSS overall (MB)          %.0f\n", PeakRssMb());
  return 0;
}
