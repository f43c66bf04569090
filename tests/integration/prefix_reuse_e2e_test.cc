// Shared prefixes end to end: `surge run` against its built-in server with
// a prefix cache. With room for every prefix the measured reuse (the
// server's cached_tokens) agrees with the planned one; with room for two of
// four prefixes (least recently used evicted) it falls clearly below and the
// summary warns. The Mooncake trace's planned reuse at 512-token blocks, as
// `surge plan` prints it, matches a computation written here from the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// The largest cached_tokens of the details file: the shared prefix as the
// server's cache holds it (whole blocks of the server's own tokens).
uint64_t LargestCached(const fs::path& details) {
  std::ifstream in(details);
  uint64_t largest = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("cached_tokens")) largest = std::max(largest, j["cached_tokens"].get<uint64_t>());
  }
  return largest;
}

std::string PrefixRun(const fs::path& out, uint64_t cache_blocks) {
  return "run --num-prompts 1000 --request-rate 500 --workers 1 --random-prefix-len 512 "
         "--random-prefix-groups 4 --random-input-len 64 --random-output-len 2 --sim-ttft-ms 1 "
         "--sim-itl-ms 1 --sim-block-tokens 16 --sim-cache-blocks " +
         std::to_string(cache_blocks) + " --seed 11 --output-dir " + out.string();
}

TEST(PrefixReuseEndToEndTest, MeasuredFollowsPlannedUntilTheCacheIsTooSmall) {
  // A cache with room for everything: all four prefixes stay.
  const fs::path out = AbsentDir("surge_prefix_reuse_big");
  const Result big = RunSurge(PrefixRun(out, 100000));
  ASSERT_EQ(big.exit_code, 0) << big.output;
  const fs::path folder = ResultsFolder(big.output);
  const nlohmann::json summary = ReadJson(folder / "synthetic.json");
  ASSERT_TRUE(summary.contains("prefix_reuse")) << summary.dump(2);
  const nlohmann::json& reuse = summary["prefix_reuse"];
  // Planned, exactly: 996 of 1,000 requests repeat their group's 32 blocks
  // of 16 tokens (the first of each of the 4 groups cannot), of 576 tokens.
  const double planned = 996.0 * 512.0 / (1000.0 * 576.0);
  EXPECT_NEAR(reuse["planned_reuse"].get<double>(), planned, 1e-6);
  EXPECT_EQ(reuse["measured"], "reported");
  EXPECT_EQ(reuse["reported_requests"], 1000);
  const double measured = reuse["measured_reuse"].get<double>();
  EXPECT_NEAR(measured, planned, 0.02) << "planned " << planned << ", measured " << measured;
  EXPECT_FALSE(reuse.contains("warning"));
  EXPECT_THAT(big.output, HasSubstr("planned prefix reuse: 88.5% of prompt tokens"));
  EXPECT_THAT(big.output, HasSubstr("prefix reuse: planned 88.5% (blocks of 16 tokens)"));
  EXPECT_THAT(big.output, Not(HasSubstr("the server's cache held less")));
  // The actual page draws the measured reuse beside the rate.
  std::ifstream page_in(folder / "synthetic_rps_distribution_plot_with_actual_rps.html");
  const std::string page((std::istreambuf_iterator<char>(page_in)), {});
  EXPECT_THAT(page, HasSubstr("Measured prefix reuse"));
  EXPECT_THAT(page, HasSubstr("Planned prefix reuse"));

  // Room for two prefixes only: requests of the other groups evict them.
  const uint64_t prefix_blocks = LargestCached(folder / "synthetic_details.jsonl") / 16;
  ASSERT_GT(prefix_blocks, 10u);
  const fs::path small_out = AbsentDir("surge_prefix_reuse_small");
  const Result small = RunSurge(PrefixRun(small_out, 2 * prefix_blocks));
  ASSERT_EQ(small.exit_code, 0) << small.output;
  const nlohmann::json small_summary =
      ReadJson(ResultsFolder(small.output) / "synthetic.json");
  const nlohmann::json& small_reuse = small_summary["prefix_reuse"];
  EXPECT_NEAR(small_reuse["planned_reuse"].get<double>(), planned, 1e-6);
  const double small_measured = small_reuse["measured_reuse"].get<double>();
  EXPECT_LT(small_measured, planned - 0.3) << small.output;
  EXPECT_GT(small_measured, 0.0);
  EXPECT_THAT(small_reuse["warning"].get<std::string>(),
              HasSubstr("the server's cache held less than the plan reuses: cache too small, "
                        "eviction, or routing across replicas"));
  EXPECT_THAT(small.output,
              HasSubstr("WARNING: measured prefix reuse"));
}

// The planned reuse of the repository's Mooncake trace, computed here from
// the file: a line's prefix of k hash_ids is shared when an earlier line
// started with the same k ids (kept as a set of id lists, not hashes); its
// shared tokens are min(k · 512, input_length) floored to 512.
struct TraceReuse {
  uint64_t shared = 0, prompt = 0;
};
TraceReuse ComputeTraceReuse(const fs::path& trace) {
  std::ifstream in(trace);
  std::set<std::vector<uint64_t>> seen;
  TraceReuse r;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    const uint64_t input = j["input_length"].get<uint64_t>();
    const std::vector<uint64_t> ids =
        j.contains("hash_ids") ? j["hash_ids"].get<std::vector<uint64_t>>()
                               : std::vector<uint64_t>();
    size_t k = 0;
    while (k < ids.size() &&
           seen.count(std::vector<uint64_t>(ids.begin(), ids.begin() + k + 1)) > 0) {
      ++k;
    }
    for (size_t len = 1; len <= ids.size(); ++len) {
      seen.insert(std::vector<uint64_t>(ids.begin(), ids.begin() + len));
    }
    r.shared += std::min<uint64_t>(k * 512, input) / 512 * 512;
    r.prompt += input;
  }
  return r;
}

TEST(PrefixReuseEndToEndTest, MooncakeTracePlannedReuseAtBlock512) {
  const fs::path trace =
      fs::path(SURGE_SOURCE_DIR) / "data/traces/mooncake_conversation_trace.jsonl";
  const TraceReuse expected = ComputeTraceReuse(trace);
  ASSERT_GT(expected.shared, 0u);
  const fs::path out = AbsentDir("surge_prefix_reuse_mooncake");
  const Result r = RunSurge("plan --dataset-name mooncake --dataset-path " + trace.string() +
                            " --num-prompts 12031 --request-rate 100 --prefix-block-tokens 512 "
                            "--output-dir " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  const std::regex re(
      "planned prefix reuse: ([0-9.]+)% of prompt tokens \\(([0-9]+) of ([0-9]+) repeat, in "
      "blocks of 512 tokens");
  ASSERT_TRUE(std::regex_search(r.output, m, re)) << r.output;
  EXPECT_EQ(std::stoull(m[2].str()), expected.shared);
  EXPECT_EQ(std::stoull(m[3].str()), expected.prompt);
  const double percent = 100.0 * expected.shared / expected.prompt;
  EXPECT_NEAR(std::stod(m[1].str()), percent, 0.05);
}

}  // namespace
}  // namespace surge::testing
