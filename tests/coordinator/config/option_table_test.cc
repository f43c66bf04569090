// The option table (R-CFG-1): YAML keys, flags, defaults, checks, the saved
// JSON and the flags that carry a message all made from the OptionSpec of each field, on
// a test configuration with every kind of field (testproto/), and on
// RunConfig itself (every option declared once, today's flags kept).
#include "coordinator/config/option_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "google/protobuf/util/message_differencer.h"
#include "option_table_test.pb.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const OptionTable& TestTable() { return OptionTable::For(surge::test::Root::descriptor()); }

std::string UnknownText(const std::string& section, const std::string& key) {
  return "unknown key " + key + " in [" + section + "]";
}

ErrorLines Read(const std::string& yaml, surge::test::Root* root) {
  ErrorLines errors;
  TestTable().ReadYaml(YAML::Load(yaml), UnknownText, root, &errors);
  return errors;
}

TEST(OptionTableTest, ReadsListsOfMappingsEnumsListsAndFlattenedKeys) {
  surge::test::Root root;
  TestTable().SetDefaults(&root);
  EXPECT_EQ(root.count(), 3u);          // default_value
  EXPECT_EQ(root.inner().mode(), "a");  // a flattened sub-message's default
  const ErrorLines errors = Read(
      "traffic:\n"
      "  shape: ramp-up\n"
      "  stages:\n"
      "    - {duration_s: 10, rate_rps: 5}\n"
      "    - {duration_s: 2.5, rate_rps: .inf}\n"
      "tags: [x, y]\n"
      "count: 7\n"
      "on: yes\n"
      "offset: -4\n"
      "in_mode: b\n",
      &root);
  EXPECT_THAT(errors, IsEmpty());
  EXPECT_EQ(root.traffic().shape(), surge::test::SHAPE_RAMP_UP);
  ASSERT_EQ(root.traffic().stages_size(), 2);
  EXPECT_EQ(root.traffic().stages(0).duration_s(), 10);
  EXPECT_EQ(root.traffic().stages(0).rate_rps(), 5);
  EXPECT_EQ(root.traffic().stages(1).duration_s(), 2.5);
  EXPECT_TRUE(std::isinf(root.traffic().stages(1).rate_rps()));
  EXPECT_THAT(root.tags(), ElementsAre("x", "y"));
  EXPECT_EQ(root.count(), 7u);
  EXPECT_TRUE(root.on());
  EXPECT_EQ(root.offset(), -4);
  EXPECT_EQ(root.inner().mode(), "b");
  ErrorLines checks;
  TestTable().Check(root, &checks);
  EXPECT_THAT(checks, IsEmpty());
}

TEST(OptionTableTest, WrongShapesNameTheFieldPathAndWhatIsAllowed) {
  surge::test::Root root;
  const ErrorLines errors = Read(
      "traffic:\n"
      "  shape: round\n"
      "  stages:\n"
      "    - {duration_s: x}\n"
      "    - 5\n"
      "    - {durasion_s: 1}\n"
      "tags: one\n"
      "count: -1\n"
      "on: maybe\n"
      "offset: 1.5\n",
      &root);
  EXPECT_THAT(
      errors,
      ElementsAre(
          "  traffic.stages[0].duration_s = \"x\": must be a number",
          "  traffic.stages[1] = \"5\": must be a mapping of duration_s, rate_rps",
          "  traffic.stages[2].durasion_s = \"1\": unknown key durasion_s in [traffic.stages[2]]",
          "  tags = \"one\": must be a list of strings",
          "  count = \"-1\": must be a whole number >= 0",
          "  on = \"maybe\": must be true or false", "  offset = \"1.5\": must be a whole number"));
  // A text that is no spelling of the enum is kept and reported by Check,
  // in field order, as a text with allowed values is.
  ErrorLines checks;
  TestTable().Check(root, &checks);
  EXPECT_THAT(checks, Contains("  traffic.shape = \"round\": must be \"unspecified\", \"flat\" "
                               "or \"ramp-up\" (flag --shape)"));
  EXPECT_THAT(Read("tags: [a, {b: 1}]\n", &root),
              ElementsAre("  tags[1] = a mapping: must be a string"));
  ErrorLines mapping = Read("traffic: [1]\n", &root);
  EXPECT_THAT(mapping, ElementsAre("  traffic = a list: must be a mapping of shape, stages: "
                                   "[{duration_s, rate_rps}]"));
}

