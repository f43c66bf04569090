// Shared prefixes of synthetic prompts and the planned reuse: exact shared
// token counts, chains, block flooring, groups drawn from their own stream.
#include "coordinator/dataset/prefix_reuse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/prompt_builder.h"
#include "coordinator/dataset/payload_source.h"
#include "tests/testing/dataset_files.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::DatasetAt;
using ::surge::testing::WriteDatasetFile;

surge::v1::DatasetConfig Synthetic(uint32_t input_len, uint32_t prefix_len, uint32_t groups) {
  surge::v1::DatasetConfig d;
  d.set_dataset_name("synthetic");
  d.set_random_input_len(input_len);
  d.set_random_output_len(8);
  d.set_random_prefix_len(prefix_len);
  d.set_random_prefix_groups(groups);
  return d;
}

TEST(PlannedReuseCounterTest, LeadingChainTimesIdTokensCappedAndFloored) {
  PlannedReuseCounter c(16);
  EXPECT_EQ(c.Add({1, 2, 3}, 512, 1100), 0u);     // nothing sent before
  EXPECT_EQ(c.Add({1, 2, 4}, 512, 1300), 1024u);  // ids 1, 2 seen as a chain
  EXPECT_EQ(c.Add({1, 2, 3}, 512, 1100), 1088u);  // 1536 capped at 1100, floored to 16
  EXPECT_EQ(c.Add({5, 1, 2}, 512, 1536), 0u);     // 1, 2 after another head: new chains
  EXPECT_EQ(c.Add({5, 1}, 512, 700), 688u);       // 1024 capped at 700, floored to 16
  EXPECT_EQ(c.Add({}, 512, 50), 0u);
  EXPECT_EQ(c.totals().requests, 6u);
  EXPECT_EQ(c.totals().shared_tokens, 1024u + 1088u + 688u);
  EXPECT_EQ(c.totals().prompt_tokens, 1100u + 1300u + 1100u + 1536u + 700u + 50u);
}

TEST(PlannedReuseCounterTest, BlocksLargerThanIdsFloorToWholeBlocks) {
  PlannedReuseCounter c(1000);
  EXPECT_EQ(c.Add({1, 2, 3}, 512, 2000), 0u);
  EXPECT_EQ(c.Add({1, 2, 3}, 512, 2000), 1000u);  // 1536 → 1 block of 1000
  EXPECT_EQ(c.Add({1}, 512, 600), 0u);            // 512 < one block
}

TEST(SyntheticPrefixesTest, ZeroPrefixLeavesPayloadsAsTheyWere) {
  surge::v1::DatasetConfig plain = Synthetic(100, 0, 1);
  plain.set_random_len_dist("uniform");
  plain.set_random_range_ratio(0.5);
  surge::v1::DatasetConfig groups_only = plain;
  groups_only.set_random_prefix_groups(7);
  auto a = MakePayloadSource(plain, 50, 3);
  auto b = MakePayloadSource(groups_only, 50, 3);
  ASSERT_TRUE(a.ok() && b.ok());
  for (uint64_t i = 0; i < 50; ++i) {
    const Payload x = (*a)->At(i), y = (*b)->At(i);
    EXPECT_EQ(x.input_tokens, y.input_tokens);
    EXPECT_EQ(x.max_tokens, y.max_tokens);
    EXPECT_EQ(x.prompt_seed, y.prompt_seed);
    EXPECT_EQ(y.prefix_tokens, 0u);
  }
  EXPECT_FALSE(PlanPrefixReuse(**a, 50, 16).has_value());
}

