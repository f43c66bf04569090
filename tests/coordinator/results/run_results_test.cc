// The end of a run (coordinator/results/run_results.h): the actual page's
// inputs collected from the records, and the page's latency and lateness
// numbers taken from the summary.
#include "coordinator/results/run_results.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/coordinator/report/plan_fixtures.h"

namespace surge::coordinator {
namespace {

surge::v1::RequestRecord Sent(uint64_t index, int64_t planned_ns, int64_t sent_ns) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_status(surge::v1::OK);
  r.set_sent(true);
  r.set_planned_ns(planned_ns);
  r.set_sent_ns(sent_ns);
  r.set_released_ns(sent_ns);
  return r;
}

TEST(RunResultsTest, PageInputsKeepEachSendAndTheLatePolicysMarks) {
  ActualPageInputs page(3);
  page.Add(Sent(0, 0, 1'000'000));
  surge::v1::RequestRecord late = Sent(1, 100'000'000, 250'000'000);
  late.set_late(true);
  late.set_catch_up_delay_ns(5'000'000);
  page.Add(late);
  surge::v1::RequestRecord skipped;
  skipped.set_index(2);
  skipped.set_status(surge::v1::SKIPPED);
  skipped.set_planned_ns(200'000'000);
  page.Add(skipped);
  page.Add(Sent(7, 0, 0));  // outside the plan: no send
  ASSERT_EQ(page.sends().size(), 2u);
  EXPECT_EQ(page.sends()[1].index, 1u);
  EXPECT_DOUBLE_EQ(page.sends()[1].sent_offset_s, 0.25);
  ASSERT_EQ(page.late_marks().size(), 3u);
  EXPECT_EQ(page.late_marks()[0].kind, LateMark::Kind::kLate);
  EXPECT_EQ(page.late_marks()[1].kind, LateMark::Kind::kDelayed);
  EXPECT_EQ(page.late_marks()[2].kind, LateMark::Kind::kSkipped);
  EXPECT_DOUBLE_EQ(page.late_marks()[2].at_s, 0.2);
}

TEST(RunResultsTest, LatencyAndLatenessComeFromTheSummary) {
  RunSummary s;
  s.ttft_s = {.count = 4, .p50 = 0.02, .p90 = 0.03, .p99 = 0.05};
  s.ttft_from_planned_s = {.count = 4, .p50 = 0.021, .p90 = 0.031, .p99 = 0.051};
  s.e2el_s = {.count = 4, .p50 = 0.2, .p90 = 0.3, .p99 = 0.5};
  s.lateness_s = {.count = 5, .max = 0.0004, .p50 = 0.00001, .p90 = 0.00002, .p99 = 0.0003};
  const std::vector<LatencyView> views = LatencyViews(s);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].metric, "TTFT");
  EXPECT_EQ(views[0].count, 4u);
  EXPECT_DOUBLE_EQ(views[0].from_planned_send.p99_s, 0.051);
  EXPECT_DOUBLE_EQ(views[1].from_actual_send.p90_s, 0.3);
  const SendLatenessPercentiles lateness = SendLateness(s);
  EXPECT_DOUBLE_EQ(lateness.p50_s, 0.00001);
  EXPECT_DOUBLE_EQ(lateness.p90_s, 0.00002);
  EXPECT_DOUBLE_EQ(lateness.p99_s, 0.0003);
  EXPECT_DOUBLE_EQ(lateness.max_s, 0.0004);

  // The page shows exactly those numbers, not its own.
  const ArrivalSchedule plan =
      testing::PlanFrom(testing::ConstantTraffic(10, 1), std::vector<double>(20, 0.1),
                        std::vector<Anomaly>(20, Anomaly::kNormal));
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) sends.push_back({i, plan.offset_s[i] + 0.001});
  auto fig = BuildActualRpsFigure(plan, sends, lateness);
  ASSERT_TRUE(fig.ok()) << fig.status();
  ASSERT_TRUE(fig->actual.has_value());
  EXPECT_DOUBLE_EQ(fig->actual->lateness_p50_s, 0.00001);
  EXPECT_DOUBLE_EQ(fig->actual->lateness_max_s, 0.0004);
  auto own = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_NEAR(own->actual->lateness_p50_s, 0.001, 1e-9) << "without them: computed from sends";
}

}  // namespace
}  // namespace surge::coordinator
