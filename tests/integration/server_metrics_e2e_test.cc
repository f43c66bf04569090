// Server telemetry through the real binary: `surge run --server-metrics`
// against its built-in server offered about twice its capacity scrapes the
// server's /metrics every 0.5 s on the run's time axis, and the queue seen
// there grows; a source without /metrics (404) or with nothing listening is
// one warning and counted failures, and the run still ends with exit 0.
// `surge report` rebuilds the summary's block from the file; an interrupted
// run keeps every line written and its block.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::vector<nlohmann::json> ReadLines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// How often `needle` occurs in `text`.
size_t Occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A loopback port nothing listens on (bound, read, closed).
uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// The built-in server's queueing model with a capacity of about 27 RPS at
// these lengths (docs/DESIGN.md "Queueing model of the simulated server").
constexpr char kQueueingServer[] =
    "--sim-max-num-seqs 8 --sim-decode-ms-base 10 --sim-decode-ms-per-seq 0.5 "
    "--sim-prefill-ms-per-token 0.01 --random-input-len 200 --random-output-len 20";

TEST(ServerMetricsEndToEndTest, AnOverloadedServersQueueGrowsOnTheRunsTimeAxis) {
  const fs::path out = AbsentDir("surge_server_metrics_overload");
  // 480 requests at 60 RPS: an 8 s plan at about twice the capacity.
  const Result run = RunSurge(std::string("run --num-prompts 480 --request-rate 60 --workers 1 ") +
                              kQueueingServer +
                              " --server-metrics --server-metrics-interval-s 0.5 --seed 3 "
                              "--output-dir " +
                              out.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const fs::path folder = ResultsFolder(run.output);
  const std::vector<nlohmann::json> lines = ReadLines(folder / "synthetic_server_metrics.jsonl");
  ASSERT_GE(lines.size(), 10u) << run.output;

  // One sample per interval from before t0 to the run's end.
  const double first_s = lines.front()["t_s"], last_s = lines.back()["t_s"];
  EXPECT_LT(first_s, 0.0);  // started before t0
  const double expected = (last_s - first_s) / 0.5 + 1;
  EXPECT_NEAR(static_cast<double>(lines.size()), expected, 2.0);
  double max_waiting_early = 0, max_waiting_late = 0, max_running = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json& l = lines[i];
    ASSERT_EQ(l["ok"], true) << l.dump();
    if (i > 0) {
      const double step = l["t_s"].get<double>() - lines[i - 1]["t_s"].get<double>();
      EXPECT_GT(step, 0.0) << i;
      EXPECT_LT(step, 1.0) << i;  // at most a late scrape's overrun more
    }
    const double t_s = l["t_s"], waiting = l["waiting"], running = l["running"];
    max_running = std::max(max_running, running);
    if (t_s < 1.0) max_waiting_early = std::max(max_waiting_early, waiting);
    if (t_s >= 4.0 && t_s <= 8.5) max_waiting_late = std::max(max_waiting_late, waiting);
    EXPECT_TRUE(l.contains("raw")) << l.dump();
  }
  EXPECT_LE(max_running, 8.0);
  // About 33 RPS more than the server serves, for 8 s: the queue grows to
  // ~260 by the plan's end; a generous fraction of it.
  EXPECT_GT(max_waiting_late, 50.0);
  EXPECT_GT(max_waiting_late, max_waiting_early + 40);

  const nlohmann::json summary = ReadJson(folder / "synthetic.json");
  ASSERT_TRUE(summary.contains("server_metrics")) << summary.dump(2);
  const nlohmann::json& block = summary["server_metrics"];
  EXPECT_EQ(block["samples"], lines.size());
  EXPECT_EQ(block["failed"], 0);
  EXPECT_EQ(block["interval_s"], 0.5);
  EXPECT_THAT(block["url"].get<std::string>(),
              ::testing::MatchesRegex("http://127.0.0.1:[0-9]+/metrics"));
  EXPECT_GE(block["peak_waiting"].get<double>(), max_waiting_late);
  EXPECT_EQ(block["peak_running"].get<double>(), max_running);
  EXPECT_GT(block["mean_generation_tokens_per_s"].get<double>(), 0.0);
  EXPECT_THAT(run.output, HasSubstr("server metrics: " + std::to_string(lines.size()) +
                                    " samples (0 failed), peak running"));
  // The actual page draws the server's requests.
  std::ifstream page_in(folder / "synthetic_rps_distribution_plot_with_actual_rps.html");
  const std::string page((std::istreambuf_iterator<char>(page_in)), {});
  EXPECT_THAT(page, HasSubstr("Server: running requests"));
  EXPECT_THAT(page, HasSubstr("Server: waiting requests"));

  // `surge report` rebuilds the block from the file.
  fs::remove(folder / "synthetic.json");
  const Result report = RunSurge("report " + folder.string());
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const nlohmann::json rebuilt = ReadJson(folder / "synthetic.json");
  ASSERT_TRUE(rebuilt.contains("server_metrics")) << rebuilt.dump(2);
  EXPECT_EQ(rebuilt["server_metrics"]["samples"], lines.size());
  EXPECT_EQ(rebuilt["server_metrics"]["peak_waiting"], block["peak_waiting"]);
  EXPECT_THAT(report.output, HasSubstr("server metrics: " + std::to_string(lines.size())));
}

