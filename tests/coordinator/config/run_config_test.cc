// Configuration reader and validator (R-CFG-1, R-UI-2).
#include "coordinator/config/run_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;

absl::Status LoadText(const std::string& yaml, surge::v1::RunConfig* config) {
  const auto path = std::filesystem::path(::testing::TempDir()) /
                    ("run_config_test_" + std::to_string(getpid()) + ".yaml");
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
  EXPECT_EQ(c.traffic_cfg().ramp_up_strategy(), surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL);
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
  EXPECT_THAT(m, HasSubstr("traffic_cfg.burstyness = \"0.5\": unknown key; did you mean "
                           "`burstiness`?"));
  EXPECT_THAT(m, HasSubstr("num_prompts = \"-4\": must be a whole number >= 0"));
  EXPECT_THAT(m, HasSubstr("colour = \"blue\": unknown key\n"));
  // The allowed keys once, at the end, with the traffic_cfg ones.
  EXPECT_THAT(m, HasSubstr("(allowed keys: abort_after_connect_failures, address_policy, "
                           "api_key_file, assign, base_url,"));
  EXPECT_THAT(m, HasSubstr("traffic_cfg: {burstiness, ramp_up_end_rps, ramp_up_start_rps, "
                           "ramp_up_strategy, sampler, stages: [{amplitude_rps, burstiness, "));
}

TEST(RunConfigTest, ValidatorRejectsOutOfRangeValues) {
  surge::v1::RunConfig c = DefaultRunConfig();
  // An enum's text that is none of its spellings is refused as a text with
  // allowed values is.
  ASSERT_TRUE(LoadText("traffic_cfg: {ramp_up_strategy: quadratic}\n", &c).ok());
  c.set_request_rate(std::numeric_limits<double>::quiet_NaN());
  c.mutable_traffic_cfg()->set_burstiness(-1);
  c.mutable_traffic_cfg()->set_ramp_up_end_rps(std::numeric_limits<double>::infinity());
  c.set_num_prompts(0);
  c.mutable_target()->set_endpoint("/v1/embeddings");
  c.mutable_dataset()->set_dataset_name("mooncake");
  const std::string m(ValidateRunConfig(c).message());
  EXPECT_THAT(
      m, HasSubstr(
             "request_rate = nan: must be a number >= 0, or inf for all requests at once (instant "
             "mode) (flag --request-rate)"));
  EXPECT_THAT(m, HasSubstr("traffic_cfg.burstiness = -1: must be a finite number >= 0"));
  EXPECT_THAT(m, HasSubstr("traffic_cfg.ramp_up_strategy = \"quadratic\": must be \"linear\", "
                           "\"exponential\""));
  EXPECT_THAT(m, HasSubstr("traffic_cfg.ramp_up_end_rps = inf"));
  EXPECT_THAT(m, HasSubstr("num_prompts = 0: must be >= 1"));
  EXPECT_THAT(m, HasSubstr("endpoint = \"/v1/embeddings\""));
  EXPECT_THAT(m, HasSubstr("dataset_path = \"\": must name a Mooncake trace"));
}

// --metric-percentiles: a comma list of numbers in (0, 100); a bad entry
// is named with the field and the flag.
TEST(RunConfigTest, MetricPercentilesMustBeInZeroToHundred) {
  surge::v1::RunConfig c = DefaultRunConfig();
  c.set_metric_percentiles("50,90,99,99.9");
  EXPECT_TRUE(ValidateRunConfig(c).ok()) << ValidateRunConfig(c);
  c.set_metric_percentiles("50,100");
  const std::string m(ValidateRunConfig(c).message());
  EXPECT_THAT(m, HasSubstr("metric_percentiles = \"50,100\": \"100\" is not a percentile: each "
                           "entry must be a number in (0, 100), e.g. 50,90,99,99.9 (flag "
                           "--metric-percentiles)"));
}

// Texts that travel to the workers in proto strings must be valid UTF-8: a
// worker could not decode a Welcome carrying a raw 0xFF.
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
  EXPECT_THAT(std::string(missing.message()),
              HasSubstr("--config = \"/nonexistent/surge.yaml\": no such file"));
  const absl::Status directory = LoadYamlConfig(::testing::TempDir(), &c);
  EXPECT_THAT(std::string(directory.message()), HasSubstr("is not a regular file"));
}

}  // namespace
}  // namespace surge::coordinator

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