TEST(OptionTableTest, ChecksBoundsOfListItemsAndNameTheFlag) {
  surge::test::Root root;
  TestTable().SetDefaults(&root);
  ASSERT_THAT(Read("traffic: {stages: [{duration_s: 0}, {duration_s: 1, rate_rps: -.inf}]}\n"
                   "count: 11\nin_mode: c\n",
                   &root),
              IsEmpty());
  ErrorLines errors;
  TestTable().Check(root, &errors);
  EXPECT_THAT(errors, ElementsAre("  traffic.stages[0].duration_s = 0: must be a finite number > 0",
                                  "  traffic.stages[1].rate_rps = -inf: must be a number >= 0, or "
                                  "inf",
                                  "  count = 11: must be <= 10 (flag --count)",
                                  "  in_mode = \"c\": must be \"a\" (default) or \"b\" (flag "
                                  "--in-mode)"));
}

TEST(OptionTableTest, FlagsComeFromTheSpecs) {
  std::vector<std::string> names;
  for (const OptionFlag& f : TestTable().flags()) names.push_back(f.name + "=" + f.field);
  // Lists of mappings and flag "-" have none; a nested field's flag is its
  // key; a flattened one's carries the prefix.
  EXPECT_THAT(names, ElementsAre("shape=traffic.shape", "tag=tags", "count=count", "on=on",
                                 "offset=offset", "in-mode=in_mode"));
  EXPECT_EQ(TestTable().FindFlag("in-mode")->help, "Inner: mode a or b.");
  EXPECT_EQ(TestTable().FindFlag("count")->help, "Count.");
  surge::test::Root root;
  EXPECT_EQ(TestTable().SetFlag(*TestTable().FindFlag("tag"), "a", &root), "");
  EXPECT_EQ(TestTable().SetFlag(*TestTable().FindFlag("tag"), "b", &root), "");
  EXPECT_THAT(root.tags(), ElementsAre("a", "b"));  // a list flag adds
  EXPECT_EQ(TestTable().SetFlag(*TestTable().FindFlag("shape"), "flat", &root), "");
  EXPECT_EQ(root.traffic().shape(), surge::test::SHAPE_FLAT);
  EXPECT_EQ(TestTable().SetFlag(*TestTable().FindFlag("count"), "many", &root),
            "  count = \"many\": must be a whole number >= 0 (flag --count)");
  EXPECT_EQ(TestTable().SetFlag(*TestTable().FindFlag("on"), "nope", &root),
            "  on = \"nope\": must be true or false (flag --on)");
}

TEST(OptionTableTest, SavedJsonReadsBackToTheSameMessage) {
  surge::test::Root root;
  TestTable().SetDefaults(&root);
  ASSERT_THAT(Read("traffic: {shape: flat, stages: [{duration_s: 3, rate_rps: .inf}, "
                   "{duration_s: 1}]}\ntags: [t]\ncount: 0\noffset: -2\nsecret_path: /s\n",
                   &root),
              IsEmpty());
  const nlohmann::ordered_json saved = TestTable().Save(root);
  EXPECT_EQ(saved.dump(),
            "{\"traffic\":{\"stages\":[{\"duration_s\":3.0,\"rate_rps\":\"inf\"},{\"duration_s\":"
            "1.0}],\"shape\":\"flat\"},\"tags\":[\"t\"],\"count\":0,\"on\":false,\"offset\":-2}");
  surge::test::Root back;
  TestTable().SetDefaults(&back);
  ASSERT_THAT(Read(saved.dump(), &back), IsEmpty());
  root.clear_secret_path();  // SAVE_NEVER
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(root, back))
      << root.DebugString() << "\n"
      << back.DebugString();
}

