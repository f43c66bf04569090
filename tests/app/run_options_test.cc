// The flags and --config together (R-CFG-1, R-UI-2): every
// problem of the file and the command line in one pass, unknown flags with a
// suggestion, and vLLM's --goodput forms.
#include "app/run_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "coordinator/config/run_config.h"
#include "tests/app/table_flags_command_line.h"

namespace surge::app {
namespace {

using ::surge::coordinator::ForeignNameHint;
using ::testing::HasSubstr;

absl::StatusOr<surge::v1::RunConfig> Resolve(const std::string& command_line) {
  CLI::App app;
  RunOptions options;
  CLI::App* plan = app.add_subcommand("plan");
  options.Register(*plan);
  app.parse("plan " + command_line);
  return options.Resolve();
}

std::string WriteYaml(const std::string& text) {
  const auto path = std::filesystem::path(::testing::TempDir()) /
                    ("run_options_test_" + std::to_string(getpid()) + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

TEST(RunOptionsTest, FileFlagAndRangeProblemsAreReportedTogether) {
  const std::string yaml = WriteYaml("batch_size: 4\nrequest_rate: 5\nnum_prompts: -3\n");
  auto config =
      Resolve("--config " + yaml + " --request-rate abc --burstyness 2 --random-range-ratio 2");
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string m(config.status().message());
  EXPECT_THAT(m, HasSubstr("  --burstyness 2: unknown flag; did you mean --burstiness?"));
  EXPECT_THAT(m, HasSubstr("  batch_size = \"4\": unknown key; AISBench's batch_size is "
                           "surge's max_concurrency"));
  EXPECT_THAT(m, HasSubstr("  num_prompts = \"-3\": must be a whole number >= 0"));
  EXPECT_THAT(m, HasSubstr("  request_rate = \"abc\": must be a number (flag --request-rate)"));
  EXPECT_THAT(m, HasSubstr("  random_range_ratio = 2: must be a number in [0, 1)"));
  // The list of allowed keys comes once, last.
  EXPECT_EQ(m.find("(allowed keys:"), m.rfind("(allowed keys:"));
  EXPECT_EQ(m.substr(m.rfind('\n') + 1).rfind("  (allowed keys:", 0), 0u) << m;
}

// Issue 7 item 3: --assign picks the dispatcher's policy; a wrong name is
// refused with the allowed ones.
TEST(RunOptionsTest, AssignFlagTakesTheTwoPolicyNames) {
  auto config = Resolve("--assign least-loaded");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->assign(), surge::v1::ASSIGN_POLICY_LEAST_LOADED);
  config = Resolve("--num-prompts 5");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->assign(), surge::v1::ASSIGN_POLICY_ROUND_ROBIN);
  config = Resolve("--assign random");
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("assign = \"random\": must be \"round-robin\" (default) or "
                        "\"least-loaded\" (flag --assign)"));
}

// Issue 9 item 2: the pacer thread's scheduling, as flags and YAML keys;
// unset by default; a negative CPU is refused naming the flag.
TEST(RunOptionsTest, PacerCpuAndRealtimeFlagsAndKeys) {
  auto config = Resolve("--pacer-cpu 1 --pacer-realtime");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->has_pacer_cpu());
  EXPECT_EQ(config->pacer_cpu(), 1);
  EXPECT_TRUE(config->pacer_realtime());
  config = Resolve("--num-prompts 5");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->has_pacer_cpu());
  EXPECT_FALSE(config->pacer_realtime());
  config = Resolve("--config " + WriteYaml("pacer_cpu: 3\npacer_realtime: true\n"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->pacer_cpu(), 3);
  EXPECT_TRUE(config->pacer_realtime());
  config = Resolve("--config " + WriteYaml("pacer_cpu: -2\n"));
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("pacer_cpu = -2: must be a CPU number >= 0; leave it out for no pinning "
                        "(flag --pacer-cpu)"));
}

