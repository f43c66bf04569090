// RateLimitedLog on simulated time: a kind writes at most
// one line per interval, the next line carries the count of the ones it
// stood for, kinds are independent, and Flush writes what is pending.
#include "common/rate_limited_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/simulated_clock.h"

namespace surge {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Captured {
  std::vector<std::string> lines;
  RateLimitedLog::Writer writer() {
    return [this](LogLevel, std::string_view l) { lines.emplace_back(l); };
  }
};

TEST(RateLimitedLogTest, ThousandsOfOneKindBecomeOneLinePerInterval) {
  testing::AutoAdvanceClock clock;
  Captured out;
  RateLimitedLog log(clock, seconds(10), out.writer());
  // 60,000 "accept" failures over 60 s (one per ms), as an fd-starved
  // server would print them.
  for (int i = 0; i < 60000; ++i) {
    log.Write(LogLevel::kWarning, "accept", "accept: Too many open files");
    clock.AdvanceBy(milliseconds(1));
  }
  // Lines at 0, 10, 20, 30, 40, 50 s.
  ASSERT_EQ(out.lines.size(), 6u);
  EXPECT_EQ(out.lines[0], "accept: Too many open files");
  EXPECT_EQ(out.lines[1],
            "accept: Too many open files (and 9999 more like this in the last 10.0 s)");
  EXPECT_EQ(log.total("accept"), 60000u);
  log.Flush();  // the 9,999 after the line at 50 s
  ASSERT_EQ(out.lines.size(), 7u);
  EXPECT_EQ(out.lines[6],
            "accept: Too many open files (and 9998 more like this in the last 10.0 s)");
  EXPECT_EQ(log.lines("accept"), 7u);
  log.Flush();  // nothing pending: nothing written
  EXPECT_EQ(out.lines.size(), 7u);
}

TEST(RateLimitedLogTest, KindsAreIndependentAndTheDestructorFlushes) {
  testing::AutoAdvanceClock clock;
  Captured out;
  {
    RateLimitedLog log(clock, seconds(10), out.writer());
    log.Write(LogLevel::kWarning, "a", "first a");
    log.Write(LogLevel::kWarning, "b", "first b");
    log.Write(LogLevel::kWarning, "a", "second a");
    clock.AdvanceBy(seconds(3));
    log.Write(LogLevel::kWarning, "a", "third a");
    EXPECT_EQ(out.lines, (std::vector<std::string>{"first a", "first b"}));
    EXPECT_EQ(log.total("a"), 3u);
    EXPECT_EQ(log.total("b"), 1u);
    EXPECT_EQ(log.total("c"), 0u);
  }
  // The last counted message speaks for the two counted "a".
  ASSERT_EQ(out.lines.size(), 3u);
  EXPECT_EQ(out.lines[2], "third a (and 1 more like this in the last 3.0 s)");
}

}  // namespace
}  // namespace surge
