// End-to-end request semantics through the real binary: every
// sim-server fault kind ends as exactly one record with the right status and
// reason; an all-503 run still writes everything; an https target with a
// certificate the test makes itself; trace replay of the production trace.
// All traffic stays on 127.0.0.1; every run is bounded by `timeout`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tests/integration/run_folder_check.h"
#include "tests/integration/surge_process.h"
#include "tests/worker/http/canned_server.h"
#include "tests/worker/http/self_signed_cert.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;


std::vector<nlohmann::json> Details(const fs::path& folder, const std::string& dataset) {
  std::vector<nlohmann::json> out;
  std::ifstream in(folder / (dataset + "_details.jsonl"));
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(LlmEndToEndTest, EveryFaultKindEndsAsOneRecordWithItsReason) {
  const fs::path out = AbsentDir("surge_llm_faults");
  const Result r = RunSurge(
      "run --num-prompts 300 --request-rate 100 --workers 2 --random-input-len 32 "
      "--random-output-len 6 --sim-ttft-ms 2 --sim-itl-ms 1 --request-timeout-s 1 "
      "--sim-fault-429 0.08 --sim-fault-500 0.08 --sim-fault-503 0.08 --sim-fault-reset 0.08 "
      "--sim-fault-malformed 0.08 --sim-fault-stall 0.08 --sim-fault-stall-ms 3000 "
      "--sim-fault-split 0.08 --sim-fault-error-event 0.08 --sim-fault-seed 11 --output-dir " +
      out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path folder = ResultsFolder(r.output);
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  ASSERT_EQ(report.records, 300u);

  // Tally the records by status and reason; every failure has a known reason.
  const std::set<std::string> known = {"http_429",   "http_500",  "http_503", "closed_mid_stream",
                                       "bad_chunk", "stream_error", "timeout"};
  std::map<std::string, uint64_t> reasons;
  uint64_t ok = 0, failed = 0;
  for (const auto& d : Details(folder, "synthetic")) {
    if (d["status"] == "ok") {
      ++ok;
      EXPECT_EQ(d["error"], "");
      continue;
    }
    ASSERT_EQ(d["status"], "failed") << d.dump();
    ++failed;
    const std::string error = d["error"];
    const std::string reason = error.substr(0, error.find(':'));
    EXPECT_TRUE(known.count(reason)) << error;
    ++reasons[reason];
    if (reason.rfind("http_", 0) == 0) {
      EXPECT_EQ(d["http_status"].get<int>(), std::stoi(reason.substr(5)));
    }
  }
  // Each injected kind shows up (8 % of 300 requests each).
  for (const auto& kind : known) EXPECT_GT(reasons[kind], 0u) << kind;
  // Split chunks and untouched requests succeed: about 36 % of 300.
  EXPECT_GT(ok, 60u);
  // The summary counts are the records' counts.
  const nlohmann::json summary = ReadJson(folder / "synthetic.json");
  EXPECT_EQ(summary["requests"]["succeeded"].get<uint64_t>(), ok);
  EXPECT_EQ(summary["requests"]["failed"].get<uint64_t>(), failed);
  for (const auto& [reason, count] : reasons) {
    EXPECT_EQ(summary["reasons"][reason].get<uint64_t>(), count) << reason;
  }
  EXPECT_EQ(summary["common"]["Success Requests"].get<uint64_t>(), ok);
}

TEST(LlmEndToEndTest, AllServiceUnavailableStillWritesEverything) {
  const fs::path out = AbsentDir("surge_llm_all503");
  const Result r = RunSurge(
      "run --num-prompts 3 --request-rate 10 --workers 1 --random-input-len 16 "
      "--random-output-len 4 --sim-fault-503 1 --output-dir " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("All 3 requests failed"));
  const fs::path folder = ResultsFolder(r.output);
  for (const char* name : {"synthetic_plan.csv", "synthetic_details.jsonl", "synthetic.json",
                           "synthetic.csv", "synthetic_rps_distribution_plot.html",
                           "synthetic_rps_distribution_plot_with_actual_rps.html",
                           "run_config.json"}) {
    EXPECT_TRUE(fs::exists(folder / name)) << name;
  }
  const nlohmann::json summary = ReadJson(folder / "synthetic.json");
  EXPECT_EQ(summary["requests"]["succeeded"], 0);
  EXPECT_EQ(summary["requests"]["failed"], 3);
  EXPECT_EQ(summary["reasons"]["http_503"], 3);
  for (const auto& d : Details(folder, "synthetic")) {
    EXPECT_EQ(d["status"], "failed");
    EXPECT_EQ(d["http_status"], 503);
  }
}

// Outside text and unusual answers through the real processes (coordinator
// and a worker process talking protobuf over ZeroMQ), against a scripted
// server with no usage in its answers: the 3rd answer carries a raw 0xFF byte
// in a chunk, the 4th ends cleanly without [DONE] or finish_reason. The raw
// byte must not cost the coordinator the whole record batch (the run would
// stay "draining" until killed): every record arrives, the bad one
// is failed bad_chunk (error text valid UTF-8), the cut one
// incomplete_stream, and the summary says the token counts are estimates.
TEST(LlmEndToEndTest, ServerBytesNeverBreakTheRunAndCutStreamsFail) {
  std::atomic<int> posts{0};
  const std::string sse_header =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
  CannedServer server([&](const std::string& request) {
    if (request.rfind("GET ", 0) == 0) {
      return HttpAnswer(200, "OK", R"({"data":[{"id":"m"}]})");
    }
    const int n = posts++;
    if (n == 2) {
      return sse_header +
             "data: {\"choices\":[{\"delta\":{\"content\":\"A\xff"
             "B\"}}]}\n\n" +
             "data: [DONE]\n\n";
    }
    const std::string hello = "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\n\n";
    if (n == 3) return sse_header + hello;  // cut: no [DONE], no finish_reason
    return sse_header + hello + "data: [DONE]\n\n";
  });
  const fs::path out = AbsentDir("surge_llm_server_bytes");
  const Result r = RunSurge("run --base-url " + server.base_url() +
                                " --model m --num-prompts 5 --request-rate 20 --workers 1 "
                                "--random-input-len 16 --random-output-len 4 --output-dir " +
                                out.string(),
                            /*timeout_s=*/60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("DATA_LOSS")));
  EXPECT_THAT(r.output, HasSubstr("Output tokens estimated for 3 of 3 requests (no usage from the "
                                  "server; ~4 chars/token)"));
  const fs::path folder = ResultsFolder(r.output);
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  std::map<std::string, int> by_reason;
  for (const auto& d : Details(folder, "synthetic")) {
    const std::string error = d["error"];
    ++by_reason[d["status"].get<std::string>() + " " + error.substr(0, error.find(':'))];
    if (error.rfind("bad_chunk", 0) == 0) {
      EXPECT_THAT(error, HasSubstr("A\xEF\xBF\xBD"
                                   "B"));  // U+FFFD for the raw byte
    }
    if (error == "incomplete_stream") {
      EXPECT_GT(d["ttft_s"].get<double>(), 0);  // what arrived is kept
      EXPECT_EQ(d["output_tokens"], 2);         // ceil(5 / 4)
    }
    if (d["status"] == "ok") {
      EXPECT_EQ(d["output_tokens"], 2);
    }
  }
  EXPECT_EQ(by_reason, (std::map<std::string, int>{
                           {"ok ", 3}, {"failed bad_chunk", 1}, {"failed incomplete_stream", 1}}));
  const nlohmann::json summary = ReadJson(folder / "synthetic.json");
  EXPECT_EQ(summary["output_tokens_estimated"]["requests"], 3);
  EXPECT_EQ(posts.load(), 5);
}

TEST(LlmEndToEndTest, HttpsTargetWithTheTestsOwnCertificate) {
  const fs::path dir = FreshDir("surge_llm_tls");
  const CertFiles cert = MakeSelfSignedCert(dir.string(), "surge-test");
  ASSERT_FALSE(cert.cert_path.empty());
  const SimServerProcess server = StartSimServerProcess(
      {"--tls-cert", cert.cert_path, "--tls-key", cert.key_path, "--ttft-ms", "2", "--itl-ms", "1"},
      dir / "server.log");
  ASSERT_GT(server.pid, 0);
  if (server.port.empty()) StopProcess(server.pid);
  ASSERT_FALSE(server.port.empty()) << "TLS sim server did not start";
  const std::string& port = server.port;
  const std::string url = "https://127.0.0.1:" + port;
  // Without the CA the certificate is refused: the pre-flight check says so
  // at once, names TLS, and nothing is sent.
  const Result refused = RunSurge("run --num-prompts 2 --request-rate 10 --workers 1 --model m "
                                  "--random-input-len 8 --random-output-len 2 --base-url " + url +
                                  " --output-dir " + (dir / "refused").string());
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("tls: certificate verify failed"));
  EXPECT_THAT(refused.output, HasSubstr("pre-flight check of --base-url; nothing was sent"));
  EXPECT_FALSE(fs::exists(dir / "refused"));
  // With it, everything succeeds.
  const Result r = RunSurge("run --num-prompts 40 --request-rate 40 --workers 2 "
                            "--random-input-len 16 --random-output-len 4 --base-url " + url +
                            " --ca-cert " + cert.cert_path + " --output-dir " + (dir / "ok").string());
  StopProcess(server.pid);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const RunFolderReport report = CheckRunFolder(ResultsFolder(r.output), "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 40u);
}

// Replay of the first 500 production requests at 1/100 of their
// time sends each within 5 ms of its scaled timestamp (median).
TEST(LlmEndToEndTest, TraceReplayFollowsTheScaledTimestamps) {
  const fs::path out = AbsentDir("surge_llm_replay");
  const fs::path trace =
      fs::path(SURGE_SOURCE_DIR) / "data/traces/mooncake_conversation_trace.jsonl";
  const Result r = RunSurge("run --dataset-name mooncake --dataset-path " + trace.string() +
                            " --num-prompts 500 --trace-replay --trace-time-scale 0.01 "
                            "--workers 2 --sim-itl-ms 0.05 --output-dir " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path folder = ResultsFolder(r.output);
  // The plan's offsets are the trace's timestamps × 0.01 / 1000 s.
  std::ifstream in(trace);
  std::vector<double> expected_offsets;
  std::string line;
  while (expected_offsets.size() < 500 && std::getline(in, line)) {
    expected_offsets.push_back(nlohmann::json::parse(line)["timestamp"].get<double>() * 0.01 / 1000);
  }
  std::vector<double> lateness;
  for (const auto& d : Details(folder, "mooncake_conversation_trace")) {
    const size_t i = d["index"];
    ASSERT_LT(i, expected_offsets.size());
    EXPECT_NEAR(d["planned_offset_s"].get<double>(), expected_offsets[i] - expected_offsets[0],
                1e-9);
    ASSERT_TRUE(d["actual_offset_s"].is_number()) << d.dump();
    lateness.push_back(std::fabs(d["actual_offset_s"].get<double>() -
                                 d["planned_offset_s"].get<double>()));
  }
  ASSERT_EQ(lateness.size(), 500u);
  std::sort(lateness.begin(), lateness.end());
  const double median = (lateness[249] + lateness[250]) / 2;
  EXPECT_LT(median, 0.005);
  std::printf("trace replay: median |actual - scaled timestamp| = %.3f ms, p99 %.3f ms\n",
              median * 1e3, lateness[494] * 1e3);
}

}  // namespace
}  // namespace surge::testing
