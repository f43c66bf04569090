// Live metrics through the real binary: `surge run` on the
// built-in server with --metrics-port on a free loopback port is scraped
// during the run; counters never decrease, the run's target rate shows, and
// the final exposition (written beside the summary) agrees with the
// summary's counts. A port in use is refused, naming the flag, before
// anything is created.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/run_folder_check.h"
#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A loopback socket listening on a port the kernel chose (kept open while
// `listening`, else closed so the port is free for surge).
struct LoopbackPort {
  int fd = -1;
  uint16_t port = 0;
  explicit LoopbackPort(bool listening) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    if (listening) {
      listen(fd, 4);
    } else {
      close(fd);
      fd = -1;
    }
  }
  ~LoopbackPort() {
    if (fd >= 0) close(fd);
  }
};

// GET /metrics on 127.0.0.1:`port`; the body of a 200 answer, else "".
std::string Scrape(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  char buf[8192];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
    answer.append(buf, static_cast<size_t>(n));
  close(fd);
  if (answer.rfind("HTTP/1.1 200 ", 0) != 0) return "";
  const size_t body = answer.find("\r\n\r\n");
  return body == std::string::npos ? "" : answer.substr(body + 4);
}

// Every sample line "name{labels} value" of an exposition, by its series.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

double SumOf(const std::map<std::string, double>& samples, const std::string& name) {
  double sum = 0;
  for (const auto& [series, value] : samples) {
    if (series.rfind(name + "{", 0) == 0) sum += value;
  }
  return sum;
}

// The counters a scrape must never show decreasing.
const std::vector<std::string>& Counters() {
  static const auto* names = new std::vector<std::string>{
      "surge_requests_sent_total",
      "surge_requests_completed_total",
      "surge_requests_ended_total{status=\"ok\"}",
      "surge_requests_ended_total{status=\"failed\"}",
      "surge_send_lateness_seconds_count",
      "surge_ttft_seconds_count",
      "surge_e2el_seconds_count",
      "surge_send_lateness_seconds_bucket{le=\"0.01\"}",
  };
  return *names;
}

