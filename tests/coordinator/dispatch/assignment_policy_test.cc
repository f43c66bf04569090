// Assignment policies on their own (R-DIST-3).
#include "coordinator/dispatch/assignment_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace surge::coordinator {
namespace {

std::vector<WorkerLoad> Loads(std::vector<size_t> outstanding, size_t cap = 100) {
  std::vector<WorkerLoad> loads;
  for (size_t o : outstanding) loads.push_back(WorkerLoad{true, o, cap, 0});
  return loads;
}

// Picks `count` times, adding each pick to its worker's load.
std::vector<size_t> PickMany(AssignmentPolicy& policy, std::vector<WorkerLoad>& loads, int count) {
  std::vector<size_t> picks;
  for (int k = 0; k < count; ++k) {
    auto pos = policy.Pick(loads);
    if (!pos) break;
    ++loads[*pos].outstanding;
    picks.push_back(*pos);
  }
  return picks;
}

TEST(AssignmentPolicyTest, RoundRobinStripesAndSkipsDeadOrFullWorkers) {
  RoundRobinPolicy policy;
  auto loads = Loads({0, 0, 0});
  EXPECT_EQ(PickMany(policy, loads, 7), (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
  loads[1].alive = false;
  EXPECT_EQ(PickMany(policy, loads, 4), (std::vector<size_t>{2, 0, 2, 0}));
  loads[2].outstanding = loads[2].max_outstanding;  // full
  EXPECT_EQ(PickMany(policy, loads, 2), (std::vector<size_t>{0, 0}));
  loads[0].alive = false;
  EXPECT_FALSE(policy.Pick(loads).has_value());
  EXPECT_EQ(policy.name(), "round-robin");
}

// Round-robin ignores load: a worker that still holds many requests gets
// its share anyway; least-loaded fills the others first, then stripes.
TEST(AssignmentPolicyTest, LeastLoadedFillsTheLightestThenStripes) {
  LeastLoadedPolicy policy;
  auto loads = Loads({5, 2, 3});
  // 2 → worker 1; then 5, 3, 3: the tie goes to the one after the last pick.
  EXPECT_EQ(PickMany(policy, loads, 4), (std::vector<size_t>{1, 2, 1, 2}));
  EXPECT_EQ(loads[0].outstanding, 5u);
  EXPECT_EQ(loads[1].outstanding, 4u);
  EXPECT_EQ(loads[2].outstanding, 5u);
  // 5, 4, 5: worker 1, then equal loads stripe 2, 0, 1.
  EXPECT_EQ(PickMany(policy, loads, 4), (std::vector<size_t>{1, 2, 0, 1}));
  loads[1].alive = false;
  EXPECT_EQ(PickMany(policy, loads, 2), (std::vector<size_t>{2, 0}));
  EXPECT_EQ(policy.name(), "least-loaded");

  RoundRobinPolicy rr;
  auto same = Loads({5, 2, 3});
  EXPECT_EQ(PickMany(rr, same, 4), (std::vector<size_t>{0, 1, 2, 0}));
}

TEST(AssignmentPolicyTest, LeastLoadedRespectsTheCap) {
  LeastLoadedPolicy policy;
  auto loads = Loads({0, 3}, /*cap=*/3);
  EXPECT_EQ(PickMany(policy, loads, 5), (std::vector<size_t>{0, 0, 0}));
  EXPECT_EQ(MakeAssignmentPolicy(AssignPolicyKind::kLeastLoaded)->name(), "least-loaded");
  EXPECT_EQ(MakeAssignmentPolicy(AssignPolicyKind::kRoundRobin)->name(), "round-robin");
}

}  // namespace
}  // namespace surge::coordinator
