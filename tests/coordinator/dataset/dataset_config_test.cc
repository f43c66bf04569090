// The dataset keys and flags (R-MET-3, R-CFG-1): YAML reading, flag parsing,
// and validation errors that name the field path (every such error makes
// `surge run`/`surge plan` exit 2: app/main.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "app/run_options.h"
#include "coordinator/config/run_config.h"
#include "coordinator/plan/traffic_config.h"

namespace surge::coordinator {
namespace {

using ::surge::app::RunOptions;
using ::testing::HasSubstr;

absl::Status LoadText(const std::string& yaml, surge::v1::RunConfig* config) {
  const auto path = std::filesystem::path(::testing::TempDir()) /
                    ("dataset_config_test_" + std::to_string(getpid()) + ".yaml");
  std::ofstream(path) << yaml;
  *config = DefaultRunConfig();
  return LoadYamlConfig(path.string(), config);
}

// Defaults ← flags, then validation, as `surge run` does.
absl::StatusOr<surge::v1::RunConfig> FromFlags(const std::string& args) {
  CLI::App app;
  RunOptions options;
  options.Register(app);
  app.parse(args, /*program_name_included=*/false);
  return options.Resolve();
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(DatasetConfigTest, DefaultsAreFixedLengthsAndNoReplay) {
  const surge::v1::RunConfig c = DefaultRunConfig();
  // Unset: "fixed" unless one distribution's parameter is given
  // (ApplyImpliedOptions); the zipf exponent and the time scale default to 1
  // where they are used, and are unset so that giving them can be noticed.
  EXPECT_EQ(c.dataset().random_len_dist(), "");
  EXPECT_EQ(c.dataset().random_range_ratio(), 0);
  EXPECT_EQ(c.dataset().random_len_stddev(), 0);
  EXPECT_FALSE(c.dataset().has_random_zipf_s());
  EXPECT_FALSE(c.dataset().trace_replay());
  EXPECT_FALSE(c.dataset().has_trace_time_scale());
  EXPECT_TRUE(ValidateRunConfig(c).ok());
}

TEST(DatasetConfigTest, ReadsTheNewYamlKeys) {
  surge::v1::RunConfig c;
  ASSERT_TRUE(LoadText(R"(dataset_name: random
random_len_dist: zipf
random_zipf_s: 1.2
)",
                       &c)
                  .ok());
  EXPECT_EQ(c.dataset().random_len_dist(), "zipf");
  EXPECT_DOUBLE_EQ(c.dataset().random_zipf_s(), 1.2);
  EXPECT_TRUE(ValidateRunConfig(c).ok());
  ASSERT_TRUE(LoadText("random_len_dist: uniform\nrandom_range_ratio: 0.3\n", &c).ok());
  EXPECT_DOUBLE_EQ(c.dataset().random_range_ratio(), 0.3);
  EXPECT_TRUE(ValidateRunConfig(c).ok());
  ASSERT_TRUE(LoadText("random_len_dist: gaussian\nrandom_len_stddev: 12.5\n", &c).ok());
  EXPECT_DOUBLE_EQ(c.dataset().random_len_stddev(), 12.5);
  EXPECT_TRUE(ValidateRunConfig(c).ok());

  ASSERT_TRUE(LoadText(R"(dataset_name: mooncake
dataset_path: data/traces/mooncake_conversation_trace.jsonl
trace_replay: true
trace_time_scale: 0.5
)",
                       &c)
                  .ok());
  EXPECT_TRUE(c.dataset().trace_replay());
  EXPECT_DOUBLE_EQ(c.dataset().trace_time_scale(), 0.5);
  EXPECT_TRUE(ValidateRunConfig(c).ok());

  for (const char* name : {"jsonl", "sharegpt"}) {
    ASSERT_TRUE(
        LoadText(absl::StrCat("dataset_name: ", name, "\ndataset_path: x.json\n"), &c).ok());
    EXPECT_TRUE(ValidateRunConfig(c).ok()) << name;
  }
}

TEST(DatasetConfigTest, YamlErrorsNameTheField) {
  surge::v1::RunConfig c;
  const absl::Status types = LoadText(R"(random_range_ratio: wide
trace_replay: maybe
trace_time_scale: [1]
)",
                                      &c);
  ASSERT_FALSE(types.ok());
  EXPECT_THAT(Message(types), HasSubstr("random_range_ratio = \"wide\": must be a number"));
  EXPECT_THAT(Message(types), HasSubstr("trace_replay = \"maybe\": must be true or false"));
  EXPECT_THAT(Message(types), HasSubstr("trace_time_scale = a list: must be a number"));

