// The role options' shared parts: the join timeout in milliseconds and a
// key file read by its flag (errors naming the flag).
#include "common/role_options.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace surge {
namespace {

using ::testing::StartsWith;

TEST(JoinTimeoutTest, MillisecondsRoundedUp) {
  EXPECT_EQ(JoinTimeoutMs(60), std::chrono::milliseconds(60000));
  EXPECT_EQ(JoinTimeoutMs(0.0001), std::chrono::milliseconds(1));
  EXPECT_EQ(JoinTimeoutMs(1.0005), std::chrono::milliseconds(1001));
  EXPECT_EQ(JoinTimeoutMs(86400), std::chrono::milliseconds(86400000));
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
