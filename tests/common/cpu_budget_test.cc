// The usable CPUs (affinity, cgroup v1 and v2 quotas) and the worker count
// chosen from them and the plan's peak rate.
#include "common/cpu_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>

namespace surge {
namespace {

using ::testing::HasSubstr;

TEST(CpuBudgetTest, ParsesCgroupQuotas) {
  EXPECT_EQ(ParseCgroupV2CpuMax("max 100000\n"), std::nullopt);
  EXPECT_EQ(ParseCgroupV2CpuMax("150000 100000\n"), 1.5);
  EXPECT_EQ(ParseCgroupV2CpuMax("400000 100000"), 4.0);
  EXPECT_EQ(ParseCgroupV2CpuMax(""), std::nullopt);
  EXPECT_EQ(ParseCgroupV2CpuMax("garbage"), std::nullopt);
  EXPECT_EQ(ParseCgroupV1Quota("-1\n", "100000\n"), std::nullopt);
  EXPECT_EQ(ParseCgroupV1Quota("50000\n", "100000\n"), 0.5);
  EXPECT_EQ(ParseCgroupV1Quota("", ""), std::nullopt);
}

TEST(CpuBudgetTest, UsableCpusAreTheAffinityCappedByTheTightestQuota) {
  CpuSources sources;
  sources.affinity_cpus = 8;
  EXPECT_EQ(BudgetFrom(sources).usable_cpus, 8);
  EXPECT_EQ(BudgetFrom(sources).description, "8 usable CPUs (affinity 8, no cgroup quota)");
  // A container with --cpus 2.5 inside a parent limited to 4: 2.5 counts,
  // rounded up.
  sources.cgroup_v2_cpu_max = {"250000 100000", "max 100000", "400000 100000"};
  CpuBudget budget = BudgetFrom(sources);
  EXPECT_EQ(budget.quota_cpus, 2.5);
  EXPECT_EQ(budget.usable_cpus, 3);
  EXPECT_EQ(budget.description, "3 usable CPUs (affinity 8, cgroup quota 2.50 CPUs)");
  // cgroup v1, tighter still; and taskset to one CPU wins over any quota.
  sources.cgroup_v1_quota_us = "100000";
  sources.cgroup_v1_period_us = "100000";
  EXPECT_EQ(BudgetFrom(sources).usable_cpus, 1);
  sources = CpuSources{};
  sources.affinity_cpus = 1;
  sources.cgroup_v2_cpu_max = {"800000 100000"};
  EXPECT_EQ(BudgetFrom(sources).usable_cpus, 1);
  EXPECT_EQ(BudgetFrom(sources).description, "1 usable CPU (affinity 1, cgroup quota 8 CPUs)");
  // A tiny quota still leaves one CPU.
  sources.cgroup_v2_cpu_max = {"10000 100000"};
  EXPECT_EQ(BudgetFrom(sources).usable_cpus, 1);
}

TEST(CpuBudgetTest, ThisProcessHasItsAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const CpuSources sources = ReadCpuSources();
  EXPECT_EQ(sources.affinity_cpus, CPU_COUNT(&set));
  EXPECT_LE(BudgetFrom(sources).usable_cpus, CPU_COUNT(&set));
  EXPECT_GE(BudgetFrom(sources).usable_cpus, 1);
}

CpuBudget Cpus(int n) {
  CpuSources sources;
  sources.affinity_cpus = n;
  return BudgetFrom(sources);
}

TEST(CpuBudgetTest, WorkersAreHalfTheCpusAtMostAndWhatThePeakNeeds) {
  // Two busy threads per worker: 2 CPUs hold one worker, even at 10,000 RPS.
  EXPECT_EQ(ChooseWorkers(Cpus(2), 10000).workers, 1);
  EXPECT_EQ(ChooseWorkers(Cpus(1), 200).workers, 1);
  EXPECT_EQ(ChooseWorkers(Cpus(3), 50000).workers, 1);
  // Many CPUs: as many as the peak needs at 10,000 RPS each.
  EXPECT_EQ(ChooseWorkers(Cpus(16), 200).workers, 1);
  EXPECT_EQ(ChooseWorkers(Cpus(16), 10000).workers, 1);
  EXPECT_EQ(ChooseWorkers(Cpus(16), 10001).workers, 2);
  EXPECT_EQ(ChooseWorkers(Cpus(16), 35000).workers, 4);
  EXPECT_EQ(ChooseWorkers(Cpus(16), 1e6).workers, 8);
  // Instant mode (no rate): every worker the CPUs allow.
  EXPECT_EQ(ChooseWorkers(Cpus(16), 0).workers, 8);
  EXPECT_EQ(ChooseWorkers(Cpus(16), std::numeric_limits<double>::infinity()).workers, 8);
  EXPECT_EQ(ChooseWorkers(Cpus(2), 500).reason,
            "workers: 1 (2 usable CPUs (affinity 2, no cgroup quota) allow 1 of 2 busy threads "
            "each, a pacer and an I/O thread; the plan's peak 500 RPS needs 1 at 10000 RPS per "
            "worker; --workers N to choose)");
  EXPECT_EQ(ChooseWorkers(Cpus(16), 35000).warning, "");
}

TEST(CpuBudgetTest, APeakBeyondWhatTheCpusAllowIsAWarning) {
  const WorkerChoice choice = ChooseWorkers(Cpus(2), 20000);
  EXPECT_EQ(choice.workers, 1);
  EXPECT_EQ(choice.warning,
            "the plan's peak 20000 RPS is more than 1 worker keeps on time (10000 RPS each) on 2 "
            "usable CPUs (affinity 2, no cgroup quota): expect lateness at the peak");
}

TEST(CpuBudgetTest, MorePacersThanCpusIsAWarningNamingTheEffect) {
  EXPECT_EQ(OversubscribedWarning(1, Cpus(1)), "");
  EXPECT_EQ(OversubscribedWarning(2, Cpus(4)), "");
  const std::string warning = OversubscribedWarning(2, Cpus(2));
  EXPECT_THAT(warning, HasSubstr("--workers 2 runs 4 busy threads"));
  EXPECT_THAT(warning, HasSubstr("on 2 usable CPUs"));
  EXPECT_THAT(warning, HasSubstr("1.7-15 ms against 0.011 ms with 1"));
  EXPECT_THAT(OversubscribedWarning(5, Cpus(8)), HasSubstr("runs 10 busy threads"));
}

}  // namespace
}  // namespace surge