TEST(SyntheticPrefixesTest, PrefixGoesBeforeTheSameOwnLengths) {
  surge::v1::DatasetConfig plain = Synthetic(100, 0, 1);
  plain.set_random_len_dist("uniform");
  plain.set_random_range_ratio(0.5);
  surge::v1::DatasetConfig prefixed = plain;
  prefixed.set_random_prefix_len(512);
  prefixed.set_random_prefix_groups(4);
  auto a = MakePayloadSource(plain, 200, 9);
  auto b = MakePayloadSource(prefixed, 200, 9);
  ASSERT_TRUE(a.ok() && b.ok());
  std::set<uint64_t> seeds;
  for (uint64_t i = 0; i < 200; ++i) {
    const Payload x = (*a)->At(i), y = (*b)->At(i);
    EXPECT_EQ(y.input_tokens, x.input_tokens + 512);  // own length drawn as before
    EXPECT_EQ(y.max_tokens, x.max_tokens);
    EXPECT_EQ(y.prompt_seed, x.prompt_seed);
    EXPECT_EQ(y.prefix_tokens, 512u);
    seeds.insert(y.prefix_seed);
  }
  EXPECT_EQ(seeds.size(), 4u);  // every group drawn in 200 requests
}

TEST(SyntheticPrefixesTest, AGroupsTextIsByteIdentical) {
  auto s = MakePayloadSource(Synthetic(40, 64, 2), 30, 1);
  ASSERT_TRUE(s.ok());
  std::set<std::string> prefixes;
  for (uint64_t i = 0; i < 30; ++i) {
    surge::v1::Assignment a;
    FillAssignmentPayload((*s)->At(i), &a);
    const std::string prompt = BuildAssignmentPrompt(a);
    const std::string prefix = BuildPrompt(64, a.prefix_seed());
    ASSERT_EQ(prompt.substr(0, prefix.size()), prefix);
    EXPECT_EQ(prompt[prefix.size()], ' ');
    prefixes.insert(prefix);
  }
  EXPECT_EQ(prefixes.size(), 2u);
}

TEST(SyntheticPrefixesTest, GroupsDependOnTheSeedOnly) {
  auto a = MakePayloadSource(Synthetic(10, 32, 5), 100, 42);
  auto b = MakePayloadSource(Synthetic(10, 32, 5), 100, 42);
  auto c = MakePayloadSource(Synthetic(10, 32, 5), 100, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  int differ = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    EXPECT_EQ((*a)->At(i).prefix_seed, (*b)->At(i).prefix_seed);
    differ += (*a)->At(i).prefix_seed != (*c)->At(i).prefix_seed;
  }
  EXPECT_GT(differ, 50);
}

TEST(PlanPrefixReuseTest, SyntheticGroupsShareTheirWholeBlocks) {
  // 1,000 requests, 4 groups of 500 tokens: the first request of each group
  // shares nothing, every other shares 31 blocks of 16 = 496 tokens.
  auto s = MakePayloadSource(Synthetic(100, 500, 4), 1000, 5);
  ASSERT_TRUE(s.ok());
  auto r = PlanPrefixReuse(**s, 1000, 16);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->requests, 1000u);
  EXPECT_EQ(r->prompt_tokens, 1000u * 600u);
  EXPECT_EQ(r->shared_tokens, 996u * 496u);
  EXPECT_DOUBLE_EQ(r->share(), 996.0 * 496.0 / 600000.0);
}

TEST(PlanPrefixReuseTest, MooncakeHashIdsAre512TokenBlocks) {
  const fs::path path = WriteDatasetFile(
      "reuse_trace.jsonl",
      R"({"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [7, 8, 9]}
{"timestamp": 1, "input_length": 1300, "output_length": 5, "hash_ids": [7, 8, 10]}
{"timestamp": 2, "input_length": 1100, "output_length": 5, "hash_ids": [11, 12, 13]}
{"timestamp": 3, "input_length": 100, "output_length": 5}
)");
  auto s = MakePayloadSource(DatasetAt("mooncake", path), 4, 0);
  ASSERT_TRUE(s.ok());
  auto r512 = PlanPrefixReuse(**s, 4, 512);
  ASSERT_TRUE(r512.has_value());
  EXPECT_EQ(r512->shared_tokens, 1024u);
  EXPECT_EQ(r512->prompt_tokens, 3600u);
  // Rows reused from the top: the second pass shares every block it had.
  auto twice = PlanPrefixReuse(**s, 8, 16);
  ASSERT_TRUE(twice.has_value());
  EXPECT_EQ(twice->shared_tokens, 1024u + (1088u + 1296u + 1088u));
}

}  // namespace
}  // namespace surge::coordinator
