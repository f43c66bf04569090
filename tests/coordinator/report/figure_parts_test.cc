// The parts every page trace is made from: a trace spec gives the trace its
// look and the fixed columns of its legend row, the builder the points and
// the variable columns; the stratified picker takes exactly the ranks of
// StratifiedSampleRanks.
#include "coordinator/report/figure_parts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace surge::coordinator::figure_internal {
namespace {

using ::testing::ElementsAre;

constexpr TraceSpec kSpec = {.name = "Some Trace",
                             .chart = kRpsHistChart,
                             .kind = TraceKind::kMarkers,
                             .color = kRed,
                             .hover = "x = %{x}",
                             .meaning = "What it means.",
                             .computation = "How it is computed.",
                             .look = "Red triangles",
                             .symbol = "triangle-up",
                             .marker_size = 7,
                             .dash = "dot",
                             .line_shape = "hv",
                             .line_width = 3};

TEST(MakeTraceTest, SpecGivesTheLookAndTheFixedColumns) {
  XySeries points;
  points.Add(1, 2);
  const FigureTrace tr =
      MakeTrace(kSpec, points, 10, {.criterion = "crit", .appearance = Look(kSpec, "note")});
  EXPECT_EQ(tr.name, "Some Trace");
  EXPECT_EQ(tr.chart, kRpsHistChart);
  EXPECT_EQ(tr.kind, TraceKind::kMarkers);
  EXPECT_EQ(tr.color, kRed);
  EXPECT_EQ(tr.hover, "x = %{x}");
  EXPECT_EQ(tr.symbol, "triangle-up");
  EXPECT_EQ(tr.marker_size, 7);
  EXPECT_EQ(tr.dash, "dot");
  EXPECT_EQ(tr.line_shape, "hv");
  EXPECT_EQ(tr.line_width, 3);
  EXPECT_EQ(tr.points.x, std::vector<double>{1});
  EXPECT_EQ(tr.full_count, 10u);
  EXPECT_EQ(tr.row.group, kGroupRpsHist);
  EXPECT_EQ(tr.row.item, "Some Trace");
  EXPECT_EQ(tr.row.meaning, "What it means.");
  EXPECT_EQ(tr.row.computation, "How it is computed.");
  EXPECT_EQ(tr.row.criterion, "crit");
  EXPECT_EQ(tr.row.appearance, "Red triangles; note");
}

TEST(MakeTraceTest, BuilderTextsOverrideTheSpecs) {
  const FigureTrace tr = MakeTrace(kSpec, XySeries(), 0,
                                   {.criterion = "c",
                                    .appearance = "a",
                                    .computation = "computed otherwise",
                                    .meaning = "meant otherwise"});
  EXPECT_EQ(tr.row.meaning, "meant otherwise");
  EXPECT_EQ(tr.row.computation, "computed otherwise");
}

TEST(BarTraceTest, BinCentresCountsAndWidths) {
  Histogram h;
  h.bins = FreedmanDiaconisBins(4, 0, 4, 2);
  h.counts.assign(static_cast<size_t>(h.bins.count), 1);
  const FigureTrace tr = BarTrace(kSpec, h, 4, {});
  ASSERT_EQ(tr.points.size(), static_cast<size_t>(h.bins.count));
  ASSERT_EQ(tr.bar_widths.size(), static_cast<size_t>(h.bins.count));
  for (int k = 0; k < h.bins.count; ++k) {
    EXPECT_EQ(tr.points.x[static_cast<size_t>(k)], h.Center(k));
    EXPECT_EQ(tr.points.y[static_cast<size_t>(k)], 1);
    EXPECT_EQ(tr.bar_widths[static_cast<size_t>(k)], h.Width(k));
  }
}

TEST(StratifiedPickerTest, TakesTheRanksOfStratifiedSampleRanks) {
  for (uint64_t count : {0u, 3u, 10u, 2500u}) {
    StratifiedPicker picker(count, 7);
    std::vector<uint64_t> taken;
    for (uint64_t r = 0; r < count; ++r) {
      if (picker.Take()) taken.push_back(r);
    }
    EXPECT_TRUE(picker.Done());
    EXPECT_EQ(taken, StratifiedSampleRanks(count, 7)) << count;
    EXPECT_EQ(picker.size(), taken.size());
  }
}

TEST(ChartGroupsTest, OneGroupPerChartInOrder) {
  EXPECT_THAT(std::vector<std::string>(std::begin(kChartGroups), std::end(kChartGroups)),
              ElementsAre("Time vs RPS", "RPS vs Request Count", "Gamma Distribution",
                          "Send Lateness", "Rate over Time", "Prefix Reuse"));
}

}  // namespace
}  // namespace surge::coordinator::figure_internal
