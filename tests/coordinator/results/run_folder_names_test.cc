// Run folder names from user-given text (R-PLOT-1): a model
// or dataset name never leads outside {output_dir}/{stamp}/performances/, and
// the output folder is checked before any long work.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "coordinator/results/run_files.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;

// A folder of this process's own that the code under test must make.
fs::path OutDir(const std::string& name) {
  return surge::testing::AbsentDir(name + "_" + std::to_string(getpid()));
}

TEST(SafeFileNameTest, UserNamesBecomeOneSafeComponent) {
  EXPECT_EQ(SafeFileName(".."), "_.");
  EXPECT_EQ(SafeFileName("."), "_");
  EXPECT_EQ(SafeFileName("a/../../b"), "a_.._.._b");
  EXPECT_EQ(SafeFileName("/abs"), "_abs");
  EXPECT_EQ(SafeFileName(""), "unknown");
  EXPECT_EQ(SafeFileName("Qwen/Qwen2.5-7B"), "Qwen_Qwen2.5-7B");
  EXPECT_EQ(SafeFileName(std::string("a\nb\x01"
                                     "c\\d",
                                     7)),
            "a_b_c_d");
  EXPECT_EQ(SafeFileName(".hidden"), "_hidden");
  // Bounded, and never cut inside a UTF-8 character ("é" is 2 bytes).
  std::string long_name(119, 'x');
  long_name += "\xc3\xa9\xc3\xa9";
  const std::string safe = SafeFileName(long_name);
  EXPECT_EQ(safe, std::string(119, 'x'));
  EXPECT_EQ(SafeFileName(std::string(500, 'm')).size(), 120u);
}

TEST(SafeFileNameTest, RunFolderStaysUnderPerformances) {
  const fs::path out = OutDir("run_folder_names");
  const auto now = std::chrono::system_clock::now();
  for (const std::string model : {"..", "a/../../b", "/abs", "", "../../../../tmp/x"}) {
    auto folder = CreateRunFolder(out, model, now);
    ASSERT_TRUE(folder.ok()) << model << ": " << folder.status();
    const fs::path canonical = fs::weakly_canonical(*folder);
    EXPECT_EQ(canonical.parent_path().filename(), "performances") << model << " -> " << canonical;
    EXPECT_EQ(canonical.parent_path().parent_path().parent_path(), fs::weakly_canonical(out))
        << model;
  }
}

TEST(CheckOutputDirTest, AcceptsACreatableFolderAndNamesAnUnusableOne) {
  const fs::path out = OutDir("check_output_dir");
  EXPECT_TRUE(CheckOutputDir(out / "a" / "b").ok());
  EXPECT_FALSE(fs::exists(out));  // nothing created
  fs::create_directories(out / "a");
  EXPECT_TRUE(CheckOutputDir(out / "a").ok());
  EXPECT_TRUE(CheckOutputDir("relative/folder").ok());
  const fs::path file = out / "a_file";
  {
    std::FILE* f = std::fopen(file.c_str(), "wb");
    std::fclose(f);
  }
  const absl::Status s = CheckOutputDir(file / "sub");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("output_dir = \"" + (file / "sub").string() +
                                   "\": cannot create the folder: " + file.string() +
                                   " exists and is not a folder"));
  if (geteuid() != 0) {  // root may write anywhere
    fs::create_directories(out / "ro");
    fs::permissions(out / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_FALSE(CheckOutputDir(out / "ro" / "x").ok());
    fs::permissions(out / "ro", fs::perms::owner_all);
  }
}

TEST(WritePlanCsvTest, ReportsProgressUpToEveryRow) {
  ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = 1000;
  auto plan = BuildArrivalSchedule(t, (1u << 20) + 5, 0);
  ASSERT_TRUE(plan.ok());
  const fs::path out = OutDir("plan_csv_progress");
  fs::create_directories(out);
  std::vector<uint64_t> calls;
  ASSERT_TRUE(
      WritePlanCsv(*plan, out / "p.csv", [&calls](uint64_t done) { calls.push_back(done); }).ok());
  EXPECT_THAT(calls, ::testing::ElementsAre(1u << 20, (1u << 20) + 5));
}

}  // namespace
}  // namespace surge::coordinator
