// The scraper on simulated time: scrapes at exact absolute deadlines, a
// slow scrape delays only the next one, failures are samples (logged
// once) and rates skip them, and the file holds each attempt relative to t0.
#include "coordinator/telemetry/server_scraper.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/telemetry/server_metrics_file.h"
#include "nlohmann/json.hpp"
#include "tests/testing/simulated_clock.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

using std::chrono::milliseconds;
using testing::kSimulatedStart;
using testing::SimulatedClock;

constexpr int64_t kMs = 1'000'000;

// The attempts' times, ms after the simulated start.
std::vector<int64_t> TimesMs(const std::vector<ServerMetricsSample>& samples) {
  std::vector<int64_t> out;
  for (const ServerMetricsSample& s : samples)
    out.push_back((s.at_ns - ToNanos(kSimulatedStart)) / kMs);
  return out;
}

// Runs a scraper every 500 ms from the simulated start until `until`.
std::vector<ServerMetricsSample> Scrape(SimulatedClock& clock, milliseconds until,
                                        ExpositionFetch fetch) {
  std::vector<ServerMetricsSample> samples;
  ServerMetricsScraper scraper(clock, "http://127.0.0.1:9/metrics", milliseconds(500),
                               std::move(fetch),
                               [&samples](const ServerMetricsSample& s) { samples.push_back(s); });
  scraper.Start();
  clock.SleepUntil(kSimulatedStart + until);
  scraper.Stop();
  return samples;
}

TEST(ServerScraperTest, ScrapesAtAbsoluteDeadlines) {
  SimulatedClock clock;
  int calls = 0;
  const auto samples = Scrape(clock, milliseconds(2200), [&]() -> absl::StatusOr<std::string> {
    ++calls;
    clock.SleepUntil(clock.Now() + milliseconds(30));  // each GET takes 30 ms
    return "vllm:num_requests_running " + std::to_string(calls) + "\n";
  });
  EXPECT_EQ(TimesMs(samples), (std::vector<int64_t>{0, 500, 1000, 1500, 2000}));
  ASSERT_EQ(samples.size(), 5u);
  EXPECT_EQ(samples[3].running, 4.0);
  EXPECT_EQ(samples[3].scrape_ms, 30.0);
  EXPECT_TRUE(samples[4].ok);
}

TEST(ServerScraperTest, ASlowScrapeDelaysOnlyTheNextOne) {
  SimulatedClock clock;
  int calls = 0;
  const auto samples = Scrape(clock, milliseconds(3200), [&]() -> absl::StatusOr<std::string> {
    ++calls;
    // The 2nd GET (at 500 ms) overruns the 1000 ms deadline by 200 ms; the
    // 4th (at 1500 ms) overruns two deadlines and ends at 2800 ms.
    if (calls == 2) clock.SleepUntil(clock.Now() + milliseconds(700));
    if (calls == 4) clock.SleepUntil(clock.Now() + milliseconds(1300));
    return std::string("vllm:num_requests_waiting 1\n");
  });
  EXPECT_EQ(TimesMs(samples), (std::vector<int64_t>{0, 500, 1200, 1500, 2800, 3000}));
}

TEST(ServerScraperTest, FailuresAreSamplesLoggedOnceAndRatesSkipThem) {
  SimulatedClock clock;
  int calls = 0;
  ::testing::internal::CaptureStderr();
  const auto samples = Scrape(clock, milliseconds(2200), [&]() -> absl::StatusOr<std::string> {
    ++calls;
    if (calls == 2 || calls == 3) return absl::UnavailableError("answered 404");
    return "vllm:generation_tokens_total " + std::to_string(calls * 100) + "\n";
  });
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log,
            "[surge] WARNING server metrics: http://127.0.0.1:9/metrics answered 404; scraping "
            "goes on, failures are counted in the summary\n");
  ASSERT_EQ(samples.size(), 5u);
  EXPECT_TRUE(samples[0].ok);
  EXPECT_FALSE(samples[1].ok);
  EXPECT_EQ(samples[1].error, "answered 404");
  EXPECT_FALSE(samples[2].ok);
  // From 100 tokens at 0 s to 400 at 1.5 s.
  EXPECT_EQ(samples[3].generation_tokens_per_s, 200.0);
  EXPECT_EQ(samples[4].generation_tokens_per_s, 200.0);  // 100 tokens in 0.5 s
}

TEST(ServerScraperTest, TheFileHoldsEachAttemptRelativeToT0) {
  const auto path = testing::FreshDir("server_scraper_file") / "d_server_metrics.jsonl";
  auto file = ServerMetricsFile::Create(path);
  ASSERT_TRUE(file.ok()) << file.status();
  SimulatedClock clock;
  int calls = 0;
  ServerMetricsScraper scraper(
      clock, "u", milliseconds(500),
      [&]() -> absl::StatusOr<std::string> {
        if (++calls == 3) return absl::UnavailableError("did not answer within 500 ms");
        return std::string("vllm:num_requests_waiting 7\n");
      },
      [&file](const ServerMetricsSample& s) { (*file)->Add(s); });
  scraper.Start();
  // t0 is fixed at 1.25 s, after two attempts were held.
  clock.SleepUntil(kSimulatedStart + milliseconds(1250));
  (*file)->SetT0(ToNanos(kSimulatedStart + milliseconds(1250)));
  clock.SleepUntil(kSimulatedStart + milliseconds(2100));
  scraper.Stop();
  ASSERT_TRUE((*file)->Close().ok());

  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 5u);
  const std::vector<double> t_s = {-1.25, -0.75, -0.25, 0.25, 0.75};
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i]["t_s"], t_s[i]) << i;
  EXPECT_EQ(lines[0]["waiting"], 7.0);
  EXPECT_EQ(lines[2]["ok"], false);
  EXPECT_EQ(lines[2]["error"], "did not answer within 500 ms");

  auto read = ReadServerMetricsFile(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->samples.size(), 5u);
  EXPECT_EQ(read->samples[4].at_ns, 750 * kMs);
  EXPECT_EQ(read->bad_lines, 0u);
}

}  // namespace
}  // namespace surge::coordinator