// Every scrape of `url` fails: one warning, failures counted, exit 0.
void ExpectFailedScrapes(const Result& run, const std::string& url, const std::string& why) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(Occurrences(run.output, "WARNING server metrics:"), 1u) << run.output;
  EXPECT_THAT(run.output, HasSubstr("WARNING server metrics: " + url + " " + why +
                                    "; scraping goes on, failures are counted in the summary"));
  const fs::path folder = ResultsFolder(run.output);
  const nlohmann::json summary = ReadJson(folder / "synthetic.json");
  ASSERT_TRUE(summary.contains("server_metrics")) << summary.dump(2);
  const nlohmann::json& block = summary["server_metrics"];
  EXPECT_EQ(block["url"], url);
  EXPECT_GE(block["samples"].get<int>(), 4);
  EXPECT_EQ(block["failed"], block["samples"]);
  EXPECT_FALSE(block.contains("peak_waiting"));
  EXPECT_EQ(summary["requests"]["succeeded"], 40) << summary.dump(2);  // the run went on
  for (const nlohmann::json& l : ReadLines(folder / "synthetic_server_metrics.jsonl")) {
    EXPECT_EQ(l["ok"], false);
  }
}

TEST(ServerMetricsEndToEndTest, NoMetricsAtTheUrlIsOneWarningAndCountedFailures) {
  const fs::path dir = FreshDir("surge_server_metrics_404");
  SimServerProcess server =
      StartSimServerProcess({"--ttft-ms", "5", "--itl-ms", "1"}, dir / "server.log");
  ASSERT_TRUE(SimServerUp(server));
  const std::string base = "http://127.0.0.1:" + server.port;
  const std::string url = base + "/nope";
  // 40 requests at 20 RPS: 2 s, scraped every 0.25 s.
  const Result run = RunSurge(
      "run --num-prompts 40 --request-rate 20 --workers 1 "
      "--random-input-len 16 --random-output-len 4 --base-url " +
      base + " --model m --server-metrics " + url +
      " --server-metrics-interval-s 0.25 --output-dir " + (dir / "out").string());
  StopProcess(server.pid);
  ExpectFailedScrapes(run, url, "answered 404");
}

TEST(ServerMetricsEndToEndTest, NothingListeningIsOneWarningAndCountedFailures) {
  const fs::path out = AbsentDir("surge_server_metrics_refused");
  const std::string url = "http://127.0.0.1:" + std::to_string(FreePort()) + "/metrics";
  const Result run = RunSurge(
      "run --num-prompts 40 --request-rate 20 --workers 1 --random-input-len 16 "
      "--random-output-len 4 --sim-ttft-ms 5 --sim-itl-ms 1 --server-metrics " +
      url + " --server-metrics-interval-s 0.25 --output-dir " + out.string());
  ExpectFailedScrapes(run, url, "failed (connect: Connection refused)");
}

TEST(ServerMetricsEndToEndTest, AnInterruptedRunKeepsEveryLineAndTheBlock) {
  const fs::path dir = FreshDir("surge_server_metrics_interrupt");
  // A 20 s plan, interrupted once the file has lines after t0.
  SurgeProcess run({"run",
                    "--num-prompts",
                    "200",
                    "--request-rate",
                    "10",
                    "--workers",
                    "1",
                    "--random-input-len",
                    "16",
                    "--random-output-len",
                    "4",
                    "--sim-ttft-ms",
                    "5",
                    "--sim-itl-ms",
                    "1",
                    "--server-metrics",
                    "--server-metrics-interval-s",
                    "0.2",
                    "--output-dir",
                    (dir / "out").string()},
                   dir / "run.log");
  ASSERT_GT(run.pid(), 0);
  ASSERT_TRUE(WaitForText(dir / "run.log", "results: ", 20000)) << run.Log();
  const fs::path folder = ResultsFolder(run.Log());
  const fs::path file = folder / "synthetic_server_metrics.jsonl";
  ASSERT_TRUE(WaitForText(file, "\"t_s\":1.", 20000)) << run.Log();  // lines past 1 s
  ASSERT_TRUE(run.Signal(SIGINT));
  ASSERT_EQ(run.WaitExit(30000), 130) << run.Log();
  const std::vector<nlohmann::json> lines = ReadLines(file);  // every line parses
  ASSERT_GE(lines.size(), 6u);
  EXPECT_LT(lines.back()["t_s"].get<double>(), 19.0);  // it stopped with the run
  const nlohmann::json summary = ReadJson(folder / "synthetic.json");
  ASSERT_TRUE(summary.contains("server_metrics")) << summary.dump(2);
  EXPECT_EQ(summary["server_metrics"]["samples"], lines.size());
  EXPECT_EQ(summary["server_metrics"]["failed"], 0);
}

TEST(ServerMetricsEndToEndTest, ABadUrlIsRefusedNamingTheFlag) {
  const fs::path out = AbsentDir("surge_server_metrics_bad");
  const Result run =
      RunSurge("run --num-prompts 4 --server-metrics ftp://x/metrics --output-dir " + out.string());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("server_metrics = \"ftp://x/metrics\""));
  EXPECT_THAT(run.output, HasSubstr("(flag --server-metrics)"));
  EXPECT_FALSE(fs::exists(out));
  const Result interval =
      RunSurge("run --num-prompts 4 --server-metrics --server-metrics-interval-s 0 --output-dir " +
               out.string());
  EXPECT_EQ(interval.exit_code, 2) << interval.output;
  EXPECT_THAT(interval.output, HasSubstr("(flag --server-metrics-interval-s)"));
}

}  // namespace
}  // namespace surge::testing
