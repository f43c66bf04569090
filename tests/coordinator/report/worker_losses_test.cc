// Worker losses in the run facts, the console line and the actual page's
// run events (R-DIST-6; coordinator/report/worker_losses.h).
#include "coordinator/report/worker_losses.h"

#include <gtest/gtest.h>

namespace surge::coordinator {
namespace {

TEST(WorkerLossesTest, FactHoldsWhoWhenWhyAndTheThreeWaySplit) {
  const surge::v1::WorkerLossFact j =
      WorkerLossFactOf(2, 16'237'400'000, "silent for 1500 ms", 52, 25, 3010);
  EXPECT_EQ(j.worker(), 2);
  EXPECT_DOUBLE_EQ(j.at_s(), 16.24);  // rounded to 0.01 s
  EXPECT_EQ(j.at_ns(), 16'237'400'000);
  EXPECT_EQ(j.why(), "silent for 1500 ms");
  EXPECT_EQ(j.send_unknown(), 52u);
  EXPECT_EQ(j.not_sent(), 25u);
  EXPECT_EQ(j.reassigned(), 3010u);
}

TEST(WorkerLossesTest, TextAndLabelNameTheWorkerTheMomentAndTheCounts) {
  const surge::v1::WorkerLossFact j =
      WorkerLossFactOf(2, 16'237'400'000, "silent for 1500 ms", 52, 25, 3010);
  EXPECT_EQ(WorkerLossText(j),
            "worker 2 lost at 16.24 s (silent for 1500 ms): 52 send_unknown, 25 not sent, 3,010 "
            "moved to the others");
  EXPECT_EQ(WorkerLossLabel(j), "worker 2 lost: 52 send_unknown, 25 not sent, 3,010 moved");
  // A process seen exiting, nothing left to move (e.g. after a stop).
  EXPECT_EQ(WorkerLossText(WorkerLossFactOf(0, 4'005'000'000, "process exited", 7, 1'234'567, 0)),
            "worker 0 lost at 4.01 s (process exited): 7 send_unknown, 1,234,567 not sent, 0 "
            "moved to the others");
  // No reason given: no parentheses.
  EXPECT_EQ(WorkerLossText(WorkerLossFactOf(1, 1'000'000'000, "", 0, 0, 5)),
            "worker 1 lost at 1.00 s: 0 send_unknown, 0 not sent, 5 moved to the others");
}

TEST(WorkerLossesTest, EventsOnePerLossInOrderAndNoneWithoutLosses) {
  WorkerLossFacts losses;
  *losses.Add() = WorkerLossFactOf(1, 2'550'000'000, "silent for 1500 ms", 48, 27, 120);
  *losses.Add() = WorkerLossFactOf(3, 9'000'000'000, "process exited", 0, 0, 400);
  const std::vector<RunEvent> events = WorkerLossEvents(losses);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_DOUBLE_EQ(events[0].at_s, 2.55);
  EXPECT_EQ(events[0].label, "worker 1 lost: 48 send_unknown, 27 not sent, 120 moved");
  EXPECT_EQ(events[0].text,
            "worker 1 lost at 2.55 s (silent for 1500 ms): 48 send_unknown, 27 not sent, 120 "
            "moved to the others");
  EXPECT_DOUBLE_EQ(events[1].at_s, 9.0);
  EXPECT_EQ(events[1].label, "worker 3 lost: 0 send_unknown, 0 not sent, 400 moved");
  // A summary written before worker_losses existed has none.
  EXPECT_TRUE(WorkerLossEvents(WorkerLossFacts()).empty());
}

}  // namespace
}  // namespace surge::coordinator
