// RaiseOpenFileLimit: the soft limit ends at the hard one,
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

// The per-process connection capacity and the plan check (a
// clear message when the plan cannot fit).
TEST(FdLimitTest, CapacityAndWhetherThePlanFits) {
  EXPECT_EQ(DescriptorCapacity(1024), 960u);
  EXPECT_EQ(DescriptorCapacity(65), 1u);  // never 0
  EXPECT_EQ(DescriptorCapacity(10), 1u);
  const FileLimit small{1024, 1024, 4096};
  EXPECT_TRUE(CheckConnectionsFit(0, 2, true, small).ok()) << "no cap: not checked";
  EXPECT_TRUE(CheckConnectionsFit(1920, 2, false, small).ok()) << "960 each: fits";
  absl::Status s = CheckConnectionsFit(1921, 2, false, small);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "max_concurrency = 1921 cannot fit: each of 2 workers would hold up to 961 "
            "connections, but its open-file limit is 1024 (hard limit 4096; 64 kept for surge "
            "itself) so it can hold 960. Raise the limit (ulimit -n, LimitNOFILE=, docker --ulimit "
            "nofile=), use more workers (--workers 3 or more), or lower --max-concurrency");
  // The built-in server in this process holds every connection.
  s = CheckConnectionsFit(1000, 2, true, small);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("the built-in server runs in this process"), std::string::npos)
      << s.message();
  EXPECT_TRUE(CheckConnectionsFit(1000, 2, false, small).ok());
  const FileLimit unlimited{1024, 1048576, UINT64_MAX};
  EXPECT_TRUE(CheckConnectionsFit(100000, 2, true, unlimited).ok());
  EXPECT_NE(CheckConnectionsFit(5000, 1, false, FileLimit{1024, 1024, UINT64_MAX})
                .message()
                .find("hard limit unlimited"),
            std::string::npos);
}

}  // namespace
}  // namespace surge
