// Run folder layout (R-PLOT-1) and its start time.
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

#include "coordinator/results/run_files.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::FreshDir;

TEST(RunFolderTest, TimestampLayoutWithSuffixesAndModelSlashes) {
  const fs::path out = FreshDir("run_folder_test");
  setenv("TZ", "UTC", 1);
  const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
  auto a = CreateRunFolder(out, "org/model", when);
  auto b = CreateRunFolder(out, "org/model", when);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, out / "20260101_000000" / "performances" / "org_model");
  EXPECT_EQ(*b, out / "20260101_000000_1" / "performances" / "org_model");
  EXPECT_TRUE(fs::is_directory(*b));
}

TEST(RunFolderTest, StartTimeTextAndFromFolderName) {
  setenv("TZ", "UTC", 1);
  const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
  EXPECT_EQ(FormatLocalTime(when), "2026-01-01 00:00:00 +0000");
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015/performances/org_model"),
            "2026-01-01 09:30:15 (local time)");
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015_2/performances/m/"),
            "2026-01-01 09:30:15 (local time)");
  EXPECT_EQ(RunStartFromFolder("somewhere/else"), "");
  EXPECT_EQ(RunStartFromFolder("out/2026x101_093015/performances/m"), "");
}

}  // namespace
}  // namespace surge::coordinator