// AISBench's and vLLM's names get the same pointer to surge's name as
// flags as they do as YAML keys.
TEST(RunOptionsTest, ForeignFlagNamesPointToSurgesFlags) {
  auto config = Resolve("--host-ip 10.0.0.1 --max-out-len 64 --batch_size 8");
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string m(config.status().message());
  EXPECT_THAT(m, HasSubstr("  --host-ip 10.0.0.1: unknown flag; AISBench's host_ip and host_port "
                           "are one base_url in surge"));
  EXPECT_THAT(m, HasSubstr("  --max-out-len 64: unknown flag; AISBench's max_out_len is "
                           "surge's random_output_len"));
  EXPECT_THAT(m, HasSubstr("  --batch_size 8: unknown flag; AISBench's batch_size is surge's "
                           "max_concurrency"));
  EXPECT_EQ(ForeignNameHint("no-such-name"), "");
}

TEST(RunOptionsTest, GoodputAcceptsTheReadmeFormAndVllmForms) {
  for (const std::string& flags :
       {std::string("--goodput \"ttft:25 e2el:1000\""), std::string("--goodput ttft:25 e2el:1000"),
        std::string("--goodput ttft:25 --goodput e2el:1000")}) {
    auto config = Resolve(flags);
    ASSERT_TRUE(config.ok()) << flags << ": " << config.status();
    EXPECT_EQ(config->goodput().ttft_ms(), 25) << flags;
    EXPECT_EQ(config->goodput().e2el_ms(), 1000) << flags;
    EXPECT_FALSE(config->goodput().has_tpot_ms()) << flags;
  }
}

TEST(RunOptionsTest, GoodputErrorsNameTheMetricAndTheValue) {
  surge::v1::GoodputConfig g;
  const absl::Status s = ParseGoodput({"ttf:25 e2el:x", "tpot"}, &g);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("  goodput = \"ttf:25\": unknown metric \"ttf\" (did you mean "
                           "`ttft`?); allowed: ttft, tpot, e2el (flag --goodput)"));
  EXPECT_THAT(m, HasSubstr("  goodput = \"e2el:x\": e2el needs a number of milliseconds >= 0, "
                           "got \"x\""));
  EXPECT_THAT(m, HasSubstr("  goodput = \"tpot\": must be METRIC:MS"));
  EXPECT_TRUE(ParseGoodput({"TTFT:1.5,tpot:2"}, &g).ok());
  EXPECT_EQ(g.ttft_ms(), 1.5);
  EXPECT_EQ(g.tpot_ms(), 2);
  EXPECT_EQ(ParseGoodput({"ttft:-1"}, &g).code(), absl::StatusCode::kInvalidArgument);
}

// Composed traffic flags (docs/TRAFFIC.md): --stage replaces the file's
// stages, --spike adds spikes, a bad value names the field and the syntax.
TEST(RunOptionsTest, StageSpikeAndSamplerFlags) {
  const std::string yaml = WriteYaml(
      "traffic_cfg:\n  stages: [{duration_s: 5, rate_rps: 1}, {duration_s: 5, rate_rps: 2}]\n");
  auto config = Resolve("--config " + yaml +
                        " --stage 30s@10 --stage 500r@10-50:exp --spike 12:3:4 --sampler fixed");
  ASSERT_TRUE(config.ok()) << config.status();
  const auto& t = config->traffic_cfg();
  ASSERT_EQ(t.stages_size(), 2);
  EXPECT_EQ(t.stages(0).duration_s(), 30);
  EXPECT_EQ(t.stages(0).rate_rps(), 10);
  EXPECT_EQ(t.stages(1).num_requests(), 500u);
  EXPECT_EQ(t.stages(1).ramp_up_strategy(), surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL);
  ASSERT_EQ(t.spikes_size(), 1);
  EXPECT_EQ(t.spikes(0).at_s(), 12);
  EXPECT_EQ(t.sampler(), surge::v1::SAMPLER_KIND_FIXED);
  auto bad = Resolve("--stage 30@10 --spike 1:2");
  ASSERT_FALSE(bad.ok());
  const std::string m(bad.status().message());
  EXPECT_THAT(m, HasSubstr("  traffic_cfg.stages = \"30@10\": LENGTH \"30\" must end in s"));
  EXPECT_THAT(m, HasSubstr("  traffic_cfg.spikes = \"1:2\": must be AT_S:DURATION_S:MULTIPLIER"));
}

