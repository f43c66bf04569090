// The pacer thread's scheduling (worker/pacer_thread.h):
// what is applied is in effect on the calling thread, what is refused is
// named with the reason; nothing is left half-set on the test's thread.
#include "worker/pacer_thread.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace surge::worker {
namespace {

using ::testing::HasSubstr;

TEST(PacerThreadTest, PinsToTheCpuAndSetsTheTimerSlack) {
  // On a thread of its own, so the test's thread keeps its scheduling.
  std::string refused = "not run";
  int cpu_count = 0;
  bool on_cpu0 = false;
  long slack = -1;
  std::thread([&] {
    PacerThreadOptions options;
    options.cpu = 0;
    options.timer_slack_ns = 1;
    refused = ConfigurePacerThread(options);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      cpu_count = CPU_COUNT(&set);
      on_cpu0 = CPU_ISSET(0, &set);
    }
    slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  }).join();
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  if (!CPU_ISSET(0, &mine)) GTEST_SKIP() << "CPU 0 is not in this process's cpuset";
  EXPECT_EQ(refused, "");
  EXPECT_EQ(cpu_count, 1);
  EXPECT_TRUE(on_cpu0);
  EXPECT_EQ(slack, 1);
}

TEST(PacerThreadTest, ACpuTheMachineLacksIsNamedNotApplied) {
  std::string refused;
  int cpu_count = 0;
  std::thread([&] {
    PacerThreadOptions options;
    options.cpu = 100000;
    refused = ConfigurePacerThread(options);
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof(set), &set);
    cpu_count = CPU_COUNT(&set);
  }).join();
  EXPECT_THAT(refused, HasSubstr("pacer_cpu 100000 ignored: this machine has CPUs 0.."));
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  EXPECT_EQ(cpu_count, CPU_COUNT(&mine));  // left as it was
}

// SCHED_FIFO where permitted: either the thread runs SCHED_FIFO 1 and
// nothing is reported, or it stays SCHED_OTHER and the refusal says why
// and what would allow it.
TEST(PacerThreadTest, RealtimeIsAppliedOrRefusedWithTheReason) {
  std::string refused;
  int policy = -1;
  sched_param param{};
  std::thread([&] {
    PacerThreadOptions options;
    options.realtime = true;
    refused = ConfigurePacerThread(options);
    pthread_getschedparam(pthread_self(), &policy, &param);
  }).join();
  if (refused.empty()) {
    EXPECT_EQ(policy, SCHED_FIFO);
    EXPECT_EQ(param.sched_priority, 1);
  } else {
    EXPECT_EQ(policy, SCHED_OTHER);
    EXPECT_THAT(refused, HasSubstr("pacer_realtime refused ("));
    EXPECT_THAT(refused, HasSubstr("CAP_SYS_NICE"));
  }
}

}  // namespace
}  // namespace surge::worker
