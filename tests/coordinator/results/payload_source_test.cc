// The Mooncake payload source (R-MET-3): lines become payloads; a bad line is
// named.
#include "coordinator/dataset/payload_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::FreshDir;
using ::testing::HasSubstr;

TEST(PayloadSourceTest, MooncakeLinesBecomePayloadsAndCycle) {
  const fs::path path = FreshDir("mooncake") / "tiny_trace.jsonl";
  std::ofstream(path)
      << R"({"timestamp": 0, "input_length": 100, "output_length": 7, "hash_ids": [0]}
{"timestamp": 3000, "input_length": 2500, "output_length": 0, "hash_ids": [0, 1]}
)";
  surge::v1::DatasetConfig d;
  d.set_dataset_name("mooncake");
  d.set_dataset_path(path.string());
  auto source = MakePayloadSource(d, 3, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->name(), "tiny_trace");
  EXPECT_EQ((*source)->At(0).input_tokens, 100u);
  EXPECT_EQ((*source)->At(0).max_tokens, 7u);
  EXPECT_EQ((*source)->At(1).max_tokens, 1u);  // 0 asks for one token
  EXPECT_EQ((*source)->At(2).input_tokens, 100u);
  ASSERT_EQ((*source)->warnings().size(), 1u);
  EXPECT_THAT((*source)->warnings()[0], HasSubstr("reused from the top"));
}

TEST(PayloadSourceTest, BadLineNamesFileAndLine) {
  const fs::path path = FreshDir("mooncake_bad") / "bad.jsonl";
  std::ofstream(path) << "{\"input_length\": 5, \"output_length\": 2}\n{\"input_length\": -1}\n";
  surge::v1::DatasetConfig d;
  d.set_dataset_name("mooncake");
  d.set_dataset_path(path.string());
  auto source = MakePayloadSource(d, 5, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(std::string(source.status().message()), HasSubstr("line 2"));
  EXPECT_THAT(std::string(source.status().message()), HasSubstr("input_length"));
}

}  // namespace
}  // namespace surge::coordinator
