// The dataset keys and flags (R-MET-3, R-CFG-1): YAML reading, flag parsing,
// and validation errors that name the field path (every such error makes
// `surge run`/`surge plan` exit 2: coordinator/main.cc).
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "coordinator/cli/run_options.h"
#include "coordinator/config/run_config.h"

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;

absl::Status LoadText(const std::string& yaml, surge::v1::RunConfig* config) {
  const auto path = std::filesystem::path(::testing::TempDir()) / ("dataset_config_test_" + std::to_string(getpid()) + ".yaml");
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
  EXPECT_EQ(c.dataset().random_len_dist(), "fixed");
  EXPECT_EQ(c.dataset().random_range_ratio(), 0);
  EXPECT_EQ(c.dataset().random_len_stddev(), 0);
  EXPECT_EQ(c.dataset().random_zipf_s(), 1);
  EXPECT_FALSE(c.dataset().trace_replay());
  EXPECT_EQ(c.dataset().trace_time_scale(), 1);
  EXPECT_TRUE(ValidateRunConfig(c).ok());
}

TEST(DatasetConfigTest, ReadsTheNewYamlKeys) {
  surge::v1::RunConfig c;
  ASSERT_TRUE(LoadText(R"(dataset_name: random
random_len_dist: zipf
random_range_ratio: 0.3
random_len_stddev: 12.5
random_zipf_s: 1.2
)",
                       &c)
                  .ok());
  EXPECT_EQ(c.dataset().random_len_dist(), "zipf");
  EXPECT_DOUBLE_EQ(c.dataset().random_range_ratio(), 0.3);
  EXPECT_DOUBLE_EQ(c.dataset().random_len_stddev(), 12.5);
  EXPECT_DOUBLE_EQ(c.dataset().random_zipf_s(), 1.2);
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
  auto c = FromFlags(
      "--random-len-dist gaussian --random-len-stddev 30 --random-range-ratio 0.1 "
      "--random-zipf-s 2");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->dataset().random_len_dist(), "gaussian");
  EXPECT_DOUBLE_EQ(c->dataset().random_len_stddev(), 30);
  EXPECT_DOUBLE_EQ(c->dataset().random_range_ratio(), 0.1);
  EXPECT_DOUBLE_EQ(c->dataset().random_zipf_s(), 2);
  EXPECT_FALSE(c->dataset().trace_replay());

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

}  // namespace
}  // namespace surge::coordinator