  ASSERT_TRUE(LoadText(R"(random_len_dist: lognormal
random_range_ratio: 1
random_len_stddev: -3
random_zipf_s: 0
trace_replay: true
trace_time_scale: 0
)",
                       &c)
                  .ok());
  const absl::Status values = ValidateRunConfig(c);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.code(), absl::StatusCode::kInvalidArgument);
  const std::string m = Message(values);
  EXPECT_THAT(m, HasSubstr("random_len_dist = \"lognormal\": must be \"fixed\", \"uniform\", "
                           "\"gaussian\" or \"zipf\" (flag --random-len-dist)"));
  EXPECT_THAT(m, HasSubstr("random_range_ratio = 1: must be a number in [0, 1)"));
  EXPECT_THAT(m, HasSubstr("random_len_stddev = -3: must be a finite number >= 0"));
  EXPECT_THAT(m, HasSubstr("random_zipf_s = 0: must be a finite number > 0"));
  EXPECT_THAT(m, HasSubstr("trace_replay = true: only the \"mooncake\" dataset"));
  EXPECT_THAT(m, HasSubstr("trace_time_scale = 0: must be a finite number > 0"));

  ASSERT_TRUE(LoadText("dataset_name: sharegpt\n", &c).ok());
  EXPECT_THAT(Message(ValidateRunConfig(c)),
              HasSubstr("dataset_path = \"\": must name a ShareGPT JSON file when dataset_name "
                        "is \"sharegpt\""));
  ASSERT_TRUE(LoadText("dataset_name: alpaca\n", &c).ok());
  EXPECT_THAT(Message(ValidateRunConfig(c)),
              HasSubstr("dataset_name = \"alpaca\": must be \"synthetic\" (alias \"random\"), "
                        "\"jsonl\", \"sharegpt\" or \"mooncake\""));
}

TEST(DatasetConfigTest, FlagsSetTheNewFields) {
  auto c = FromFlags("--random-len-dist gaussian --random-len-stddev 30");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->dataset().random_len_dist(), "gaussian");
  EXPECT_DOUBLE_EQ(c->dataset().random_len_stddev(), 30);
  EXPECT_FALSE(c->dataset().trace_replay());
  auto u = FromFlags("--random-len-dist uniform --random-range-ratio 0.1");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_DOUBLE_EQ(u->dataset().random_range_ratio(), 0.1);
  auto z = FromFlags("--random-len-dist zipf --random-zipf-s 2");
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_DOUBLE_EQ(z->dataset().random_zipf_s(), 2);

  auto r = FromFlags(
      "--dataset-name mooncake --dataset-path t.jsonl --trace-replay "
      "--trace-time-scale 0.25");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->dataset().trace_replay());
  EXPECT_DOUBLE_EQ(r->dataset().trace_time_scale(), 0.25);

  auto j = FromFlags("--dataset-name jsonl --dataset-path prompts.jsonl");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->dataset().dataset_name(), "jsonl");
}

TEST(DatasetConfigTest, BadFlagsAreFieldNamedConfigErrors) {
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"--random-len-dist poisson", "random_len_dist = \"poisson\""},
      {"--random-range-ratio -0.1", "random_range_ratio = -0.1: must be a number in [0, 1)"},
      {"--random-range-ratio x",
       "random_range_ratio = \"x\": must be a number (flag "
       "--random-range-ratio)"},
      {"--random-len-stddev nan", "random_len_stddev = nan"},
      {"--random-zipf-s -1", "random_zipf_s = -1: must be a finite number > 0"},
      {"--trace-time-scale abc",
       "trace_time_scale = \"abc\": must be a number (flag "
       "--trace-time-scale)"},
      {"--dataset-name mooncake --dataset-path t.jsonl --trace-replay --trace-time-scale 0",
       "trace_time_scale = 0"},
      {"--trace-replay", "trace_replay = true: only the \"mooncake\" dataset"},
      {"--dataset-name jsonl", "dataset_path = \"\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    auto r = FromFlags(c.args);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);  // exit 2
    EXPECT_THAT(Message(r.status()), HasSubstr(c.expected));
  }
}