size_t CountOf(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// Issue 8 item 7: AISBench's own names point to surge's, typos get a "did
// you mean", and the allowed list is printed once however many keys are
// unknown.
TEST(RunConfigHintsTest, AisbenchNamesAndTyposGetHintsAndTheListOnce) {
  surge::v1::RunConfig c;
  const absl::Status s = LoadText(R"(batch_size: 8
max_out_len: 256
host_ip: localhost
host_port: 8080
generation_kwargs: {temperature: 0}
api_key: sk-secret
burstyness: 0.5
requst_rate: 3
traffic_cfg:
  ramp_up_strat: linear
goodput:
  ttft: 25
)",
                                  &c);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("  batch_size = \"8\": unknown key; AISBench's batch_size is surge's "
                           "max_concurrency"));
  EXPECT_THAT(m, HasSubstr("  max_out_len = \"256\": unknown key; AISBench's max_out_len is "
                           "surge's random_output_len"));
  EXPECT_THAT(m, HasSubstr("  host_ip = \"localhost\": unknown key; AISBench's host_ip and "
                           "host_port are one base_url"));
  EXPECT_THAT(m, HasSubstr("  host_port = \"8080\": unknown key; AISBench's host_ip"));
  EXPECT_THAT(m, HasSubstr("  generation_kwargs = a mapping: unknown key; request body fields "
                           "(temperature, top_p, ...) go in extra_body_json"));
  EXPECT_THAT(m, HasSubstr("  api_key = \"sk-secret\": unknown key; surge never reads the API "
                           "key from a configuration: use api_key_file"));
  EXPECT_THAT(m, HasSubstr("  burstyness = \"0.5\": unknown key; did you mean `burstiness` "
                           "(under traffic_cfg)?"));
  EXPECT_THAT(m, HasSubstr("  requst_rate = \"3\": unknown key; did you mean `request_rate`?"));
  EXPECT_THAT(m, HasSubstr("  traffic_cfg.ramp_up_strat = \"linear\": unknown key; did you mean "
                           "`ramp_up_strategy`?"));
  EXPECT_THAT(m, HasSubstr("  goodput.ttft = \"25\": unknown key; did you mean `ttft_ms`?"));
  EXPECT_EQ(CountOf(m, "allowed keys"), 1u);
  EXPECT_EQ(CountOf(m, "sim_fault_stall_ms"), 1u);  // the list, once
}

TEST(RunConfigHintsTest, DidYouMeanIsBoundedByEditDistance) {
  const std::vector<std::string> keys = {"burstiness", "request_rate", "seed"};
  EXPECT_EQ(DidYouMean("burstyness", keys), "burstiness");
  EXPECT_EQ(DidYouMean("request-rate", keys), "request_rate");
  EXPECT_EQ(DidYouMean("Seed", keys), "seed");
  EXPECT_EQ(DidYouMean("colour", keys), "");
  EXPECT_EQ(DidYouMean("x", keys), "");
}

// Issue 8 item 7: run_config.json is read back by --config (JSON is YAML)
// and gives the same configuration for everything that had an effect.
TEST(SavedConfigTest, ReadsBackToTheSameConfiguration) {
  surge::v1::RunConfig c;
  ASSERT_TRUE(LoadText(R"(request_rate: 12.5
traffic_cfg:
  burstiness: 0.3
num_prompts: 77
seed: 18446744073709551615
max_concurrency: 9
workers: 3
assign: least-loaded
output_dir: out/x
model: "org/model \"q\" é"
base_url: https://127.0.0.1:9443/api
endpoint: /v1/completions
stream: false
request_timeout_s: 0.25
headers: ["X-Trace: abc", "X-Api-Key: sk-secret", "Authorization-Extra: s3"]
extra_body_json: {temperature: 0.5, ignore_eos: true}
dataset_name: synthetic
random_input_len: 64
random_output_len: 7
random_len_dist: uniform
random_range_ratio: 0.1
goodput:
  ttft_ms: 25
)",
                       &c)
                  .ok());
  std::vector<std::string> left_out;
  const std::string json = SavedConfigJson(c, &left_out);
  EXPECT_THAT(json, Not(HasSubstr("sk-secret")));
  EXPECT_THAT(json, Not(HasSubstr("s3")));
  EXPECT_THAT(left_out, ::testing::ElementsAre("X-Api-Key", "Authorization-Extra"));
  EXPECT_THAT(json, Not(HasSubstr("sim_ttft_ms")));  // a base_url is given: no built-in server
  surge::v1::RunConfig back;
  const absl::Status s = LoadText(json, &back);
  ASSERT_TRUE(s.ok()) << s << "\n" << json;
  ASSERT_TRUE(ValidateRunConfig(back).ok());
  // Equal field by field, except the headers left out and the sim keys.
  surge::v1::RunConfig expected = c;
  expected.mutable_target()->clear_headers();
  expected.mutable_target()->add_headers("X-Trace: abc");
  *expected.mutable_sim_server() = back.sim_server();
  expected.mutable_target()->set_extra_body_json(c.target().extra_body_json());
  EXPECT_EQ(back.SerializeAsString(), expected.SerializeAsString())
      << back.DebugString() << "\nvs\n"
      << expected.DebugString();
}

