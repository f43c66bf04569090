// Run folder layout (R-PLOT-1) and its start time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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

// Sets $TZ for the process's local-time conversions.
void SetTimeZone(const char* tz) {
  setenv("TZ", tz, 1);
  tzset();
}

TEST(RunFolderTest, TimestampLayoutWithSuffixesAndModelSlashes) {
  const fs::path out = FreshDir("run_folder_test");
  SetTimeZone("CST-8");  // China: the name is UTC whatever the zone
  const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
  auto a = CreateRunFolder(out, "org/model", when);
  auto b = CreateRunFolder(out, "org/model", when);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, out / "20260101_000000Z" / "performances" / "org_model");
  EXPECT_EQ(*b, out / "20260101_000000Z_1" / "performances" / "org_model");
  EXPECT_TRUE(fs::is_directory(*b));
  SetTimeZone("UTC");
}

TEST(RunFolderTest, StartTimeTextAndFromFolderName) {
  SetTimeZone("UTC");
  const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
  EXPECT_EQ(FormatLocalTime(when), "2026-01-01T00:00:00+00:00");
  EXPECT_EQ(FormatUtcTime(when), "2026-01-01T00:00:00Z");
  // Folders of older releases: local time, offset unknown.
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015/performances/org_model"),
            "2026-01-01 09:30:15 (local time)");
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015_2/performances/m/"),
            "2026-01-01 09:30:15 (local time)");
  EXPECT_EQ(RunStartUtcFromFolder("out/20260101_093015/performances/m"), "");
  EXPECT_EQ(RunStartFromFolder("somewhere/else"), "");
  EXPECT_EQ(RunStartFromFolder("out/2026x101_093015/performances/m"), "");
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015Q/performances/m"), "");
  // This release's UTC names, read in the reader's zone.
  SetTimeZone("IST-5:30");  // India
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015Z/performances/m"), "2026-01-01T15:00:15+05:30");
  EXPECT_EQ(RunStartFromFolder("out/20260101_093015Z_3/performances/m/"),
            "2026-01-01T15:00:15+05:30");
  EXPECT_EQ(RunStartUtcFromFolder("out/20260101_093015Z_3/performances/m"), "2026-01-01T09:30:15Z");
  SetTimeZone("EST5EDT,M3.2.0,M11.1.0");  // New York
  EXPECT_EQ(FormatLocalTime(when), "2025-12-31T19:00:00-05:00");
  SetTimeZone("UTC");
}

// Across Berlin's fall-back on 2026-10-25 (03:00 CEST → 02:00 CET at 01:00
// UTC): a run at 00:50 UTC (02:50 local) and one at 01:10 UTC (02:10
// local). Local-time names would sort the later run first; UTC names sort
// right, and each start carries its own offset. Berlin's rule is also given
// as a POSIX TZ string, which needs no time-zone database.
TEST(RunFolderTest, FolderNamesSortAcrossADaylightSavingFallBack) {
  std::vector<const char*> zones = {"CET-1CEST,M3.5.0,M10.5.0/3"};
  if (fs::exists("/usr/share/zoneinfo/Europe/Berlin")) zones.push_back("Europe/Berlin");
  for (const char* zone : zones) {
    SCOPED_TRACE(zone);
    SetTimeZone(zone);
    const fs::path out = FreshDir("run_folder_dst_test");
    const auto first = std::chrono::system_clock::time_point(std::chrono::seconds(1792889400));
    const auto second = first + std::chrono::minutes(20);
    auto a = CreateRunFolder(out, "m", first);
    auto b = CreateRunFolder(out, "m", second);
    ASSERT_TRUE(a.ok() && b.ok());
    const std::string name_a = a->parent_path().parent_path().filename().string();
    const std::string name_b = b->parent_path().parent_path().filename().string();
    EXPECT_EQ(name_a, "20261025_005000Z");
    EXPECT_EQ(name_b, "20261025_011000Z");
    EXPECT_LT(name_a, name_b);
    EXPECT_EQ(FormatLocalTime(first), "2026-10-25T02:50:00+02:00");
    EXPECT_EQ(FormatLocalTime(second), "2026-10-25T02:10:00+01:00");
    EXPECT_EQ(FormatUtcTime(first), "2026-10-25T00:50:00Z");
    EXPECT_EQ(FormatUtcTime(second), "2026-10-25T01:10:00Z");
    // `surge report` reads the same instants back from the names.
    EXPECT_EQ(RunStartFromFolder(*a), "2026-10-25T02:50:00+02:00");
    EXPECT_EQ(RunStartFromFolder(*b), "2026-10-25T02:10:00+01:00");
  }
  SetTimeZone("UTC");
}

}  // namespace
}  // namespace surge::coordinator