// Shared prefixes: groups >= 1, synthetic only, prefix plus own length
// within 16777216 tokens; each error names the field and its flag.
TEST(DatasetConfigTest, PrefixOptionsAreCheckedByName) {
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"--random-prefix-len 512 --random-prefix-groups 0",
       "random_prefix_groups = 0: must be 1..1000000 groups (flag --random-prefix-groups)"},
      {"--dataset-name mooncake --dataset-path t.jsonl --random-prefix-len 64",
       "random_prefix_len = 64: shared prefixes are made only for synthetic prompts, not for "
       "dataset_name \"mooncake\""},
      {"--random-prefix-len 16777000 --random-input-len 1000",
       "random_prefix_len = 16777000: with random_input_len 1000 asks 16778000 input tokens per "
       "request; prefix plus own tokens must be at most 16777216"},
      {"--random-prefix-len 16777217", "random_prefix_len = 16777217: must be 0..16777216 tokens"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    auto r = FromFlags(c.args);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);  // exit 2
    EXPECT_THAT(Message(r.status()), HasSubstr(c.expected));
  }
  auto ok = FromFlags("--random-prefix-len 512 --random-prefix-groups 4 --random-input-len 128");
  ASSERT_TRUE(ok.ok()) << ok.status();
  const std::string saved = SavedConfigJson(*ok, nullptr);
  EXPECT_THAT(saved, HasSubstr("\"random_prefix_len\": 512"));
  EXPECT_THAT(saved, HasSubstr("\"random_prefix_groups\": 4"));
  // Off by default: nothing saved.
  auto off = FromFlags("");
  ASSERT_TRUE(off.ok());
  EXPECT_THAT(SavedConfigJson(*off, nullptr), ::testing::Not(HasSubstr("random_prefix")));
}

// `--random-input-len 64 --random-range-ratio 0.25` without --random-len-dist
// is not silently 64 tokens for every prompt: a distribution's parameter
// given alone names it (vLLM's rule for the range ratio), and
// run_config.json says so; the same from a YAML file.
TEST(ImpliedOptionsTest, ARangeRatioAloneMeansUniform) {
  auto c = FromFlags("--random-input-len 64 --random-range-ratio 0.25");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->dataset().random_len_dist(), "uniform");
  EXPECT_DOUBLE_EQ(c->dataset().random_range_ratio(), 0.25);
  const std::string saved = SavedConfigJson(*c, nullptr);
  EXPECT_THAT(saved, HasSubstr("\"random_len_dist\": \"uniform\""));
  EXPECT_THAT(saved, HasSubstr("\"random_range_ratio\": 0.25"));

  auto g = FromFlags("--random-len-stddev 8");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->dataset().random_len_dist(), "gaussian");
  auto z = FromFlags("--random-zipf-s 1.5");
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->dataset().random_len_dist(), "zipf");
  auto none = FromFlags("--random-input-len 64");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->dataset().random_len_dist(), "");  // fixed
  EXPECT_THAT(SavedConfigJson(*none, nullptr), HasSubstr("\"random_len_dist\": \"fixed\""));

  surge::v1::RunConfig y;
  ASSERT_TRUE(LoadText("random_input_len: 64\nrandom_range_ratio: 0.25\n", &y).ok());
  const std::vector<std::string> notes = ApplyImpliedOptions(&y);
  EXPECT_EQ(y.dataset().random_len_dist(), "uniform");
  EXPECT_THAT(notes, ::testing::ElementsAre(
                         "--random-range-ratio implies --random-len-dist uniform (no distribution "
                         "was named)"));
  // Not for a file dataset: the lengths come from the file (warned instead).
  surge::v1::RunConfig file = DefaultRunConfig();
  file.mutable_dataset()->set_dataset_name("jsonl");
  file.mutable_dataset()->set_random_range_ratio(0.25);
  EXPECT_TRUE(ApplyImpliedOptions(&file).empty());
  EXPECT_EQ(file.dataset().random_len_dist(), "");
}