TEST(SavedConfigTest, LeavesOutValuesThatHadNoEffect) {
  surge::v1::RunConfig c = DefaultRunConfig();
  c.set_request_rate(100);  // ignored under an active ramp (R-TGT)
  c.mutable_traffic_cfg()->set_ramp_up_strategy(surge::v1::RAMP_UP_STRATEGY_LINEAR);
  c.mutable_traffic_cfg()->set_ramp_up_start_rps(1);
  c.mutable_traffic_cfg()->set_ramp_up_end_rps(5);
  c.mutable_dataset()->set_dataset_name("jsonl");
  c.mutable_dataset()->set_dataset_path("/data/p.jsonl");
  const std::string json = SavedConfigJson(c, nullptr);
  EXPECT_THAT(json, Not(HasSubstr("request_rate")));
  EXPECT_THAT(json, HasSubstr("\"ramp_up_end_rps\": 5.0"));
  EXPECT_THAT(json, Not(HasSubstr("random_input_len")));       // synthetic only
  EXPECT_THAT(json, HasSubstr("\"random_output_len\": 128"));  // jsonl's default max_tokens
  EXPECT_THAT(json, HasSubstr("\"sim_ttft_ms\""));  // no base_url: the built-in server ran
  EXPECT_THAT(json, Not(HasSubstr("sim_fault")));   // no faults asked
  EXPECT_THAT(json, Not(HasSubstr("goodput")));
  // Ramp rates without a strategy had no effect either.
  surge::v1::RunConfig plain = DefaultRunConfig();
  plain.mutable_traffic_cfg()->set_ramp_up_start_rps(3);
  EXPECT_THAT(SavedConfigJson(plain, nullptr), Not(HasSubstr("ramp_up")));
}

// The built-in server's queueing model: not saved while off (run_config.json
// as before), saved when on, and a step without time refused with its flags.
TEST(SavedConfigTest, SimQueueingModelSavedOnlyWhenOnAndStepsTakeTime) {
  surge::v1::RunConfig c = DefaultRunConfig();
  EXPECT_TRUE(ValidateRunConfig(c).ok());
  const std::string off = SavedConfigJson(c, nullptr);
  EXPECT_THAT(off, Not(HasSubstr("max_num_seqs")));
  EXPECT_THAT(off, Not(HasSubstr("decode_ms")));
  c.mutable_sim_server()->set_max_num_seqs(8);
  c.mutable_sim_server()->set_decode_ms_per_seq(0.5);
  EXPECT_TRUE(ValidateRunConfig(c).ok()) << ValidateRunConfig(c);
  const std::string on = SavedConfigJson(c, nullptr);
  EXPECT_THAT(on, HasSubstr("\"sim_max_num_seqs\": 8"));
  EXPECT_THAT(on, HasSubstr("\"sim_decode_ms_per_seq\": 0.5"));
  c.mutable_sim_server()->set_decode_ms_base(0);
  c.mutable_sim_server()->set_decode_ms_per_seq(0);
  EXPECT_THAT(std::string(ValidateRunConfig(c).message()),
              HasSubstr("sim_decode_ms_base = 0: with sim_max_num_seqs > 0 an engine step must "
                        "take time"));
}

// Issue 7 item 3 (R-DIST-3): the assignment policy is a YAML key, checked
// against its two names, and saved only when it is not the default.
TEST(AssignConfigTest, ParsesValidatesAndSavesOnlyANonDefaultPolicy) {
  surge::v1::RunConfig c = DefaultRunConfig();
  EXPECT_EQ(c.assign(), surge::v1::ASSIGN_POLICY_ROUND_ROBIN);
  EXPECT_THAT(SavedConfigJson(c, nullptr), Not(HasSubstr("assign")));
  ASSERT_TRUE(LoadText("assign: least-loaded\n", &c).ok());
  EXPECT_EQ(c.assign(), surge::v1::ASSIGN_POLICY_LEAST_LOADED);
  EXPECT_TRUE(ValidateRunConfig(c).ok());
  const std::string json = SavedConfigJson(c, nullptr);
  EXPECT_THAT(json, HasSubstr("\"assign\": \"least-loaded\""));
  surge::v1::RunConfig back = DefaultRunConfig();
  ASSERT_TRUE(LoadText(json, &back).ok());
  EXPECT_EQ(back.assign(), surge::v1::ASSIGN_POLICY_LEAST_LOADED);
  ASSERT_TRUE(LoadText("assign: fastest\n", &c).ok());
  const absl::Status s = ValidateRunConfig(c);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("assign = \"fastest\": must be \"round-robin\" (default) or "
                        "\"least-loaded\" (flag --assign)"));
  // An empty text reads as the default, round-robin.
  ASSERT_TRUE(LoadText("assign: \"\"\n", &c).ok());
  EXPECT_EQ(c.assign(), surge::v1::ASSIGN_POLICY_ROUND_ROBIN);
  EXPECT_TRUE(ValidateRunConfig(c).ok());
}

