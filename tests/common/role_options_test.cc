// The role options' shared rules: the join timeout's range and a key file
// read by its flag (errors naming the flag).
#include "common/role_options.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace surge {
namespace {

using ::testing::StartsWith;

TEST(JoinTimeoutTest, RangeAndRounding) {
  EXPECT_EQ(*JoinTimeout(60), std::chrono::milliseconds(60000));
  EXPECT_EQ(*JoinTimeout(0.0001), std::chrono::milliseconds(1));  // rounded up
  EXPECT_EQ(*JoinTimeout(86400), std::chrono::milliseconds(86400000));
  EXPECT_EQ(JoinTimeout(0).status().message(),
            "--join-timeout 0: must be > 0 and at most 86400 seconds");
  EXPECT_EQ(JoinTimeout(86400.5).status().message(),
            "--join-timeout 86400.5: must be > 0 and at most 86400 seconds");
  EXPECT_EQ(JoinTimeout(std::nan("")).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReadKeyFlagTest, NamesTheFlag) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/role_options_test.key";
  std::ofstream(good) << "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7\n";
  auto key = ReadKeyFlag("--curve-secret-key", good);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(*key, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
  auto missing = ReadKeyFlag("--curve-server-key", dir + "/no-such.pub");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()), StartsWith("--curve-server-key: "));
  std::ofstream(dir + "/role_options_bad.key") << "short\n";
  EXPECT_THAT(
      std::string(
          ReadKeyFlag("--curve-secret-key", dir + "/role_options_bad.key").status().message()),
      StartsWith("--curve-secret-key: "));
}

}  // namespace
}  // namespace surge
