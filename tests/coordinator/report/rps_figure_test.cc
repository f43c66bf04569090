// Figure content of the RPS pages (coordinator/report/rps_figure.h): trace
// names and charts (R-PLOT-2..7), sampling caps and full counts (R-PLOT-8),
// the actual trace (R-ACT-3), instant mode (R-PLOT-0, R-ACT-4) and the
// R-ACT-5 numbers.
#include "coordinator/report/rps_figure.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/plan/arrival_process.h"
#include "coordinator/plan/traffic_classes.h"
#include "coordinator/report/figure_parts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/report/plan_fixtures.h"

namespace surge::coordinator {
namespace {

using ::surge::coordinator::testing::ConstantTraffic;
using ::surge::coordinator::testing::InstantPlan;
using ::surge::coordinator::testing::LinearRampTraffic;
using ::surge::coordinator::testing::MixedPlan;
using ::surge::coordinator::testing::PlanFrom;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;

std::vector<std::string> NamesOn(const RpsFigure& fig, size_t chart) {
  std::vector<std::string> names;
  for (const FigureTrace& tr : fig.traces) {
    if (tr.chart == chart) names.push_back(tr.name);
  }
  return names;
}

TEST(ExpectedFigureTest, ChartsTracesAndTitleWithoutRamp) {
  const ArrivalSchedule plan = MixedPlan(100, 900, 50, 50);
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_EQ(fig->title, "Request Per Second(RPS) Distribution Analysis | Target Rate: 100 RPS");
  ASSERT_EQ(fig->charts.size(), 3u);
  EXPECT_EQ(fig->charts[0].title, "Time vs RPS - Distribution");
  EXPECT_EQ(fig->charts[1].title, "Expected: RPS vs Request Count - Distribution");
  EXPECT_EQ(fig->charts[2].title, "Expected: Gamma Distribution (burstiness: 0.5)");
  EXPECT_THAT(NamesOn(*fig, 0), ElementsAre("Normal RPS", "Time Interval Caused Anomaly",
                                            "Burstiness Caused Anomaly", "20-point EWMA"));
  EXPECT_THAT(NamesOn(*fig, 1),
              ElementsAre("Normal Request Count", "Time Interval Caused Anomaly"));
  EXPECT_THAT(NamesOn(*fig, 2), ElementsAre("Normal Intervals", "Time Interval Caused Anomaly"));
  // Full counts and one explanation row per trace (R-PLOT-6).
  EXPECT_EQ(fig->expected.requests, 1000u);
  EXPECT_EQ(fig->expected.normal, plan.Count(Anomaly::kNormal));
  EXPECT_EQ(fig->expected.timing, 50u);
  EXPECT_EQ(fig->expected.burstiness, 50u);
  for (const FigureTrace& tr : fig->traces) {
    EXPECT_EQ(tr.row.item, tr.name);
    EXPECT_FALSE(tr.row.group.empty());
    EXPECT_FALSE(tr.row.meaning.empty());
    EXPECT_FALSE(tr.row.computation.empty());
    EXPECT_FALSE(tr.row.criterion.empty());
    EXPECT_FALSE(tr.row.appearance.empty());
  }
}

TEST(ExpectedFigureTest, NormalSeriesAndEwmaAreExact) {
  // Normal intervals 0.01, 0.02, 0.01 (with a timing anomaly between).
  const ArrivalSchedule plan =
      PlanFrom(ConstantTraffic(100, 0.5), {0.01, 0.02, 0.0001, 0.01},
               {Anomaly::kNormal, Anomaly::kNormal, Anomaly::kTiming, Anomaly::kNormal});
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const FigureTrace* normal = fig->Find(0, "Normal RPS");
  ASSERT_NE(normal, nullptr);
  EXPECT_THAT(normal->points.x, Pointwise(DoubleNear(1e-12), {0.01, 0.03, 0.0401}));
  EXPECT_THAT(normal->points.y, Pointwise(DoubleNear(1e-9), {100.0, 50.0, 100.0}));
  const FigureTrace* ewma = fig->Find(0, "20-point EWMA");
  ASSERT_NE(ewma, nullptr);
  const double a = 2.0 / 21.0;
  const double e1 = a * 50 + (1 - a) * 100;
  EXPECT_THAT(ewma->points.y, Pointwise(DoubleNear(1e-9), {100.0, e1, a * 100 + (1 - a) * e1}));
  const FigureTrace* timing = fig->Find(0, "Time Interval Caused Anomaly");
  ASSERT_NE(timing, nullptr);
  EXPECT_THAT(timing->points.y, Pointwise(DoubleNear(1e-6), {10000.0}));
  // The histogram triangles sit above the highest bar.
  const FigureTrace* bars = fig->Find(1, "Normal Request Count");
  const FigureTrace* tri = fig->Find(1, "Time Interval Caused Anomaly");
  ASSERT_NE(bars, nullptr);
  ASSERT_NE(tri, nullptr);
  const double top = *std::max_element(bars->points.y.begin(), bars->points.y.end());
  ASSERT_EQ(tri->points.size(), 1u);
  EXPECT_GT(tri->points.y[0], top);
  EXPECT_NEAR(tri->points.x[0], 10000, 1e-6);
  const FigureTrace* gamma_tri = fig->Find(2, "Time Interval Caused Anomaly");
  ASSERT_NE(gamma_tri, nullptr);
  EXPECT_THAT(gamma_tri->points.x, Pointwise(DoubleNear(1e-15), {0.0001}));
}

// Composed traffic (docs/TRAFFIC.md): the profile describes itself — the
// page draws its λ(t) and names it and the sampler in the title.
TEST(ExpectedFigureTest, ComposedProfileDrawsItsTheoreticalRate) {
  surge::v1::RunConfig config;
  config.set_num_prompts(10000);
  auto* stage = config.mutable_traffic_cfg()->add_stages();
  stage->set_duration_s(40);
  stage->set_profile(surge::v1::STAGE_PROFILE_KIND_DIURNAL);
  stage->set_min_rps(10);
  stage->set_max_rps(60);
  stage->set_period_s(40);
  stage->set_peak_at_s(20);
  auto* spike = config.mutable_traffic_cfg()->add_spikes();
  spike->set_at_s(30);
  spike->set_duration_s(3);
  spike->set_rate_multiplier(3);
  auto process = MakeArrivalProcess(config);
  ASSERT_TRUE(process.ok()) << process.status();
  auto plan = (*process)->Generate(0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(*plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_EQ(fig->title,
            "Request Per Second(RPS) Distribution Analysis | Peak Rate: 105 RPS | diurnal "
            "10–60 RPS + spike ×3 | fixed intervals");
  // The full title is in the legend table's row of the curve.
  const FigureTrace* rate = fig->Find(0, kTheoreticalRateName);
  ASSERT_NE(rate, nullptr);
  EXPECT_THAT(rate->row.criterion,
              HasSubstr("Profile: Diurnal 10–60 RPS (period 40 s, peak at 20 s) for 40 s + spike "
                        "×3 at 30–33 s; sampler: fixed intervals"));
  const FigureTrace* curve = fig->Find(0, kTheoreticalRateName);
  ASSERT_NE(curve, nullptr);
  EXPECT_EQ(curve->dash, "dash");
  // The drawn λ(t) is the closed form: 35 + 25cos(2π(t − 20)/40), ×3 in (30, 33].
  ASSERT_GT(curve->points.size(), 1000u);
  for (size_t i = 0; i < curve->points.size(); ++i) {
    const double t = curve->points.x[i];
    const double base = 35 + 25 * std::cos(2 * M_PI * (t - 20) / 40);
    const double y = curve->points.y[i];
    EXPECT_TRUE(std::fabs(y - base) < 1e-9 || std::fabs(y - 3 * base) < 1e-9) << t;
    if (t > 30.01 && t < 32.99) {
      EXPECT_NEAR(y, 3 * base, 1e-9) << t;
    }
  }
  EXPECT_EQ(NamesOn(*fig, 0).back(), kTheoreticalRateName);
}

TEST(ExpectedFigureTest, RampTitleAndTheoreticalTrace) {
  ResolvedTraffic traffic = LinearRampTraffic(10, 200, 0);
  std::vector<double> iv;
  ArrivalSchedule plan;
  plan.traffic = traffic;
  double t = 0;
  for (int i = 0; i < 20; ++i) {
    const double rate = 10 + 190.0 * i / 19;
    t += 1 / rate;
    plan.rate_rps.push_back(rate);
    plan.interval_s.push_back(1 / rate);
    plan.offset_s.push_back(t);
    plan.anomaly.push_back(Anomaly::kNormal);
  }
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_EQ(
      fig->title,
      "Request Per Second(RPS) Distribution Analysis | Target Rate: 200 RPS | Linear Ramp-up: "
      "10→200 RPS");
  EXPECT_THAT(NamesOn(*fig, 0),
              ElementsAre("Normal RPS", "Time Interval Caused Anomaly", "Burstiness Caused Anomaly",
                          "20-point EWMA", "Theoretical Ramp-up"));
  const FigureTrace* ramp = fig->Find(0, "Theoretical Ramp-up");
  ASSERT_NE(ramp, nullptr);
  EXPECT_EQ(ramp->dash, "dash");
  EXPECT_EQ(ramp->points.y, plan.rate_rps);
  EXPECT_EQ(ramp->points.x, plan.offset_s);

  traffic.strategy = RampStrategy::kExponential;
  traffic.description = DescribeSeedTraffic(traffic, 20);
  EXPECT_EQ(PageTitle(traffic),
            "Request Per Second(RPS) Distribution Analysis | Target Rate: 200 RPS | Exponential "
            "Ramp-up: 10→200 RPS");
  traffic.ramp_active = false;  // configured but inactive: no ramp part
  traffic.target_rate_rps = 12.5;
  traffic.description = DescribeSeedTraffic(traffic, 20);
  EXPECT_EQ(PageTitle(traffic),
            "Request Per Second(RPS) Distribution Analysis | Target Rate: 12.5 RPS");
}

int EwmaWindowOfFigure(size_t normal_points) {
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(MixedPlan(1000, normal_points, 3, 0));
  EXPECT_TRUE(fig.ok()) << fig.status();
  if (!fig.ok()) return -1;
  EXPECT_NE(fig->Find(0, EwmaTraceName(fig->expected.ewma_window)), nullptr);
  return fig->expected.ewma_window;
}

TEST(ExpectedFigureTest, EwmaWindowCountsTheNormalSeries) {
  // Anomalies do not count towards the window's data count (R-PLOT-3).
  EXPECT_EQ(EwmaWindowOfFigure(1'000), 20);
  EXPECT_EQ(EwmaWindowOfFigure(1'001), 50);
  EXPECT_EQ(EwmaWindowOfFigure(10'000), 50);
  EXPECT_EQ(EwmaWindowOfFigure(10'001), 100);
  EXPECT_EQ(EwmaWindowOfFigure(100'000), 100);
  EXPECT_EQ(EwmaWindowOfFigure(100'001), 200);
}

TEST(ExpectedFigureTest, LargePlanIsBoundedAndCountsStayFull) {
  const ArrivalSchedule plan = MixedPlan(1000, 200'000, 30'000, 20'000);
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const FigureTrace* timing = fig->Find(0, "Time Interval Caused Anomaly");
  const FigureTrace* burst = fig->Find(0, "Burstiness Caused Anomaly");
  ASSERT_NE(timing, nullptr);
  ASSERT_NE(burst, nullptr);
  EXPECT_EQ(timing->points.size(), kMaxAnomalyPoints);
  EXPECT_EQ(burst->points.size(), kMaxAnomalyPoints);
  EXPECT_EQ(timing->full_count, 30'000u);
  EXPECT_EQ(burst->full_count, 20'000u);
  EXPECT_THAT(timing->row.criterion, HasSubstr("30,000 requests"));
  EXPECT_THAT(timing->row.appearance, HasSubstr("1,000 of 30,000 points drawn"));
  for (const FigureTrace& tr : fig->traces) {
    EXPECT_LE(tr.points.size(), kMaxLinePoints) << tr.name;
  }
  // The drawn anomalies keep their temporal density: each tenth of the run
  // holds about a tenth of them.
  const double end = plan.offset_s.back();
  for (int q = 0; q < 10; ++q) {
    const auto in = std::count_if(timing->points.x.begin(), timing->points.x.end(), [&](double x) {
      return x >= end * q / 10 && x < end * (q + 1) / 10;
    });
    EXPECT_NEAR(static_cast<double>(in), 100, 3) << q;
  }
}

TEST(ExpectedFigureTest, ConstantRateGivesOneBinAndLinearAxes) {
  const ArrivalSchedule plan = MixedPlan(100, 500, 0, 0);  // β = 0: every Δ = 10 ms
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_FALSE(fig->charts[0].y_log);
  EXPECT_FALSE(fig->charts[1].x_log);
  const FigureTrace* bars = fig->Find(1, kNormalRequestCountName);
  ASSERT_NE(bars, nullptr);
  ASSERT_EQ(bars->points.size(), 1u);
  EXPECT_NEAR(bars->points.x[0], 100, 1e-9);
  EXPECT_EQ(bars->points.y[0], 500);
  EXPECT_TRUE(fig->Find(0, kTimingAnomalyName)->points.x.empty());
  EXPECT_TRUE(fig->Find(0, kBurstinessAnomalyName)->points.x.empty());
}

TEST(ExpectedFigureTest, OnlyTimingAnomalies) {
  // β = 0 at 2,000 RPS: every interval is 0.5 ms, all timing anomalies.
  const ArrivalSchedule plan = PlanFrom(ConstantTraffic(2000, 0), std::vector<double>(50, 0.0005),
                                        std::vector<Anomaly>(50, Anomaly::kTiming));
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_EQ(fig->expected.normal, 0u);
  EXPECT_EQ(fig->expected.timing, 50u);
  EXPECT_TRUE(fig->Find(0, kNormalRpsName)->points.x.empty());
  EXPECT_TRUE(fig->Find(0, "20-point EWMA")->points.x.empty());
  EXPECT_TRUE(fig->Find(1, kNormalRequestCountName)->points.x.empty());
  EXPECT_EQ(fig->Find(1, kTimingAnomalyName)->points.size(), 50u);
  EXPECT_EQ(fig->Find(2, kTimingAnomalyName)->points.size(), 50u);
}

TEST(ExpectedFigureTest, WideRpsRangeUsesLogAxes) {
  // Timing anomalies at 10,000 RPS next to normal requests at 10 RPS.
  const ArrivalSchedule plan = MixedPlan(10, 900, 100, 0);
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_TRUE(fig->charts[0].y_log);
  EXPECT_TRUE(fig->charts[0].y_log_toggle);
  EXPECT_TRUE(fig->charts[1].x_log);
  EXPECT_FALSE(fig->charts[2].x_log);  // intervals stay linear (the Gamma shape)
}

TEST(ExpectedFigureTest, InstantModeIsRefused) {
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(InstantPlan(10));
  EXPECT_EQ(fig.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ExpectedFigureTest, MalformedPlansAreRefused) {
  ArrivalSchedule empty;
  empty.traffic = ConstantTraffic(10, 0);
  EXPECT_EQ(BuildExpectedRpsFigure(empty).status().code(), absl::StatusCode::kInvalidArgument);
  ArrivalSchedule plan = MixedPlan(10, 10, 0, 0);
  plan.anomaly.pop_back();
  EXPECT_EQ(BuildExpectedRpsFigure(plan).status().code(), absl::StatusCode::kInvalidArgument);
}

// Plan: N N T B N N at offsets 1..6.
ArrivalSchedule SixRequestPlan() {
  return PlanFrom(ConstantTraffic(1, 0.5), {1, 1, 1, 1, 1, 1},
                  {Anomaly::kNormal, Anomaly::kNormal, Anomaly::kTiming, Anomaly::kBurstiness,
                   Anomaly::kNormal, Anomaly::kNormal});
}

TEST(ActualFigureTest, ActualTraceExcludesPlanAnomaliesAndCountsZeroDifferences) {
  const ArrivalSchedule plan = SixRequestPlan();
  // Out of order on purpose. Sorted: 0@1.0, 1@1.5, 2@1.5, 3@2.0, 4@2.0, 5@2.25.
  const std::vector<ActualSend> sends = {{5, 2.25}, {2, 1.5}, {0, 1.0},
                                         {4, 2.0},  {1, 1.5}, {3, 2.0}};
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const FigureTrace* actual = fig->Find(0, "Actual RPS: After Excluding Anomalies");
  ASSERT_NE(actual, nullptr);
  // 1: 1/(1.5 − 1.0) = 2 at 1.5 (normal, drawn); 2: timing (excluded);
  // 3: burstiness (excluded); 4: zero difference (counted, not drawn);
  // 5: 1/(2.25 − 2.0) = 4 at 2.25 (normal, drawn); 0: no previous send.
  EXPECT_THAT(actual->points.x, ElementsAre(1.5, 2.25));
  EXPECT_THAT(actual->points.y, ElementsAre(2.0, 4.0));
  ASSERT_TRUE(fig->actual.has_value());
  EXPECT_EQ(fig->actual->sent, 6u);
  EXPECT_EQ(fig->actual->plan_normal, 3u);
  EXPECT_EQ(fig->actual->zero_differences, 1u);
  EXPECT_EQ(fig->actual->all_zero_differences, 2u);
  EXPECT_EQ(fig->actual->actual_points, 2u);
  EXPECT_EQ(actual->full_count, 2u);
  EXPECT_THAT(actual->row.criterion, HasSubstr("1 zero and 0 negative differences not drawn"));
  // The expected figure is there too, with the actual trace last on chart 0.
  EXPECT_THAT(NamesOn(*fig, 0),
              ElementsAre("Normal RPS", "Time Interval Caused Anomaly", "Burstiness Caused Anomaly",
                          "20-point EWMA", "Actual RPS: After Excluding Anomalies"));
  ASSERT_EQ(fig->charts.size(), 5u);
  EXPECT_THAT(NamesOn(*fig, 3), ElementsAre("Send Lateness"));
  EXPECT_THAT(NamesOn(*fig, 4), ElementsAre("Achieved Rate", "Intended Rate"));
}

TEST(ActualFigureTest, LatenessPercentilesAreExact) {
  const ArrivalSchedule plan = MixedPlan(10, 10, 0, 0);  // offsets 0.1 … 1.0
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < 10; ++i) {
    // Lateness 1 … 10 ms, in reverse order of index.
    sends.push_back({i, plan.offset_s[i] + static_cast<double>(10 - i) * 1e-3});
  }
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_NEAR(fig->actual->lateness_p50_s, 5.5e-3, 1e-12);
  EXPECT_NEAR(fig->actual->lateness_p90_s, 9.1e-3, 1e-12);
  EXPECT_NEAR(fig->actual->lateness_p99_s, 9.91e-3, 1e-12);
  EXPECT_NEAR(fig->actual->lateness_max_s, 10e-3, 1e-12);
  ASSERT_EQ(fig->charts[3].markers.size(), 4u);
  EXPECT_THAT(fig->charts[3].markers[0].label, HasSubstr("p50 5.5 ms"));
}

// A worker loss (or any run event) is a red line at its moment on the two
// time axes (Time vs RPS, Achieved vs Intended Rate), never on the RPS,
// interval or lateness axes; the events are kept in time order.
TEST(ActualFigureTest, RunEventsMarkOnlyTheTimeAxes) {
  const ArrivalSchedule plan = MixedPlan(10, 10, 0, 0);  // offsets 0.1 … 1.0
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < 10; ++i) sends.push_back({i, plan.offset_s[i] + 1e-3});
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  ASSERT_EQ(fig->charts.size(), 5u);
  const size_t lateness_markers = fig->charts[3].markers.size();
  AddRunEvents({{.at_s = 0.75, .label = "worker 1 lost: 2 send_unknown", .text = "late one"},
                {.at_s = std::nan(""), .label = "dropped", .text = "dropped"},
                {.at_s = 0.25, .label = "worker 0 lost: 1 send_unknown", .text = "early one"}},
               *fig);
  ASSERT_EQ(fig->events.size(), 2u);
  EXPECT_EQ(fig->events[0].text, "early one");
  EXPECT_EQ(fig->events[1].text, "late one");
  for (size_t chart : {0u, 4u}) {
    EXPECT_TRUE(fig->charts[chart].time_axis) << chart;
    ASSERT_EQ(fig->charts[chart].markers.size(), 2u) << chart;
    const VerticalMarker& m = fig->charts[chart].markers[0];
    EXPECT_DOUBLE_EQ(m.x, 0.75);
    EXPECT_EQ(m.label, "worker 1 lost: 2 send_unknown");
    EXPECT_EQ(m.hover, "late one");
    EXPECT_EQ(m.color, kRunEventColor);
    EXPECT_DOUBLE_EQ(fig->charts[chart].markers[1].x, 0.25);
  }
  EXPECT_TRUE(fig->charts[1].markers.empty());
  EXPECT_TRUE(fig->charts[2].markers.empty());
  EXPECT_EQ(fig->charts[3].markers.size(), lateness_markers);
  // Instant mode: the one chart is a time axis too.
  absl::StatusOr<RpsFigure> instant = BuildActualRpsFigure(InstantPlan(3), {});
  ASSERT_TRUE(instant.ok()) << instant.status();
  AddRunEvents({{.at_s = 0.5, .label = "x", .text = "y"}}, *instant);
  ASSERT_EQ(instant->charts.size(), 1u);
  ASSERT_EQ(instant->charts[0].markers.size(), 1u);
  EXPECT_DOUBLE_EQ(instant->charts[0].markers[0].x, 0.5);
}

TEST(ActualFigureTest, LongLatenessTailsDoNotSqueezeTheBars) {
  const ArrivalSchedule plan = MixedPlan(100, 1000, 0, 0);
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) {
    // 0.1 … 1.0 ms late, one send stalled by 5 s.
    const double late = i == 500 ? 5.0 : 1e-4 * static_cast<double>(1 + i % 10);
    sends.push_back({i, plan.offset_s[i] + late});
  }
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_NEAR(fig->actual->lateness_max_s, 5.0, 1e-9);
  const FigureTrace* bars = fig->Find(3, kSendLatenessName);
  ASSERT_NE(bars, nullptr);
  // The bars span p1 … p99 (0.1 … 1.0 ms), not 0.1 ms … 5 s.
  EXPECT_LT(bars->points.x.back(), 1.0);
  EXPECT_THAT(bars->row.criterion, HasSubstr("1 above are not in the bars"));
  EXPECT_THAT(fig->charts[3].title, HasSubstr("max 5000 ms"));
  for (const VerticalMarker& m : fig->charts[3].markers) EXPECT_LE(m.x, 1.0 + 1e-9);
}

TEST(ActualFigureTest, EqualTimesAreOrderedByIndexWhateverTheInputOrder) {
  const ArrivalSchedule plan = SixRequestPlan();
  // 2 (timing) and 4 (normal) share a time; only the later by index is the
  // zero difference, so 4 is counted and 2 never matters, in either order.
  const std::vector<ActualSend> a = {{0, 1.0}, {2, 2.0}, {4, 2.0}, {5, 3.0}};
  const std::vector<ActualSend> b = {{5, 3.0}, {4, 2.0}, {2, 2.0}, {0, 1.0}};
  absl::StatusOr<RpsFigure> fa = BuildActualRpsFigure(plan, a);
  absl::StatusOr<RpsFigure> fb = BuildActualRpsFigure(plan, b);
  ASSERT_TRUE(fa.ok() && fb.ok());
  EXPECT_EQ(fa->actual->zero_differences, 1u);
  EXPECT_EQ(fb->actual->zero_differences, 1u);
  EXPECT_EQ(fa->Find(0, kActualRpsName)->points.y, fb->Find(0, kActualRpsName)->points.y);
  EXPECT_THAT(fa->Find(0, kActualRpsName)->points.y, ElementsAre(1.0));  // 5: 1/(3 − 2)
}

TEST(ActualFigureTest, PerfectRunHasZeroKsDistance) {
  const ArrivalSchedule plan = MixedPlan(100, 1000, 0, 0);
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) sends.push_back({i, plan.offset_s[i]});
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_DOUBLE_EQ(fig->actual->ks_distance, 0);
  EXPECT_NEAR(fig->actual->achieved_rate_rps, 100, 1e-9);
  EXPECT_NEAR(fig->actual->intended_rate_rps, 100, 1e-9);
  EXPECT_NEAR(fig->actual->lateness_max_s, 0, 1e-15);
  // Achieved and intended rate over time agree bin by bin.
  const FigureTrace* achieved = fig->Find(4, "Achieved Rate");
  const FigureTrace* intended = fig->Find(4, "Intended Rate");
  ASSERT_NE(achieved, nullptr);
  ASSERT_NE(intended, nullptr);
  EXPECT_EQ(achieved->points.y, intended->points.y);
  EXPECT_THAT(fig->charts[4].title, HasSubstr("KS distance of intervals: 0.0000"));
}

TEST(ActualFigureTest, ActualTraceIsSampledAboveFiveThousand) {
  const ArrivalSchedule plan = MixedPlan(1000, 20'000, 0, 0);
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) {
    sends.push_back({i, plan.offset_s[i] + 1e-4 * static_cast<double>(i % 7)});
  }
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const FigureTrace* actual = fig->Find(0, kActualRpsName);
  ASSERT_NE(actual, nullptr);
  EXPECT_EQ(actual->points.size(), kMaxActualPoints);
  EXPECT_EQ(actual->full_count, 19'999u);
  EXPECT_TRUE(std::is_sorted(actual->points.x.begin(), actual->points.x.end()));
  absl::StatusOr<RpsFigure> again = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->Find(0, kActualRpsName)->points.y, actual->points.y);
}

TEST(ActualFigureTest, InstantModeHasOnlyTheActualChart) {
  const ArrivalSchedule plan = InstantPlan(5);
  const std::vector<ActualSend> sends = {{0, 0.001}, {1, 0.002}, {2, 0.002}, {3, 0.004}};
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_TRUE(fig->instant);
  ASSERT_EQ(fig->charts.size(), 1u);
  EXPECT_EQ(fig->charts[0].title, "Time vs RPS - Distribution");
  ASSERT_EQ(fig->traces.size(), 1u);
  EXPECT_EQ(fig->traces[0].name, "Actual RPS: After Excluding Anomalies");
  EXPECT_THAT(fig->traces[0].points.y, Pointwise(DoubleNear(1e-6), {1000.0, 500.0}));
  EXPECT_EQ(fig->actual->zero_differences, 1u);
  EXPECT_THAT(fig->title, HasSubstr("Instant Mode"));
}

TEST(ActualFigureTest, NoSendsStillGivesAPage) {
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(SixRequestPlan(), {});
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_EQ(fig->actual->sent, 0u);
  EXPECT_TRUE(std::isnan(fig->actual->ks_distance));
  EXPECT_TRUE(std::isnan(fig->actual->lateness_p50_s));
}

TEST(ActualFigureTest, SingleRequest) {
  const ArrivalSchedule plan = MixedPlan(10, 1, 0, 0);
  const std::vector<ActualSend> sends = {{0, 0.15}};
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_EQ(fig->actual->sent, 1u);
  EXPECT_NEAR(fig->actual->lateness_max_s, 0.05, 1e-12);
  EXPECT_TRUE(std::isnan(fig->actual->ks_distance));
  EXPECT_TRUE(fig->Find(0, kActualRpsName)->points.x.empty());
}

// Issue 8, 6(b): a plan-normal request overtaken by microseconds by its
// timing-anomaly neighbour (sent by another worker) must not become a spike.
// Plan N N T N N: offsets 0.05, 0.10, 0.1003, 0.15, 0.20 s.
TEST(ActualFigureTest, ActualIntervalIsMeasuredFromThePlannedPredecessor) {
  const ArrivalSchedule plan = PlanFrom(
      ConstantTraffic(20, 0.5), {0.05, 0.05, 0.0003, 0.0497, 0.05},
      {Anomaly::kNormal, Anomaly::kNormal, Anomaly::kTiming, Anomaly::kNormal, Anomaly::kNormal});
  // Request 2 (timing) leaves 50 µs before request 1 (normal), 0.25 ms late.
  const std::vector<ActualSend> sends = {
      {0, 0.0501}, {1, 0.10025}, {2, 0.10020}, {3, 0.1501}, {4, 0.2001}};
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const FigureTrace* actual = fig->Find(0, kActualRpsName);
  ASSERT_NE(actual, nullptr);
  // 1: from 0's send, 1/(0.10025 − 0.0501); 3: from 2's send,
  // 1/(0.1501 − 0.1002); 4: 1/(0.2001 − 0.1501). The old rule (previous
  // send in time) gave request 1 1/(0.10025 − 0.10020) = 20,000 RPS.
  EXPECT_THAT(actual->points.x, ElementsAre(0.10025, 0.1501, 0.2001));
  EXPECT_THAT(actual->points.y,
              Pointwise(DoubleNear(1e-6),
                        {1 / (0.10025 - 0.0501), 1 / (0.1501 - 0.10020), 1 / (0.2001 - 0.1501)}));
  EXPECT_LT(*std::max_element(actual->points.y.begin(), actual->points.y.end()), 21.0);
  // The timing anomaly was sent before its predecessor: counted, not drawn.
  EXPECT_EQ(fig->actual->all_negative_differences, 1u);
  EXPECT_EQ(fig->actual->negative_differences, 0u);
  EXPECT_EQ(fig->actual->actual_points, 3u);
  EXPECT_THAT(actual->row.computation, HasSubstr("planned predecessor"));
}

// Requests not sent are skipped (the predecessor is the previous *sent*
// request in plan order); a plan-normal request sent before its predecessor
// has a negative difference: counted, not drawn.
TEST(ActualFigureTest, MissingAndOvertakenPredecessors) {
  const ArrivalSchedule plan = MixedPlan(10, 5, 0, 0);  // offsets 0.1 … 0.5
  const std::vector<ActualSend> sends = {{0, 0.1}, {2, 0.3}, {3, 0.29}, {4, 0.5}};
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const FigureTrace* actual = fig->Find(0, kActualRpsName);
  // 2: from 0 (1 never sent), 1/0.2 = 5 at 0.3; 3: −0.01, not drawn;
  // 4: from 3, 1/0.21 at 0.5.
  EXPECT_THAT(actual->points.x, ElementsAre(0.3, 0.5));
  EXPECT_THAT(actual->points.y, Pointwise(DoubleNear(1e-9), {5.0, 1 / 0.21}));
  EXPECT_EQ(fig->actual->plan_normal, 3u);
  EXPECT_EQ(fig->actual->negative_differences, 1u);
  EXPECT_EQ(fig->actual->zero_differences, 0u);
  EXPECT_EQ(fig->actual->actual_points, 2u);
  EXPECT_THAT(actual->row.criterion, HasSubstr("0 zero and 1 negative differences not drawn"));
}

// Issue 8, 6(b) as it happened: β = 0.5, 200 requests at 20 RPS, sends a
// fraction of a millisecond late (p99 ≈ 0.2 ms) in no particular pattern, so
// that timing anomalies overtake their neighbours. The actual series must
// follow the plan: each point within 0.4 ms of its planned interval, no
// point above the plan's highest normal rate (+2%).
TEST(ActualFigureTest, WellPacedBurstyRunMatchesThePlannedRps) {
  absl::StatusOr<ArrivalSchedule> built =
      BuildArrivalSchedule(ConstantTraffic(20, 0.5), 200, /*seed=*/0);
  ASSERT_TRUE(built.ok()) << built.status();
  const ArrivalSchedule& plan = *built;
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) {
    // 5 … 205 µs late, scrambled.
    const double late_s = 5e-6 + 5e-6 * static_cast<double>((i * 7919) % 41);
    sends.push_back({i, plan.offset_s[i] + late_s});
  }
  // The input is of the failing kind: some plan-normal request has a
  // neighbour sent within microseconds before it (the old rule's spike).
  std::vector<ActualSend> by_time = sends;
  std::sort(by_time.begin(), by_time.end(), [](const ActualSend& a, const ActualSend& b) {
    return a.sent_offset_s < b.sent_offset_s;
  });
  double old_rule_max_rps = 0;
  for (size_t k = 1; k < by_time.size(); ++k) {
    if (plan.anomaly[by_time[k].index] != Anomaly::kNormal) continue;
    const double d = by_time[k].sent_offset_s - by_time[k - 1].sent_offset_s;
    if (d > 0) old_rule_max_rps = std::max(old_rule_max_rps, 1 / d);
  }
  ASSERT_GT(old_rule_max_rps, 1000) << "the input should overtake somewhere";

  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const FigureTrace* actual = fig->Find(0, kActualRpsName);
  ASSERT_NE(actual, nullptr);
  double max_planned_normal_rps = 0;
  uint64_t normal_after_first = 0;
  for (uint64_t i = 1; i < plan.size(); ++i) {
    if (plan.anomaly[i] != Anomaly::kNormal) continue;
    max_planned_normal_rps = std::max(max_planned_normal_rps, 1 / plan.interval_s[i]);
    ++normal_after_first;
  }
  EXPECT_EQ(fig->actual->actual_points, normal_after_first);  // every one drawn
  ASSERT_EQ(actual->points.size(), normal_after_first);
  for (size_t k = 0; k < actual->points.size(); ++k) {
    // Which request: the send at this time.
    const auto it = std::find_if(sends.begin(), sends.end(), [&](const ActualSend& s) {
      return s.sent_offset_s == actual->points.x[k];
    });
    ASSERT_NE(it, sends.end());
    const uint64_t i = it->index;
    EXPECT_NEAR(1 / actual->points.y[k], plan.offset_s[i] - plan.offset_s[i - 1], 0.4e-3)
        << "request " << i;
  }
  EXPECT_LE(*std::max_element(actual->points.y.begin(), actual->points.y.end()),
            1.02 * max_planned_normal_rps);
}

// Issue 8, 6(c): the intended rate is the plan's, (N − 1)/(t_{N−1} − t_0),
// even when only part of the plan was sent; the achieved rate stays over
// the sent requests.
TEST(ActualFigureTest, IntendedRateIsThePlansWhenOnlyPartWasSent) {
  const ArrivalSchedule plan = MixedPlan(100, 1000, 0, 0);  // 0.01 … 10 s
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); i += 3) sends.push_back({i, plan.offset_s[i]});
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_NEAR(fig->actual->intended_rate_rps, 999 / (10.0 - 0.01), 1e-9);
  // 334 sends (0, 3, …, 999) from 0.01 to 10 s.
  EXPECT_NEAR(fig->actual->achieved_rate_rps, 333 / (10.0 - 0.01), 1e-9);
  EXPECT_THAT(fig->Find(4, kIntendedRateName)->row.criterion,
              HasSubstr("over all 1,000 planned offsets"));
}

// Issue 8, item 8: one point is no rate. A one-request run draws no EWMA
// and no achieved or intended rate line (it used to draw "20 req/s" for a
// 5 RPS plan: one send ÷ a 0.05 s bin); the rates are NaN, not a number.
TEST(ActualFigureTest, OneRequestDrawsNoEwmaAndNoRateLines) {
  const ArrivalSchedule plan = MixedPlan(5, 1, 0, 0);  // one request at 0.2 s
  const std::vector<ActualSend> sends = {{0, 0.2003}};
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const FigureTrace* normal = fig->Find(0, kNormalRpsName);
  ASSERT_NE(normal, nullptr);
  EXPECT_THAT(normal->points.y, ElementsAre(5.0));  // the planned rate is real
  const FigureTrace* ewma = fig->Find(0, "20-point EWMA");
  ASSERT_NE(ewma, nullptr);
  EXPECT_TRUE(ewma->points.x.empty());
  EXPECT_THAT(ewma->row.appearance, HasSubstr("not enough points"));
  const FigureTrace* achieved = fig->Find(4, kAchievedRateName);
  const FigureTrace* intended = fig->Find(4, kIntendedRateName);
  ASSERT_NE(achieved, nullptr);
  ASSERT_NE(intended, nullptr);
  EXPECT_TRUE(achieved->points.x.empty());
  EXPECT_TRUE(intended->points.x.empty());
  EXPECT_THAT(achieved->row.appearance, HasSubstr("not enough points (1 send;"));
  EXPECT_THAT(intended->row.appearance, HasSubstr("not enough points (1 planned request;"));
  EXPECT_TRUE(std::isnan(fig->actual->achieved_rate_rps));
  EXPECT_TRUE(std::isnan(fig->actual->intended_rate_rps));
  EXPECT_THAT(fig->Find(0, kActualRpsName)->row.criterion, HasSubstr("Not enough points: 1 send"));
  // The expected page of the same plan: no EWMA either.
  absl::StatusOr<RpsFigure> expected = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(expected.ok());
  EXPECT_TRUE(expected->Find(0, "20-point EWMA")->points.x.empty());
}

// Zero sends (all failed before the socket) and instant mode with one
// request: no made-up rates, the plan's intended rate where it exists.
TEST(ActualFigureTest, ZeroSendsAndInstantSingleRequest) {
  absl::StatusOr<RpsFigure> none = BuildActualRpsFigure(MixedPlan(10, 5, 0, 0), {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->Find(4, kAchievedRateName)->points.x.empty());
  EXPECT_FALSE(none->Find(4, kIntendedRateName)->points.x.empty());
  EXPECT_TRUE(std::isnan(none->actual->achieved_rate_rps));
  EXPECT_NEAR(none->actual->intended_rate_rps, 4 / 0.4, 1e-9);
  const std::vector<ActualSend> one = {{0, 0.001}};
  absl::StatusOr<RpsFigure> instant = BuildActualRpsFigure(InstantPlan(1), one);
  ASSERT_TRUE(instant.ok());
  EXPECT_TRUE(instant->traces[0].points.x.empty());
  EXPECT_THAT(instant->traces[0].row.criterion, HasSubstr("Not enough points"));
}

TEST(FigureTitleTest, HtmlTitlesOfTheTwoPagesDiffer) {
  const ArrivalSchedule plan = MixedPlan(20, 10, 0, 0);
  absl::StatusOr<RpsFigure> expected = BuildExpectedRpsFigure(plan);
  const std::vector<ActualSend> sends = {{0, 0.05}, {1, 0.1}};
  absl::StatusOr<RpsFigure> actual = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(expected.ok() && actual.ok());
  EXPECT_EQ(HtmlPageTitle(*expected),
            "Request Per Second(RPS) Distribution Analysis | Target Rate: 20 RPS — expected");
  EXPECT_EQ(HtmlPageTitle(*actual),
            "Request Per Second(RPS) Distribution Analysis | Target Rate: 20 RPS — actual");
}

TEST(ActualFigureTest, BadSendsAreRefused) {
  const ArrivalSchedule plan = SixRequestPlan();
  const std::vector<ActualSend> outside = {{6, 1.0}};
  EXPECT_EQ(BuildActualRpsFigure(plan, outside).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<ActualSend> twice = {{1, 1.0}, {1, 2.0}};
  EXPECT_EQ(BuildActualRpsFigure(plan, twice).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<ActualSend> nan = {{1, std::nan("")}};
  EXPECT_EQ(BuildActualRpsFigure(plan, nan).status().code(), absl::StatusCode::kInvalidArgument);
}

// Issue 10 item 4: the late-send policy's requests are marked on the
// actual page's Time vs RPS chart: one marker trace per kind present, after
// the chart's other traces, at (planned offset for skipped, send time
// otherwise; the request's intended rate λ_i), with full counts.
TEST(ActualFigureTest, LateSkippedAndDelayedRequestsAreMarkedOnTheTimeChart) {
  absl::StatusOr<ArrivalSchedule> built =
      BuildArrivalSchedule(ConstantTraffic(20, 0), 40, /*seed=*/0);
  ASSERT_TRUE(built.ok()) << built.status();
  const ArrivalSchedule& plan = *built;
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) {
    if (i != 12) sends.push_back({i, plan.offset_s[i] + (i >= 10 && i < 15 ? 0.03 : 0.0)});
  }
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  const std::vector<std::string> before = NamesOn(*fig, 0);
  const size_t traces_before = fig->traces.size();
  AddLateMarks(plan, {}, *fig);  // nothing to mark: nothing added
  EXPECT_EQ(fig->traces.size(), traces_before);

  const std::vector<LateMark> marks = {
      {12, LateMark::Kind::kSkipped, plan.offset_s[12]},
      {10, LateMark::Kind::kLate, plan.offset_s[10] + 0.03},
      {11, LateMark::Kind::kLate, plan.offset_s[11] + 0.03},
      {13, LateMark::Kind::kLate, plan.offset_s[13] + 0.03},
      {13, LateMark::Kind::kDelayed, plan.offset_s[13] + 0.03},
      {99, LateMark::Kind::kLate, 1.0},  // outside the plan: ignored
  };
  AddLateMarks(plan, marks, *fig);
  std::vector<std::string> expected = before;
  expected.insert(expected.end(), {"Late Send", "Skipped (late)", "Delayed (catch-up)"});
  EXPECT_EQ(NamesOn(*fig, 0), expected);
  // Chart 0's traces stay together, before the other charts'.
  for (size_t k = 1; k < fig->traces.size(); ++k) {
    EXPECT_LE(fig->traces[k - 1].chart, fig->traces[k].chart) << k;
  }
  const FigureTrace* late = fig->Find(0, kLateSendName);
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->kind, TraceKind::kMarkers);
  EXPECT_EQ(late->full_count, 3u);
  ASSERT_EQ(late->points.size(), 3u);
  EXPECT_EQ(late->points.x[0], plan.offset_s[10] + 0.03);
  EXPECT_EQ(late->points.y[0], 20);  // λ_10 = 20 RPS
  EXPECT_EQ(late->row.criterion, "3 requests (7.5% of 40)");
  const FigureTrace* skipped = fig->Find(0, kSkippedLateName);
  ASSERT_NE(skipped, nullptr);
  ASSERT_EQ(skipped->points.size(), 1u);
  EXPECT_EQ(skipped->points.x[0], plan.offset_s[12]);
  EXPECT_THAT(skipped->row.meaning, HasSubstr("status skipped"));
  const FigureTrace* delayed = fig->Find(0, kDelayedCatchUpName);
  ASSERT_NE(delayed, nullptr);
  EXPECT_EQ(delayed->full_count, 1u);
  EXPECT_EQ(delayed->points.x[0], plan.offset_s[13] + 0.03);
}

// Two traffic classes merged by time, offsets never tied: chat 20 RPS
// (fixed intervals, no line of its own) for 3 s, batch a ramp 2 → 10 RPS of
// 10 requests from 0.213 s to 2.013 s (its λ_i drawn as its ramp line).
ArrivalSchedule TwoClassPlan() {
  ArrivalSchedule chat = PlanFrom(ConstantTraffic(20, 0), std::vector<double>(60, 0.05),
                                  std::vector<Anomaly>(60, Anomaly::kNormal));
  ArrivalSchedule batch = PlanFrom(LinearRampTraffic(2, 10, 0), std::vector<double>(10, 0.2),
                                   std::vector<Anomaly>(10, Anomaly::kNormal));
  for (size_t k = 0; k < batch.size(); ++k) {
    batch.offset_s[k] = 0.013 + 0.2 * static_cast<double>(k + 1);
    batch.rate_rps[k] = 2 + 8.0 * static_cast<double>(k) / 9.0;
  }
  absl::StatusOr<ArrivalSchedule> merged =
      MergeClassPlans({chat, batch}, {"chat", "batch"}, {1, 2}, 7);
  EXPECT_TRUE(merged.ok()) << merged.status();
  return *std::move(merged);
}

TEST(ClassesFigureTest, ExpectedPageDrawsEachClassAndTheirSum) {
  const ArrivalSchedule plan = TwoClassPlan();
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_THAT(NamesOn(*fig, 0),
              ElementsAre("Normal RPS", "Time Interval Caused Anomaly", "Burstiness Caused Anomaly",
                          "20-point EWMA", "chat", "batch", kAllClassesRateName));
  // Each class's line is its own requests' λ_i at their offsets.
  for (size_t c = 0; c < 2; ++c) {
    const ArrivalSchedule alone = ClassSubPlan(plan, c);
    const FigureTrace* line = fig->Find(0, plan.classes[c].name);
    ASSERT_NE(line, nullptr);
    EXPECT_EQ(line->points.x, alone.offset_s);
    EXPECT_EQ(line->points.y, alone.rate_rps);
    EXPECT_EQ(line->full_count, alone.size());
    EXPECT_EQ(line->color, figure_internal::ClassColor(c));
    EXPECT_THAT(line->row.criterion, HasSubstr(absl::StrCat("Class ", plan.classes[c].name)));
  }
  EXPECT_NE(figure_internal::ClassColor(0), figure_internal::ClassColor(1));
  // The batch line is its ramp's (named by the class, explained by the ramp).
  EXPECT_THAT(fig->Find(0, "batch")->row.meaning, HasSubstr("ramp-up"));
  // The sum: 20 before batch starts and after it ends, else 20 + batch's
  // latest λ.
  const FigureTrace* sum = fig->Find(0, kAllClassesRateName);
  ASSERT_NE(sum, nullptr);
  ASSERT_EQ(sum->points.size(), plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    const double t = plan.offset_s[i];
    double want = 20;
    if (t >= 0.213 && t <= 2.0131) {
      const size_t k = static_cast<size_t>(std::floor((t - 0.013) / 0.2 + 1e-9)) - 1;
      want += 2 + 8.0 * static_cast<double>(k) / 9.0;
    }
    EXPECT_NEAR(sum->points.y[i], want, 1e-9) << "t = " << t;
  }
  for (const FigureTrace& tr : fig->traces) {
    EXPECT_EQ(tr.row.item, tr.name);
    EXPECT_FALSE(tr.row.meaning.empty() || tr.row.computation.empty() || tr.row.criterion.empty() ||
                 tr.row.appearance.empty())
        << tr.name;
  }
}

TEST(ClassesFigureTest, ActualPageDrawsEachClassAgainstItsPlanInTheTotalsBins) {
  const ArrivalSchedule plan = TwoClassPlan();
  // Everything 2 ms late, the last five batch requests never sent.
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) {
    if (plan.class_index[i] == 1 && plan.class_request[i] >= 5) continue;
    sends.push_back({i, plan.offset_s[i] + 0.002});
  }
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends);
  ASSERT_TRUE(fig.ok()) << fig.status();
  EXPECT_THAT(NamesOn(*fig, 4),
              ElementsAre("Achieved Rate", "Intended Rate", "chat: achieved", "chat: intended",
                          "batch: achieved", "batch: intended"));
  // The expected page's class lines are there too, in the same colours.
  EXPECT_EQ(fig->Find(0, "batch")->color, fig->Find(4, "batch: achieved")->color);
  EXPECT_EQ(fig->Find(0, "chat")->color, fig->Find(4, "chat: intended")->color);
  const double width = fig->actual->rate_bin_width_s;
  const double hi = std::max(plan.offset_s.back(), sends.back().sent_offset_s);
  for (const char* kind : {"achieved", "intended"}) {
    const bool achieved = std::string(kind) == "achieved";
    const FigureTrace* total = fig->Find(4, achieved ? kAchievedRateName : kIntendedRateName);
    ASSERT_NE(total, nullptr);
    std::vector<double> sum(total->points.size(), 0);
    for (size_t c = 0; c < 2; ++c) {
      const FigureTrace* line = fig->Find(4, absl::StrCat(plan.classes[c].name, ": ", kind));
      ASSERT_NE(line, nullptr);
      // The class's own requests alone, binned in the total's bins.
      RateBinner alone = MakeRateBinner(0, hi, width);
      uint64_t events = 0;
      auto add = [&](uint64_t index, double t) {
        if (plan.class_index[index] != c) return;
        alone.Add(t);
        ++events;
      };
      if (achieved) {
        for (const ActualSend& s : sends) add(s.index, s.sent_offset_s);
      } else {
        for (size_t i = 0; i < plan.size(); ++i) add(i, plan.offset_s[i]);
      }
      std::vector<double> want = alone.Rates();
      want.push_back(want.back());
      EXPECT_EQ(line->points.y, want) << line->name;
      EXPECT_EQ(line->points.x, total->points.x) << line->name;
      EXPECT_EQ(line->full_count, events) << line->name;
      for (size_t k = 0; k < sum.size(); ++k) sum[k] += line->points.y[k];
    }
    EXPECT_THAT(sum, Pointwise(DoubleNear(1e-9), total->points.y)) << kind;
  }
  EXPECT_EQ(fig->Find(4, "batch: achieved")->full_count, 5u);
  EXPECT_EQ(fig->Find(4, "batch: intended")->full_count, 10u);
}

}  // namespace
}  // namespace surge::coordinator