// A parameter that contradicts the distribution named, or parameters of two
// distributions with none named, are refused with both flags named.
TEST(ImpliedOptionsTest, AParameterOfAnotherDistributionIsAnError) {
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"--random-len-dist gaussian --random-range-ratio 0.25",
       "random_range_ratio = 0.25: only shapes the uniform distribution, but random_len_dist is "
       "\"gaussian\"; give --random-len-dist uniform or drop --random-range-ratio"},
      {"--random-len-dist fixed --random-range-ratio 0.25",
       "random_range_ratio = 0.25: only shapes the uniform distribution, but random_len_dist is "
       "\"fixed\""},
      {"--random-len-dist uniform --random-len-stddev 4",
       "random_len_stddev = 4: only shapes the gaussian distribution"},
      {"--random-len-dist fixed --random-zipf-s 1.5",
       "random_zipf_s = 1.5: only shapes the zipf distribution"},
      {"--random-range-ratio 0.2 --random-len-stddev 5",
       "random_len_dist = \"\": parameters of different distributions are given "
       "(random_range_ratio, random_len_stddev); name the one meant (flag --random-len-dist)"},
  };
  for (const Case& k : cases) {
    auto c = FromFlags(k.args);
    ASSERT_FALSE(c.ok()) << k.args;
    EXPECT_THAT(Message(c.status()), HasSubstr(k.expected)) << k.args;
  }
}

