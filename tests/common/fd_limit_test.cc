// RaiseOpenFileLimit (issue 9 item 1): the soft limit ends at the hard one,
// and a lowered soft limit is raised back.
#include "common/fd_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace surge {
namespace {

TEST(FdLimitTest, SoftLimitIsRaisedToTheHardOne) {
  rlimit r{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &r), 0);
  if (r.rlim_max == RLIM_INFINITY || r.rlim_max < 300) GTEST_SKIP() << "unusual hard limit";
  // Lower the soft limit first (allowed without privileges).
  rlimit low = r;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  absl::StatusOr<FileLimit> limit = RaiseOpenFileLimit();
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->before, 256u);
  EXPECT_EQ(limit->now, r.rlim_max);
  EXPECT_EQ(limit->hard, r.rlim_max);
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, r.rlim_max);
  // Already at the hard limit: unchanged.
  limit = RaiseOpenFileLimit();
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ(limit->before, r.rlim_max);
  EXPECT_EQ(limit->now, r.rlim_max);
}

}  // namespace
}  // namespace surge