// RunConfig: every option once, every flag of today kept (R-UI-2 names).
TEST(OptionTableTest, RunConfigKeepsEveryFlagAndKey) {
  const OptionTable& table = OptionTable::For(surge::v1::RunConfig::descriptor());
  std::vector<std::string> flags;
  for (const OptionFlag& f : table.flags()) {
    flags.push_back(f.name);
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
  std::sort(flags.begin(), flags.end());
  EXPECT_EQ(
      absl::StrJoin(flags, " "),
      "abort-after-connect-failures api-key-file assign base-url burstiness ca-cert "
      "catch-up-rps dataset-name dataset-path endpoint extra-body header insecure "
      "late-policy late-threshold-ms lateness-alarm-ms max-concurrency max-sessions "
      "metric-percentiles "
      "metrics-host metrics-port model multi-turn num-prompts num-warmups output-dir pacer-cpu "
      "pacer-realtime "
      "prefix-block-tokens ramp-up-end-rps ramp-up-start-rps ramp-up-strategy "
      "random-input-len random-len-dist random-len-stddev random-output-len "
      "random-prefix-groups random-prefix-len random-range-ratio random-zipf-s "
      "request-rate request-timeout-s sampler saturation-window-s seed "
      "server-metrics server-metrics-interval-s session-turns sim-block-tokens sim-cache-blocks "
      "sim-decode-ms-base sim-decode-ms-per-seq "
      "sim-fault-429 sim-fault-500 sim-fault-503 sim-fault-after-tokens "
      "sim-fault-error-event sim-fault-malformed sim-fault-reset sim-fault-seed "
      "sim-fault-split sim-fault-stall sim-fault-stall-ms sim-itl-ms sim-max-num-seqs "
      "sim-prefill-ms-per-token sim-tokenizer-model sim-ttft-ms steady-state-s "
      "stop-on-alarm stop-on-saturation target-address-policy think-time-burstiness "
      "think-time-dist think-time-mean-s think-time-s tokenizer trace-replay "
      "trace-time-scale wait-for-target "
      "workers "
      "workers-force");
  EXPECT_EQ(
      table.root().KeyList(),
      "abort_after_connect_failures, address_policy, api_key_file, assign, base_url, ca_cert_path, "
      "catch_up_rps, dataset_name, dataset_path, endpoint, extra_body_json, headers, "
      "insecure_skip_verify, late_policy, late_threshold_ms, lateness_alarm_ms, "
      "max_concurrency, max_sessions, metric_percentiles, metrics_host, metrics_port, model, "
      "multi_turn, num_prompts, "
      "num_warmups, "
      "output_dir, pacer_cpu, pacer_realtime, prefix_block_tokens, random_input_len, "
      "random_len_dist, random_len_stddev, random_output_len, random_prefix_groups, "
      "random_prefix_len, random_range_ratio, random_zipf_s, request_rate, "
      "request_timeout_s, saturation_window_s, seed, server_metrics, "
      "server_metrics_interval_s, session_turns, sim_block_tokens, sim_cache_blocks, "
      "sim_decode_ms_base, "
      "sim_decode_ms_per_seq, sim_fault_429, "
      "sim_fault_500, sim_fault_503, sim_fault_after_tokens, sim_fault_error_event, "
      "sim_fault_malformed, sim_fault_reset, sim_fault_seed, sim_fault_split, "
      "sim_fault_stall, sim_fault_stall_ms, sim_itl_ms, sim_max_num_seqs, "
      "sim_prefill_ms_per_token, "
      "sim_tokenizer_model, sim_ttft_ms, steady_state_s, stop_on_alarm, stop_on_saturation, "
      "stream, think_time_burstiness, think_time_dist, think_time_mean_s, think_time_s, "
      "tokenizer, trace_replay, trace_time_scale, wait_for_target_s, workers, workers_force, "
      "traffic_cfg: "
      "{burstiness, ramp_up_end_rps, ramp_up_start_rps, ramp_up_strategy, sampler, "
      "stages: [{amplitude_rps, burstiness, duration_s, max_rps, mean_rps, min_rps, "
      "num_requests, peak_at_s, period_s, phase_s, profile, ramp_up_end_rps, "
      "ramp_up_start_rps, ramp_up_strategy, rate_rps}], spikes: [{at_s, duration_s, "
      "rate_multiplier}], mmpp_states: [{mean_dwell_s, rate_multiplier}]}, goodput: "
      "{e2el_ms, tpot_ms, ttft_ms}, "
      "classes: [{dataset_name, dataset_path, headers, model, name, num_prompts, "
      "random_input_len, random_output_len, request_rate, traffic_cfg: {burstiness, "
      "ramp_up_end_rps, ramp_up_start_rps, ramp_up_strategy, sampler, stages: [{amplitude_rps, "
      "burstiness, duration_s, max_rps, mean_rps, min_rps, num_requests, peak_at_s, period_s, "
      "phase_s, profile, ramp_up_end_rps, ramp_up_start_rps, ramp_up_strategy, rate_rps}], "
      "spikes: [{at_s, duration_s, rate_multiplier}], mmpp_states: [{mean_dwell_s, "
      "rate_multiplier}]}, goodput: {e2el_ms, tpot_ms, ttft_ms}}]");
  // `surge sim-server` names the same options without the prefix, after its
  // own listen options (root_only: no keys of a run).
  std::vector<std::string> sim;
  for (const OptionFlag& f : OptionTable::For(surge::v1::SimServerConfig::descriptor()).flags()) {
    sim.push_back(f.name);
  }
  EXPECT_EQ(absl::StrJoin(sim, " "),
            "host port request-log request-log-bodies model tls-cert tls-key api-key-file ttft-ms "
            "itl-ms fault-429 "
            "fault-500 "
            "fault-503 fault-reset fault-malformed fault-stall fault-split fault-error-event "
            "fault-after-tokens fault-stall-ms fault-seed cache-blocks block-tokens "
            "prefill-ms-per-token tokenizer-model max-num-seqs decode-ms-base decode-ms-per-seq");
}

// A root_only field is a flag of its own message's table, and no key, flag
// or saved value of a table that reaches the message through another.
TEST(OptionTableTest, RootOnlyFieldsBelongToTheirOwnTableOnly) {
  const OptionTable& inner = OptionTable::For(surge::test::Inner::descriptor());
  std::vector<std::string> names;
  for (const OptionFlag& f : inner.flags()) names.push_back(f.name);
  EXPECT_THAT(names, ElementsAre("mode", "place"));
  EXPECT_EQ(WithDefaults<surge::test::Inner>().place(), "here");
  EXPECT_EQ(TestTable().FindFlag("in-place"), nullptr);
  EXPECT_EQ(TestTable().root().Find("in_place"), nullptr);
  surge::test::Root root = WithDefaults<surge::test::Root>();
  EXPECT_EQ(root.inner().place(), "");  // no default through Root
  root.mutable_inner()->set_place("there");
  EXPECT_FALSE(TestTable().Save(root).contains("in_place"));
}

// FlagArgs gives back, through SetFlag over the defaults, the very message:
// doubles with 17 digits, list items one flag each, bools as --x=VALUE,
// unset optional fields and empty texts with an empty default left out.
TEST(OptionTableTest, FlagArgsCarryTheMessageExactly) {
  surge::test::Root root = WithDefaults<surge::test::Root>();
  root.mutable_traffic()->set_shape(surge::test::SHAPE_RAMP_UP);
  root.add_tags("a");
  root.add_tags("b c");
  root.clear_count();
  root.set_on(true);
  root.set_offset(-7);
  root.mutable_inner()->set_mode("b");
  const std::vector<std::string> args = TestTable().FlagArgs(root);
  EXPECT_THAT(args, ElementsAre("--shape", "ramp-up", "--tag", "a", "--tag", "b c", "--on=true",
                                "--offset", "-7", "--in-mode", "b"));
  surge::test::Root back = WithDefaults<surge::test::Root>();
  back.clear_count();
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i].substr(2);
    std::string value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else {
      value = args[++i];
    }
    const OptionFlag* flag = TestTable().FindFlag(name);
    ASSERT_NE(flag, nullptr) << name;
    EXPECT_EQ(TestTable().SetFlag(*flag, value, &back), "");
  }
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(root, back))
      << root.DebugString() << "\n"
      << back.DebugString();

  surge::v1::SimServerConfig sim;
  sim.set_ttft_ms(0.1);  // not exact in binary: 17 digits bring the same double back
  sim.set_fault_stall_ms(1500);
  const std::vector<std::string> sim_args =
      OptionTable::For(surge::v1::SimServerConfig::descriptor()).FlagArgs(sim);
  const auto ttft = std::find(sim_args.begin(), sim_args.end(), "--ttft-ms");
  ASSERT_TRUE(ttft != sim_args.end() && ttft + 1 != sim_args.end());
  EXPECT_EQ(*(ttft + 1), "0.10000000000000001");
  EXPECT_EQ(std::strtod((ttft + 1)->c_str(), nullptr), 0.1);
  EXPECT_THAT(sim_args, ::testing::Contains("1500"));
  // Empty texts whose default is empty too are left out; the port is not.
  EXPECT_THAT(sim_args, ::testing::Not(::testing::Contains("--request-log")));
  EXPECT_THAT(sim_args, ::testing::Contains("--port"));
}

}  // namespace
}  // namespace surge::coordinator