TEST(RunOptionsTest, InactiveRampIntoInstantModeIsAConfigurationError) {
  auto config = Resolve(
      "--ramp-up-strategy linear --ramp-up-start-rps 50 --ramp-up-end-rps 10 --num-prompts 200");
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("traffic_cfg.ramp_up_end_rps = 10: ramp-up is inactive"));
  EXPECT_TRUE(Resolve("--ramp-up-strategy linear --ramp-up-start-rps 50 --ramp-up-end-rps 10 "
                      "--request-rate 4")
                  .ok());
}

// `surge sim-server`'s flags are SimServerConfig's options (config.proto),
// with their defaults and checks, named without "sim-".
TEST(RunOptionsTest, SimServerFlagsComeFromTheSameDeclarations) {
  surge::v1::SimServerConfig config;
  ASSERT_TRUE(ResolveTableFlags("--ttft-ms 5 --fault-429=0.25", &config).ok());
  EXPECT_EQ(config.ttft_ms(), 5);
  EXPECT_EQ(config.itl_ms(), 2);  // default_value
  EXPECT_EQ(config.fault_429(), 0.25);
  EXPECT_EQ(config.fault_stall_ms(), 1000);
  const absl::Status bad = ResolveTableFlags("--itl-ms x --fault-500 1.5", &config);
  ASSERT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()),
              HasSubstr("  itl_ms = \"x\": must be a number (flag --itl-ms)"));
  EXPECT_THAT(std::string(bad.message()),
              HasSubstr("  fault_500 = 1.5: must be a fraction in [0, 1] (flag --fault-500)"));
}

// `surge sim-server`'s listen options come from the same table: defaults
// 127.0.0.1, port 8000, model surge-sim, one thread; a bad port is a
// configuration error naming the flag.
TEST(RunOptionsTest, SimServerListenFlagsComeFromTheTable) {
  surge::v1::SimServerConfig config;
  ASSERT_TRUE(ResolveTableFlags("", &config).ok());
  EXPECT_EQ(config.address(), "127.0.0.1");
  EXPECT_EQ(config.port(), 8000u);
  EXPECT_EQ(config.model(), "surge-sim");
  EXPECT_EQ(config.threads(), 1u);
  EXPECT_TRUE(config.request_log_file().empty());
  config.Clear();
  ASSERT_TRUE(ResolveTableFlags("--host 0.0.0.0 --port 0 --model m --request-log /tmp/r.jsonl "
                                "--tls-cert c.pem --tls-key k.pem",
                                &config)
                  .ok());
  EXPECT_EQ(config.address(), "0.0.0.0");
  EXPECT_EQ(config.port(), 0u);
  EXPECT_EQ(config.model(), "m");
  EXPECT_EQ(config.request_log_file(), "/tmp/r.jsonl");
  EXPECT_EQ(config.tls_cert_file(), "c.pem");
  EXPECT_EQ(config.tls_key_file(), "k.pem");
  const absl::Status bad = ResolveTableFlags("--port 70000", &config);
  EXPECT_EQ(bad.message(),
            "invalid configuration:\n  port = 70000: must be a TCP port 0..65535 (0 = any free "
            "port) (flag --port)");
}

// A flag with a bare value (OptionSpec.flag_bare_value): --server-metrics
// alone, before another flag or last, reads as "auto"; with a URL, the URL.
TEST(RunOptionsTest, ServerMetricsFlagMayStandWithoutItsValue) {
  auto absent = Resolve("--num-prompts 4");
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_EQ(absent->server_metrics(), "");  // off
  EXPECT_EQ(absent->server_metrics_interval_s(), 1.0);
  auto before_flag = Resolve("--server-metrics --server-metrics-interval-s 0.5");
  ASSERT_TRUE(before_flag.ok()) << before_flag.status();
  EXPECT_EQ(before_flag->server_metrics(), "auto");
  EXPECT_EQ(before_flag->server_metrics_interval_s(), 0.5);
  auto last = Resolve("--num-prompts 4 --server-metrics");
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->server_metrics(), "auto");
  auto url = Resolve("--server-metrics http://127.0.0.1:8001/metrics --num-prompts 4");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->server_metrics(), "http://127.0.0.1:8001/metrics");
  auto bad = Resolve("--server-metrics ftp://h/metrics");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("server_metrics = \"ftp://h/metrics\": must be \"auto\""));
}

}  // namespace
}  // namespace surge::app