// `--request-rate inf` (vLLM's all at once) is instant mode, alone or with
// --max-concurrency (vLLM's closed loop), from a flag or YAML (inf, .inf),
// saved as "inf" and read back.
TEST(InfiniteRateTest, InfIsAcceptedSavedAndReadBack) {
  auto c = FromFlags("--request-rate inf --max-concurrency 4");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(std::isinf(c->request_rate()));
  EXPECT_GT(c->request_rate(), 0);
  EXPECT_EQ(c->max_concurrency(), 4u);
  const std::string saved = SavedConfigJson(*c, nullptr);
  EXPECT_THAT(saved, HasSubstr("\"request_rate\": \"inf\""));
  surge::v1::RunConfig back;
  ASSERT_TRUE(LoadText(saved, &back).ok()) << saved;
  EXPECT_TRUE(std::isinf(back.request_rate()));
  EXPECT_TRUE(ValidateRunConfig(back).ok());
  for (const char* yaml : {"request_rate: .inf\n", "request_rate: inf\n", "request_rate: +.inf\n",
                           "request_rate: Infinity\n"}) {
    surge::v1::RunConfig y;
    ASSERT_TRUE(LoadText(yaml, &y).ok()) << yaml;
    EXPECT_TRUE(std::isinf(y.request_rate()) && y.request_rate() > 0) << yaml;
    EXPECT_TRUE(ValidateRunConfig(y).ok()) << yaml;
  }
  for (const char* bad : {"--request-rate -inf", "--request-rate nan"}) {
    auto r = FromFlags(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(Message(r.status()),
                HasSubstr("must be a number >= 0, or inf for all requests at once (instant "
                          "mode) (flag --request-rate)"))
        << bad;
  }
}

// Ramp rates with no strategy are refused, never warned: with the default
// request_rate the run would be one burst of every request, and with a rate
// it would not be the ramp that was asked. Each message names the rates
// given, the strategy's flag, and what request_rate would have done.
TEST(RampRatesWithoutStrategyTest, AreRefusedNamingTheFields) {
  struct Case {
    std::string args;
    std::vector<std::string> said;
  };
  const Case cases[] = {
      {"--ramp-up-start-rps 10 --ramp-up-end-rps 50 --num-prompts 200",
       {"traffic_cfg.ramp_up_start_rps = 10, traffic_cfg.ramp_up_end_rps = 50: a ramp-up needs "
        "traffic_cfg.ramp_up_strategy linear or exponential (flag --ramp-up-strategy "
        "linear|exponential), which is not given",
        "request_rate = 0, instant mode: all 200 requests at once"}},
      {"--request-rate 5 --ramp-up-start-rps 1 --ramp-up-end-rps 10",
       {"traffic_cfg.ramp_up_start_rps = 1, traffic_cfg.ramp_up_end_rps = 10:",
        "request_rate = 5 RPS"}},
      {"--request-rate inf --ramp-up-strategy none --ramp-up-end-rps 8 --num-prompts 7",
       {"  traffic_cfg.ramp_up_end_rps = 8: a ramp-up needs", "which is none",
        "request_rate = inf, instant mode: all 7 requests at once"}},
  };
  for (const Case& k : cases) {
    auto c = FromFlags(k.args);
    ASSERT_FALSE(c.ok()) << k.args;
    for (const std::string& s : k.said) EXPECT_THAT(Message(c.status()), HasSubstr(s)) << k.args;
  }
  // With a strategy the same rates are a ramp; an explicit rate below 0.1
  // alone stays instant mode with its warning.
  EXPECT_TRUE(
      FromFlags("--ramp-up-strategy linear --ramp-up-start-rps 10 --ramp-up-end-rps 50").ok());
  auto slow = FromFlags("--request-rate 0.05 --num-prompts 5");
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_THAT(surge::coordinator::TrafficWarnings(*slow),
              ::testing::Contains(HasSubstr("request_rate 0.05 < 0.1: instant mode, all 5 "
                                            "requests are sent at once")));
}

// Options that have no effect in this run
// are warned (naming the flags) and left out of run_config.json.
TEST(IgnoredOptionsTest, EachIsWarnedAndNotSaved) {
  struct Case {
    std::string args, warning, not_saved;
  };
  const Case cases[] = {
      {"--request-rate 0 --burstiness 0.5",
       "traffic_cfg.burstiness 0.5 ignored: in instant mode every request is due at once",
       "burstiness"},
      {"--request-rate inf --burstiness 0.5", "traffic_cfg.burstiness 0.5 ignored", "burstiness"},
      {"--request-rate 5 --trace-time-scale 0.5",
       "trace_time_scale 0.5 ignored: it scales a trace replay only (flags --trace-time-scale, "
       "--trace-replay)",
       "trace_time_scale"},
      {"--request-rate 5 --insecure",
       "insecure_skip_verify ignored: the server is reached over plain http (the built-in "
       "server), TLS options apply to an https base_url only (flags --ca-cert, --insecure)",
       "insecure"},
      {"--request-rate 5 --base-url http://127.0.0.1:9 --sim-ttft-ms 5 --sim-fault-429 0.1",
       "sim_ttft_ms, sim_fault_429 ignored: they set up the built-in server, and base_url "
       "http://127.0.0.1:9 is used instead (flags --sim-*, --base-url)",
       "sim_"},
      {"--request-rate 5 --dataset-name jsonl --dataset-path p.jsonl --random-range-ratio 0.3",
       "random_range_ratio ignored: only synthetic prompts have a length distribution, not "
       "dataset \"jsonl\" (flag --dataset-name)",
       "random_range_ratio"},
  };
  for (const Case& k : cases) {
    auto c = FromFlags(k.args);
    ASSERT_TRUE(c.ok()) << k.args << ": " << c.status();
    EXPECT_THAT(ConfigWarnings(*c), ::testing::Contains(HasSubstr(k.warning))) << k.args;
    EXPECT_THAT(SavedConfigJson(*c, nullptr), ::testing::Not(HasSubstr(k.not_saved))) << k.args;
  }
  // The same options where they do count: no warning, and saved.
  auto ramp = FromFlags("--ramp-up-strategy linear --ramp-up-start-rps 1 --ramp-up-end-rps 10");
  ASSERT_TRUE(ramp.ok()) << ramp.status();
  EXPECT_TRUE(ConfigWarnings(*ramp).empty());
  EXPECT_THAT(SavedConfigJson(*ramp, nullptr), HasSubstr("\"ramp_up_end_rps\": 10.0"));
  auto tls = FromFlags("--request-rate 5 --base-url https://127.0.0.1:9 --insecure");
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(ConfigWarnings(*tls).empty());
  EXPECT_THAT(SavedConfigJson(*tls, nullptr), HasSubstr("\"insecure_skip_verify\": true"));
  auto sim = FromFlags("--request-rate 5 --sim-ttft-ms 5");
  ASSERT_TRUE(sim.ok()) << sim.status();
  EXPECT_TRUE(ConfigWarnings(*sim).empty());
  EXPECT_THAT(SavedConfigJson(*sim, nullptr), HasSubstr("\"sim_ttft_ms\": 5.0"));
  // A Mooncake trace gives the output lengths: random_output_len not saved.
  auto trace = FromFlags("--dataset-name mooncake --dataset-path t.jsonl --request-rate 5");
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_THAT(SavedConfigJson(*trace, nullptr), ::testing::Not(HasSubstr("random_output_len")));
}

}  // namespace
}  // namespace surge::coordinator