// Issue 8 item 7: ".../v1" + "/v1/chat/completions" is warned with the URL.
TEST(ConfigWarningsTest, DoubledPathSegmentIsWarnedWithTheUrlRequested) {
  surge::v1::RunConfig c = DefaultRunConfig();
  c.mutable_target()->set_base_url("http://127.0.0.1:8000/v1/");
  const std::vector<std::string> w = ConfigWarnings(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("base_url \"http://127.0.0.1:8000/v1/\" ends in /v1 and endpoint "
                              "\"/v1/chat/completions\" starts with it: every request goes to "
                              "http://127.0.0.1:8000/v1/v1/chat/completions"));
  c.mutable_target()->set_base_url("http://127.0.0.1:8000");
  EXPECT_TRUE(ConfigWarnings(c).empty());
  c.mutable_target()->set_base_url("http://127.0.0.1:8000/openai");
  EXPECT_TRUE(ConfigWarnings(c).empty());
}

// Issue 8 item 7: extra_body_json may not replace the fields surge sets and
// reports; max_tokens and stream_options may, with a warning.
TEST(ConfigWarningsTest, ExtraBodyCannotOverrideSurgesOwnFields) {
  for (const char* field : {"model", "stream", "messages", "prompt"}) {
    surge::v1::RunConfig c = DefaultRunConfig();
    c.mutable_target()->set_extra_body_json(absl::StrCat("{\"", field, "\": \"zzz\"}"));
    const absl::Status s = ValidateRunConfig(c);
    ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat("  extra_body_json = \"{\"", field,
                                       "\": \"zzz\"}\": must not set \"", field, "\"")));
  }
  surge::v1::RunConfig c = DefaultRunConfig();
  c.mutable_target()->set_extra_body_json(
      R"({"max_tokens": 16, "stream_options": {"include_usage": false}})");
  EXPECT_TRUE(ValidateRunConfig(c).ok());
  const std::vector<std::string> w = ConfigWarnings(c);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_THAT(w[0], HasSubstr("extra_body_json sets \"max_tokens\" = 16 for every request"));
  EXPECT_THAT(w[1], HasSubstr("output token counts are estimated"));
}

// Issue 11 item 1: several choices per request (n > 1, best_of > 1) are a
// configuration error (exit 2, nothing sent): their chunks interleave in one
// stream and surge measures one answer per request.
TEST(ConfigWarningsTest, ExtraBodyCannotAskForSeveralChoices) {
  surge::v1::RunConfig c = DefaultRunConfig();
  c.mutable_target()->set_extra_body_json(R"({"n":2})");
  const absl::Status s = ValidateRunConfig(c);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("  extra_body_json = \"{\"n\":2}\": sets \"n\": 2; surge measures one "
                        "answer per request, so only 1 is allowed"));
  c.mutable_target()->set_extra_body_json(R"({"best_of":4})");
  EXPECT_EQ(ValidateRunConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c.mutable_target()->set_extra_body_json(R"({"n":1,"ignore_eos":true})");
  EXPECT_TRUE(ValidateRunConfig(c).ok());
}

