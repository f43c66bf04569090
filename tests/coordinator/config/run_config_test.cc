// Configuration reader and validator (R-CFG-1, R-UI-2).
#include <unistd.h>

#include "coordinator/config/run_config.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;

absl::Status LoadText(const std::string& yaml, surge::v1::RunConfig* config) {
  const auto path = std::filesystem::path(::testing::TempDir()) / ("run_config_test_" + std::to_string(getpid()) + ".yaml");
  std::ofstream(path) << yaml;
  *config = DefaultRunConfig();
  return LoadYamlConfig(path.string(), config);
}

TEST(RunConfigTest, ReadsEveryAisbenchKey) {
  surge::v1::RunConfig c;
  ASSERT_TRUE(LoadText(R"(request_rate: 12.5
traffic_cfg:
  burstiness: 0.5
  ramp_up_strategy: exponential
  ramp_up_start_rps: 2
  ramp_up_end_rps: 20
num_prompts: 300
max_concurrency: 8
seed: 99
model: org/model-7b
base_url: http://127.0.0.1:9000
endpoint: /v1/completions
dataset_name: mooncake
dataset_path: data/traces/x.jsonl
)",
                       &c)
                  .ok());
  EXPECT_DOUBLE_EQ(c.request_rate(), 12.5);
  EXPECT_DOUBLE_EQ(c.traffic_cfg().burstiness(), 0.5);
  EXPECT_EQ(c.traffic_cfg().ramp_up_strategy(), "exponential");
  EXPECT_DOUBLE_EQ(c.traffic_cfg().ramp_up_start_rps(), 2);
  EXPECT_DOUBLE_EQ(c.traffic_cfg().ramp_up_end_rps(), 20);
  EXPECT_EQ(c.num_prompts(), 300u);
  EXPECT_EQ(c.max_concurrency(), 8u);
  EXPECT_EQ(c.seed(), 99u);
  EXPECT_EQ(c.target().model(), "org/model-7b");
  EXPECT_EQ(c.target().base_url(), "http://127.0.0.1:9000");
  EXPECT_EQ(c.target().endpoint(), "/v1/completions");
  EXPECT_EQ(c.dataset().dataset_name(), "mooncake");
  EXPECT_TRUE(ValidateRunConfig(c).ok());
}

TEST(RunConfigTest, DefaultsAreTheDocumentedOnes) {
  const surge::v1::RunConfig c = DefaultRunConfig();
  EXPECT_EQ(c.num_prompts(), 1000u);
  EXPECT_EQ(c.seed(), 0u);
  EXPECT_EQ(c.target().endpoint(), "/v1/chat/completions");
  EXPECT_DOUBLE_EQ(c.traffic_cfg().burstiness(), 0);  // the seed's default, not vLLM's 1
  EXPECT_EQ(c.output_dir(), "outputs/default");
  EXPECT_TRUE(ValidateRunConfig(c).ok());
}

TEST(RunConfigTest, ReportsEveryErrorWithFieldValueAndAllowedSet) {
  surge::v1::RunConfig c;
  const absl::Status s = LoadText(R"(request_rate: fast
traffic_cfg:
  burstyness: 0.5
num_prompts: -4
colour: blue
)",
                                  &c);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("request_rate = \"fast\": must be a number"));
  EXPECT_THAT(m, HasSubstr("traffic_cfg.burstyness = \"0.5\": unknown key; allowed in "
                           "traffic_cfg: burstiness, ramp_up_end_rps"));
  EXPECT_THAT(m, HasSubstr("num_prompts = \"-4\": must be a whole number >= 0"));
  EXPECT_THAT(m, HasSubstr("colour = \"blue\": unknown key"));
}

TEST(RunConfigTest, ValidatorRejectsOutOfRangeValues) {
  surge::v1::RunConfig c = DefaultRunConfig();
  c.set_request_rate(std::numeric_limits<double>::quiet_NaN());
  c.mutable_traffic_cfg()->set_burstiness(-1);
  c.mutable_traffic_cfg()->set_ramp_up_strategy("quadratic");
  c.mutable_traffic_cfg()->set_ramp_up_end_rps(std::numeric_limits<double>::infinity());
  c.set_num_prompts(0);
  c.mutable_target()->set_endpoint("/v1/embeddings");
  c.mutable_dataset()->set_dataset_name("mooncake");
  const std::string m(ValidateRunConfig(c).message());
  EXPECT_THAT(m, HasSubstr("request_rate = nan: must be a finite number >= 0 (flag --request-rate)"));
  EXPECT_THAT(m, HasSubstr("traffic_cfg.burstiness = -1: must be a finite number >= 0"));
  EXPECT_THAT(m, HasSubstr("traffic_cfg.ramp_up_strategy = \"quadratic\": must be \"linear\", "
                           "\"exponential\""));
  EXPECT_THAT(m, HasSubstr("traffic_cfg.ramp_up_end_rps = inf"));
  EXPECT_THAT(m, HasSubstr("num_prompts = 0: must be >= 1"));
  EXPECT_THAT(m, HasSubstr("endpoint = \"/v1/embeddings\""));
  EXPECT_THAT(m, HasSubstr("dataset_path = \"\": must name a Mooncake trace"));
}

// Texts that travel to the workers in proto strings must be valid UTF-8: a
// worker could not decode a Welcome carrying a raw 0xFF (issue 8 item 1).
TEST(RunConfigTest, ValidatorRejectsTextThatIsNotUtf8) {
  surge::v1::RunConfig c = DefaultRunConfig();
  c.mutable_target()->set_model("m\xff");
  c.mutable_target()->add_headers("X-Name: caf\xe9");  // Latin-1 é
  const absl::Status status = ValidateRunConfig(c);
  ASSERT_FALSE(status.ok());
  const std::string m(status.message());
  EXPECT_THAT(m, HasSubstr("model = \"m\xEF\xBF\xBD\": must be valid UTF-8 text"));
  EXPECT_THAT(m, HasSubstr("headers[0] = \"X-Name: caf\xEF\xBF\xBD\": must be valid UTF-8"));
  c.mutable_target()->set_model("mod\xC3\xA8le");  // valid UTF-8 is fine
  c.mutable_target()->clear_headers();
  EXPECT_TRUE(ValidateRunConfig(c).ok()) << ValidateRunConfig(c);
}

TEST(RunConfigTest, BadYamlNamesTheFile) {
  surge::v1::RunConfig c;
  const absl::Status s = LoadText("request_rate: [1, 2\n", &c);
  EXPECT_THAT(std::string(s.message()), HasSubstr("not valid YAML"));
  const absl::Status missing = LoadYamlConfig("/nonexistent/surge.yaml", &c);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("--config = \"/nonexistent/surge.yaml\": no such file"));
  const absl::Status directory = LoadYamlConfig(::testing::TempDir(), &c);
  EXPECT_THAT(std::string(directory.message()), HasSubstr("is not a regular file"));
}

}  // namespace
}  // namespace surge::coordinator