TEST(MetricsE2eTest, ScrapedDuringTheRunAndAgreeingWithTheSummary) {
  const fs::path dir = FreshDir("surge_metrics_e2e");
  const LoopbackPort free_port(/*listening=*/false);
  ASSERT_GT(free_port.port, 0);
  const std::string port = std::to_string(free_port.port);
  // 40 requests at 5 RPS: an 8 s plan; 20% answered 503 (failed, kind
  // http_5xx).
  SurgeProcess run({"run",
                    "--num-prompts",
                    "40",
                    "--request-rate",
                    "5",
                    "--workers",
                    "1",
                    "--random-input-len",
                    "16",
                    "--random-output-len",
                    "8",
                    "--sim-ttft-ms",
                    "20",
                    "--sim-itl-ms",
                    "5",
                    "--sim-fault-503",
                    "0.2",
                    "--metrics-port",
                    port,
                    "--output-dir",
                    (dir / "out").string()},
                   dir / "run.log");
  ASSERT_GT(run.pid(), 0);
  ASSERT_TRUE(
      WaitForText(dir / "run.log", "live metrics on http://127.0.0.1:" + port + "/metrics", 30000))
      << run.Log();
  // Scrape every 0.5 s while the process runs (bounded: 120 s).
  std::vector<std::map<std::string, double>> scrapes;
  int code = -1;
  for (int i = 0; i < 240 && (code = run.WaitExit(0)) == -1; ++i) {
    const std::string text = Scrape(free_port.port);
    if (!text.empty()) {
      auto samples = Samples(text);
      if (samples["surge_run_active"] == 1) scrapes.push_back(std::move(samples));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (code == -1) code = run.WaitExit(60000);
  const std::string output = run.Log();
  ASSERT_EQ(code, 0) << output;
  ASSERT_GE(scrapes.size(), 2u) << output;
  // Counters never decrease from one scrape to the next.
  for (size_t i = 1; i < scrapes.size(); ++i) {
    for (const std::string& name : Counters()) {
      EXPECT_GE(scrapes[i][name], scrapes[i - 1][name]) << name << " at scrape " << i;
    }
    EXPECT_GE(SumOf(scrapes[i], "surge_requests_failed_total"),
              SumOf(scrapes[i - 1], "surge_requests_failed_total"));
  }
  // During the run: something was sent, and the plan's rate shows (5 RPS,
  // β = 0) while sends are still ahead.
  bool saw_target = false;
  double achieved_max = 0;
  for (const auto& s : scrapes) {
    saw_target |= s.at("surge_target_rate_rps") == 5;
    achieved_max = std::max(achieved_max, s.at("surge_achieved_rate_rps"));
  }
  EXPECT_TRUE(saw_target);
  // The workers' own send windows (heartbeats) reach the coordinator: about
  // 5 RPS; generous bounds on a loaded machine.
  EXPECT_GT(achieved_max, 1) << "no heartbeat send rate seen";
  EXPECT_LT(achieved_max, 50);
  EXPECT_GT(scrapes.back().at("surge_requests_sent_total"), 0);
  EXPECT_EQ(scrapes.back().at("surge_requests_planned"), 40);

  const fs::path folder = ResultsFolder(output);
  ASSERT_FALSE(folder.empty()) << output;
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  const nlohmann::json& req = report.summary["requests"];
  const std::string final_text = ReadText(folder / "synthetic_metrics.prom");
  ASSERT_FALSE(final_text.empty());
  auto last = Samples(final_text);
  EXPECT_EQ(last["surge_run_active"], 0);
  EXPECT_EQ(last["surge_requests_in_flight"], 0);
  EXPECT_EQ(last["surge_requests_sent_total"], req["sent"].get<double>());
  EXPECT_EQ(last["surge_requests_completed_total"], req["succeeded"].get<double>());
  EXPECT_EQ(SumOf(last, "surge_requests_failed_total"), req["failed"].get<double>());
  EXPECT_EQ(last["surge_requests_ended_total{status=\"ok\"}"], req["succeeded"].get<double>());
  EXPECT_EQ(last["surge_requests_ended_total{status=\"failed\"}"], req["failed"].get<double>());
  EXPECT_EQ(last["surge_requests_ended_total{status=\"not_sent\"}"], req["not_sent"].get<double>());
  EXPECT_EQ(SumOf(last, "surge_requests_ended_total"), 40);
  // The 503s: one kind, counted as the summary's reason http_503.
  const double http_5xx = last["surge_requests_failed_total{kind=\"http_5xx\"}"];
  EXPECT_EQ(http_5xx, report.summary["reasons"].value("http_503", 0.0));
  EXPECT_GT(http_5xx, 0) << final_text;  // 40 requests at 20%: P(none) ≈ 1e-4
  EXPECT_EQ(last["surge_send_lateness_seconds_count"],
            report.summary["lateness_s"]["count"].get<double>());
  EXPECT_EQ(last["surge_ttft_seconds_count"], report.summary["ttft_s"]["count"].get<double>());
  EXPECT_EQ(last["surge_e2el_seconds_count"], report.summary["e2el_s"]["count"].get<double>());
  // The live scrapes never ran ahead of the final counts.
  for (const std::string& name : Counters()) {
    EXPECT_LE(scrapes.back()[name], last[name]) << name;
  }
  // The details file names each failure's kind.
  EXPECT_THAT(ReadText(folder / "synthetic_details.jsonl"),
              HasSubstr("\"failure_kind\":\"http_5xx\""));
}

TEST(MetricsE2eTest, APortInUseIsRefusedNamingTheFlagBeforeAnythingIsCreated) {
  const fs::path dir = AbsentDir("surge_metrics_in_use");
  const LoopbackPort taken(/*listening=*/true);
  ASSERT_GT(taken.port, 0);
  const Result r =
      RunSurge("run --num-prompts 2 --request-rate 1 --workers 1 --metrics-port " +
                   std::to_string(taken.port) + " --output-dir " + (dir / "out").string(),
               60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--metrics-port " + std::to_string(taken.port)));
  EXPECT_THAT(r.output, HasSubstr("Address already in use"));
  EXPECT_FALSE(fs::exists(dir / "out")) << r.output;
}

}  // namespace
}  // namespace surge::testing