// Issue 10 item 4: the late-send policy's keys: read from YAML, validated
// with the field and what is allowed, saved only when not the default.
TEST(LatePolicyConfigTest, ParsesValidatesAndSavesOnlyNonDefaults) {
  surge::v1::RunConfig c = DefaultRunConfig();
  EXPECT_EQ(c.late_policy(), surge::v1::LATE_POLICY_SEND);
  EXPECT_EQ(c.late_threshold_ms(), 10);
  EXPECT_FALSE(c.has_catch_up_rps());
  EXPECT_TRUE(ValidateRunConfig(c).ok());
  const std::string defaults = SavedConfigJson(c, nullptr);
  // (Not "late" alone: the lateness alarm's own key, lateness_alarm_ms, is
  // saved with its default.)
  EXPECT_THAT(defaults, Not(HasSubstr("\"late_policy\"")));
  EXPECT_THAT(defaults, Not(HasSubstr("\"late_threshold_ms\"")));
  EXPECT_THAT(defaults, Not(HasSubstr("catch_up")));

  ASSERT_TRUE(LoadText("late_policy: cap\nlate_threshold_ms: 25\ncatch_up_rps: 400\n", &c).ok());
  EXPECT_EQ(c.late_policy(), surge::v1::LATE_POLICY_CAP);
  EXPECT_EQ(c.late_threshold_ms(), 25);
  EXPECT_EQ(c.catch_up_rps(), 400);
  EXPECT_TRUE(ValidateRunConfig(c).ok());
  const std::string json = SavedConfigJson(c, nullptr);
  EXPECT_THAT(json, HasSubstr("\"late_policy\": \"cap\""));
  EXPECT_THAT(json, HasSubstr("\"late_threshold_ms\": 25.0"));
  EXPECT_THAT(json, HasSubstr("\"catch_up_rps\": 400.0"));
  surge::v1::RunConfig back = DefaultRunConfig();
  ASSERT_TRUE(LoadText(json, &back).ok());
  EXPECT_EQ(back.late_policy(), surge::v1::LATE_POLICY_CAP);
  EXPECT_EQ(back.late_threshold_ms(), 25);
  EXPECT_EQ(back.catch_up_rps(), 400);

  auto message = [](const surge::v1::RunConfig& config) {
    const absl::Status s = ValidateRunConfig(config);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    return std::string(s.message());
  };
  surge::v1::RunConfig bad = DefaultRunConfig();
  ASSERT_TRUE(LoadText("late_policy: drop\n", &bad).ok());
  EXPECT_THAT(message(bad), HasSubstr("  late_policy = \"drop\": must be \"send\" (default), "
                                      "\"skip\" or \"cap\" (flag --late-policy)"));
  bad = DefaultRunConfig();
  bad.set_late_threshold_ms(0);
  EXPECT_THAT(message(bad), HasSubstr("  late_threshold_ms = 0: must be a number of milliseconds "
                                      "> 0 (default 10) (flag --late-threshold-ms)"));
  bad.set_late_threshold_ms(-5);
  EXPECT_THAT(message(bad), HasSubstr("  late_threshold_ms = -5: must be"));
  bad = DefaultRunConfig();
  bad.set_late_policy(surge::v1::LATE_POLICY_CAP);
  EXPECT_THAT(message(bad), HasSubstr("  catch_up_rps = (not set): is required with late_policy "
                                      "\"cap\""));
  bad.set_catch_up_rps(0);
  EXPECT_THAT(message(bad), HasSubstr("  catch_up_rps = 0: must be a finite rate > 0, "
                                      "requests/s (flag --catch-up-rps)"));
  bad.set_catch_up_rps(std::numeric_limits<double>::infinity());
  EXPECT_THAT(message(bad), HasSubstr("  catch_up_rps = inf: must be a finite rate > 0"));
  bad = DefaultRunConfig();
  bad.set_late_policy(surge::v1::LATE_POLICY_SKIP);
  bad.set_catch_up_rps(100);
  EXPECT_THAT(message(bad), HasSubstr("  catch_up_rps = 100: is used only with late_policy "
                                      "\"cap\", not \"skip\" (flags --catch-up-rps, "
                                      "--late-policy cap)"));
  bad.clear_late_policy();
  EXPECT_THAT(message(bad), HasSubstr("not \"send\""));
  // skip with its threshold: fine.
  surge::v1::RunConfig skip = DefaultRunConfig();
  skip.set_late_policy(surge::v1::LATE_POLICY_SKIP);
  skip.set_late_threshold_ms(0.5);
  skip.set_request_rate(20);
  EXPECT_TRUE(ValidateRunConfig(skip).ok());
  EXPECT_TRUE(ConfigWarnings(skip).empty());
  // In instant mode (rate 0: every request planned at 0) it is warned.
  skip.set_request_rate(0);
  const std::vector<std::string> w = ConfigWarnings(skip);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "late_policy skip in instant mode: every request is planned at 0, so every one "
            "released more than late_threshold_ms after the start is late and skipped (flags "
            "--late-policy, --request-rate)");
}

// Live metrics: the YAML keys, their range, the unused
// host warned, and neither saved in run_config.json.
TEST(RunConfigTest, MetricsPortAndHost) {
  surge::v1::RunConfig c;
  ASSERT_TRUE(LoadText("metrics_port: 9464\nmetrics_host: 0.0.0.0\n", &c).ok());
  EXPECT_EQ(c.metrics_port(), 9464u);
  EXPECT_EQ(c.metrics_host(), "0.0.0.0");
  EXPECT_TRUE(ValidateRunConfig(c).ok());
  EXPECT_TRUE(ConfigWarnings(c).empty());
  EXPECT_EQ(SavedConfigJson(c, nullptr).find("metrics"), std::string::npos);
  c.set_metrics_port(70000);
  EXPECT_THAT(std::string(ValidateRunConfig(c).message()),
              HasSubstr("  metrics_port = 70000: must be a TCP port 1..65535, or 0 = no live "
                        "metrics (flag --metrics-port)"));
  c.set_metrics_port(0);
  const std::vector<std::string> w = ConfigWarnings(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "metrics_host \"0.0.0.0\" is unused: live metrics are off without a "
            "metrics_port (flag --metrics-port)");
}

// The enums (late_policy, assign, sampler, ramp_up_strategy, a stage's
// profile) are read and written by the spellings they had as strings, so a
// run_config.json that older surge wrote reads back to the same run.
TEST(EnumSpellingTest, OldRunConfigJsonReadsBackAndSavesTheSameSpellings) {
  const std::string old_json = R"({
  "traffic_cfg": {
    "burstiness": 0.5,
    "stages": [
      {"duration_s": 2, "profile": "sine", "mean_rps": 2, "amplitude_rps": 1, "period_s": 2},
      {"num_requests": 3, "ramp_up_strategy": "exponential", "ramp_up_start_rps": 1,
       "ramp_up_end_rps": 4}
    ],
    "sampler": "gamma"
  },
  "num_prompts": 20,
  "assign": "least-loaded",
  "late_policy": "cap",
  "catch_up_rps": 50.0
}
)";
  const std::filesystem::path folder =
      std::filesystem::path(testing::TempDir()) / "surge_old_run_config";
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "run_config.json") << old_json;
  surge::v1::RunConfig c = DefaultRunConfig();
  // A run folder stands for its run_config.json (surge report, --plan-file).
  ASSERT_TRUE(LoadYamlConfig(folder.string(), &c).ok());
  EXPECT_EQ(c.late_policy(), surge::v1::LATE_POLICY_CAP);
  EXPECT_EQ(c.assign(), surge::v1::ASSIGN_POLICY_LEAST_LOADED);
  EXPECT_EQ(c.traffic_cfg().sampler(), surge::v1::SAMPLER_KIND_GAMMA);
  ASSERT_EQ(c.traffic_cfg().stages_size(), 2);
  EXPECT_EQ(c.traffic_cfg().stages(0).profile(), surge::v1::STAGE_PROFILE_KIND_SINE);
  EXPECT_EQ(c.traffic_cfg().stages(1).ramp_up_strategy(), surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL);
  EXPECT_TRUE(ValidateRunConfig(c).ok()) << ValidateRunConfig(c);
  const std::string saved = SavedConfigJson(c, nullptr);
  for (const char* line :
       {"\"profile\": \"sine\"", "\"ramp_up_strategy\": \"exponential\"", "\"sampler\": \"gamma\"",
        "\"assign\": \"least-loaded\"", "\"late_policy\": \"cap\""}) {
    EXPECT_THAT(saved, HasSubstr(line));
  }
  surge::v1::RunConfig back = DefaultRunConfig();
  ASSERT_TRUE(LoadText(saved, &back).ok());
  EXPECT_EQ(SavedConfigJson(back, nullptr), saved);
  std::filesystem::remove_all(folder);
}

// The protobuf JSON form of the earliest run folders, its enums as the
// strings they were then (or as proto names).
TEST(EnumSpellingTest, ProtoJsonFormReadsSpellingsAndProtoNames) {
  surge::v1::RunConfig c = DefaultRunConfig();
  ASSERT_TRUE(ParseProtoJsonConfig(R"({"trafficCfg": {"rampUpStrategy": "linear",
      "rampUpStartRps": 1, "rampUpEndRps": 5, "sampler": "fixed"}, "latePolicy": "skip",
      "assign": "ASSIGN_POLICY_LEAST_LOADED", "somethingNew": 1})",
                                   &c)
                  .ok());
  EXPECT_EQ(c.traffic_cfg().ramp_up_strategy(), surge::v1::RAMP_UP_STRATEGY_LINEAR);
  EXPECT_EQ(c.traffic_cfg().sampler(), surge::v1::SAMPLER_KIND_FIXED);
  EXPECT_EQ(c.late_policy(), surge::v1::LATE_POLICY_SKIP);
  EXPECT_EQ(c.assign(), surge::v1::ASSIGN_POLICY_LEAST_LOADED);
  EXPECT_FALSE(ParseProtoJsonConfig("[1]", &c).ok());
}

// Spellings are matched exactly; a text that is none is kept and refused by
// the validator in field order, naming the flag (and the sampler's note),
// as the texts with allowed values were; the field counts as given, so the
// rules across fields add no second, misleading line.
TEST(EnumSpellingTest, UnknownSpellingsAreRefusedOnceWithTheFlag) {
  surge::v1::RunConfig c = DefaultRunConfig();
  ASSERT_TRUE(LoadText("late_policy: SKIP\ntraffic_cfg: {sampler: poisson}\n", &c).ok());
  EXPECT_TRUE(c.traffic_cfg().has_sampler());
  EXPECT_EQ(std::string(ValidateRunConfig(c).message()),
            "invalid configuration:\n  traffic_cfg.sampler = \"poisson\": must be \"fixed\", "
            "\"gamma\" or \"mmpp\" (flag --sampler; default: gamma when burstiness > 0, else "
            "fixed)\n  late_policy = \"SKIP\": must be \"send\" (default), \"skip\" or \"cap\" "
            "(flag --late-policy)");
  // The text as given in a rule across fields.
  c.set_catch_up_rps(5);
  EXPECT_THAT(std::string(ValidateRunConfig(c).message()),
              HasSubstr("catch_up_rps = 5: is used only with late_policy \"cap\", not \"SKIP\""));
  c = DefaultRunConfig();
  ASSERT_TRUE(
      LoadText("traffic_cfg:\n  stages:\n    - {duration_s: 10, profile: wave}\n", &c).ok());
  // No "(no rate)" line: the stage has a profile, only not a known one.
  EXPECT_EQ(std::string(ValidateRunConfig(c).message()),
            "invalid configuration:\n  traffic_cfg.stages[0].profile = \"wave\": must be "
            "\"sine\" or \"diurnal\"");
  // An empty text (or none) is the value spelled "", or the zero value.
  c = DefaultRunConfig();
  ASSERT_TRUE(LoadText("late_policy:\ntraffic_cfg: {sampler: \"\"}\n", &c).ok());
  EXPECT_EQ(c.late_policy(), surge::v1::LATE_POLICY_SEND);
  EXPECT_TRUE(c.traffic_cfg().has_sampler());
  EXPECT_EQ(c.traffic_cfg().sampler(), surge::v1::SAMPLER_KIND_AUTO);
}

// ---------------------------------------------------------------- sessions

// The validation message of a configuration read from YAML (the defaults
// plus `yaml`); "" when it is valid.
std::string SessionMessage(const std::string& yaml) {
  surge::v1::RunConfig c;
  EXPECT_TRUE(LoadText(yaml, &c).ok()) << yaml;
  const absl::Status s = ValidateRunConfig(c);
  if (!s.ok()) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  }
  return std::string(s.message());
}

TEST(SessionConfigTest, ReadsTheSessionKeysAndAcceptsValidSessions) {
  surge::v1::RunConfig c;
  ASSERT_TRUE(LoadText("multi_turn: true\nsession_turns: 2-6\nthink_time_dist: gamma\n"
                       "think_time_mean_s: 4\nthink_time_burstiness: 0.5\nmax_sessions: 300\n",
                       &c)
                  .ok());
  EXPECT_TRUE(c.sessions().multi_turn());
  EXPECT_EQ(c.sessions().session_turns(), "2-6");
  EXPECT_EQ(c.sessions().think_time_dist(), "gamma");
  EXPECT_EQ(c.sessions().think_time_mean_s(), 4);
  EXPECT_EQ(c.sessions().think_time_burstiness(), 0.5);
  EXPECT_EQ(c.sessions().max_sessions(), 300u);
  EXPECT_TRUE(ValidateRunConfig(c).ok()) << ValidateRunConfig(c);
  EXPECT_EQ(SessionMessage("multi_turn: true\n"), "");
  EXPECT_EQ(SessionMessage("multi_turn: true\nsession_turns: 5\nthink_time_s: 0\n"), "");
  EXPECT_EQ(SessionMessage("multi_turn: true\nsession_turns: 1-1000\nthink_time_dist: "
                           "exponential\nthink_time_mean_s: 0.5\n"),
            "");
  EXPECT_EQ(SessionMessage("multi_turn: true\ndataset_name: sharegpt\ndataset_path: s.json\n"
                           "think_time_s: 2\n"),
            "");
}

TEST(SessionConfigTest, EverySessionOptionNeedsMultiTurn) {
  for (const auto& [yaml, line] : std::vector<std::pair<std::string, std::string>>{
           {"session_turns: 3", "  session_turns = \"3\": --session-turns needs --multi-turn"},
           {"think_time_s: 1.5", "  think_time_s = 1.5: --think-time-s needs --multi-turn"},
           {"think_time_dist: exponential",
            "  think_time_dist = \"exponential\": --think-time-dist needs --multi-turn"},
           {"think_time_mean_s: 2",
            "  think_time_mean_s = 2: --think-time-mean-s needs --multi-turn"},
           {"think_time_burstiness: 0.5",
            "  think_time_burstiness = 0.5: --think-time-burstiness needs --multi-turn"},
           {"max_sessions: 10", "  max_sessions = 10: --max-sessions needs --multi-turn"}}) {
    const std::string m = SessionMessage(yaml + "\n");
    EXPECT_THAT(m, HasSubstr(line + " (multi_turn: true)")) << yaml;
    EXPECT_THAT(SessionMessage(yaml + "\nmulti_turn: false\n"), HasSubstr(line)) << yaml;
  }
}

TEST(SessionConfigTest, AFixedThinkTimeOrADistributionWithItsMean) {
  EXPECT_THAT(SessionMessage("multi_turn: true\nthink_time_s: 1\nthink_time_dist: exponential\n"
                             "think_time_mean_s: 2\n"),
              HasSubstr("  think_time_s = 1: cannot be combined with think_time_dist "
                        "\"exponential\": give a fixed think time (--think-time-s) or drawn ones "
                        "(--think-time-dist with --think-time-mean-s), not both"));
  for (const char* dist : {"fixed", "exponential", "gamma"}) {
    EXPECT_THAT(SessionMessage(absl::StrCat("multi_turn: true\nthink_time_dist: ", dist, "\n")),
                HasSubstr(absl::StrCat("  think_time_mean_s = (not set): is required with "
                                       "think_time_dist \"",
                                       dist,
                                       "\": the mean think time, s > 0 (flag "
                                       "--think-time-mean-s)")));
  }
  EXPECT_THAT(SessionMessage("multi_turn: true\nthink_time_mean_s: 2\n"),
              HasSubstr("  think_time_mean_s = 2: is the mean of drawn think times, but "
                        "think_time_dist is not given; give --think-time-dist"));
  EXPECT_THAT(SessionMessage("multi_turn: true\nthink_time_dist: gamma\nthink_time_mean_s: 0\n"),
              HasSubstr("  think_time_mean_s = 0: must be a number of seconds > 0"));
  EXPECT_THAT(SessionMessage("multi_turn: true\nthink_time_s: -1\n"),
              HasSubstr("  think_time_s = -1: must be a number of seconds >= 0"));
  EXPECT_THAT(SessionMessage("multi_turn: true\nthink_time_dist: weibull\nthink_time_mean_s: 1\n"),
              HasSubstr("  think_time_dist = \"weibull\": must be"));
}

TEST(SessionConfigTest, BurstinessOnlyShapesGammaThinkTimes) {
  EXPECT_THAT(SessionMessage("multi_turn: true\nthink_time_burstiness: 0.5\n"),
              HasSubstr("  think_time_burstiness = 0.5: only shapes gamma think times, but "
                        "think_time_dist is not given; give --think-time-dist gamma or drop "
                        "--think-time-burstiness"));
  EXPECT_THAT(SessionMessage("multi_turn: true\nthink_time_dist: exponential\n"
                             "think_time_mean_s: 1\nthink_time_burstiness: 2\n"),
              HasSubstr("  think_time_burstiness = 2: only shapes gamma think times, but "
                        "think_time_dist is \"exponential\""));
  EXPECT_THAT(SessionMessage("multi_turn: true\nthink_time_dist: gamma\nthink_time_mean_s: 1\n"
                             "think_time_burstiness: 0\n"),
              HasSubstr("  think_time_burstiness = 0: must be a number > 0"));
}

TEST(SessionConfigTest, SessionTurnsIsNOrMinMaxWithinOneToAThousand) {
  for (const char* bad : {"0", "1001", "5-2", "0-4", "2-1001", "three", "2-", "1-2-3", "2.5"}) {
    EXPECT_THAT(SessionMessage(absl::StrCat("multi_turn: true\nsession_turns: \"", bad, "\"\n")),
                HasSubstr(absl::StrCat("  session_turns = \"", bad,
                                       "\": must be N or MIN-MAX, whole numbers with 1 <= MIN <= "
                                       "MAX <= 1000 (e.g. 3 or 2-6) (flag --session-turns)")))
        << bad;
  }
  for (const char* good : {"1", "1000", "2-6", "4-4"}) {
    EXPECT_EQ(SessionMessage(absl::StrCat("multi_turn: true\nsession_turns: \"", good, "\"\n")), "")
        << good;
  }
  EXPECT_THAT(SessionMessage("multi_turn: true\nsession_turns: 3\ndataset_name: sharegpt\n"
                             "dataset_path: s.json\n"),
              HasSubstr("  session_turns = \"3\": a sharegpt file gives each session's turns (its "
                        "conversation's human turns); drop --session-turns"));
}

TEST(SessionConfigTest, SessionsAreNotAvailableWithTheseYet) {
  for (const char* name : {"jsonl", "mooncake"}) {
    EXPECT_THAT(SessionMessage(absl::StrCat("multi_turn: true\ndataset_name: ", name,
                                            "\ndataset_path: d.jsonl\n")),
                HasSubstr(absl::StrCat("  multi_turn = true: sessions are not available with "
                                       "dataset_name \"",
                                       name, "\" yet: they come from --dataset-name sharegpt")))
        << name;
  }
  EXPECT_THAT(SessionMessage("multi_turn: true\ndataset_name: mooncake\ndataset_path: t.jsonl\n"
                             "trace_replay: true\n"),
              HasSubstr("  multi_turn = true: sessions are not available with trace_replay yet"));
  EXPECT_THAT(SessionMessage("multi_turn: true\nclasses:\n  - {name: chat, request_rate: 2}\n"
                             "  - {name: batch, request_rate: 1}\n"),
              HasSubstr("  multi_turn = true: sessions are not available with traffic classes (2 "
                        "classes) yet"));
  EXPECT_THAT(SessionMessage("multi_turn: true\nrandom_prefix_len: 64\n"),
              HasSubstr("  random_prefix_len = 64: shared prefixes are not available with "
                        "multi-turn sessions yet"));
  // Without multi_turn the same options are fine.
  EXPECT_EQ(SessionMessage("classes:\n  - {name: chat, request_rate: 2}\n"), "");
  EXPECT_EQ(SessionMessage("random_prefix_len: 64\n"), "");
}

TEST(SessionConfigTest, MaxSessionsIsAtLeastOne) {
  EXPECT_THAT(SessionMessage("multi_turn: true\nmax_sessions: 0\n"),
              HasSubstr("  max_sessions = 0: must be a number of sessions >= 1; leave it out for "
                        "no cap (flag --max-sessions)"));
  EXPECT_EQ(SessionMessage("multi_turn: true\nmax_sessions: 1\n"), "");
}

}  // namespace
}  // namespace surge::coordinator
