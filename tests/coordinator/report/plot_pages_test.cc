// The written pages (coordinator/report/plot_pages.h): self-contained HTML
// with the exact title and trace names (R-PLOT-2..7), the JSON beside it,
// instant mode (R-PLOT-0, R-ACT-4), determinism and the size bound
// (R-PLOT-8).
#include "coordinator/report/plot_pages.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "coordinator/plan/arrival_schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/report/plan_fixtures.h"

namespace surge::coordinator {
namespace {

using ::surge::coordinator::testing::InstantPlan;
using ::surge::coordinator::testing::LinearRampTraffic;
using ::surge::coordinator::testing::MixedPlan;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class PlotPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// A ramped, bursty plan from the real generator.
ArrivalSchedule RampedBurstyPlan(uint64_t n) {
  absl::StatusOr<ArrivalSchedule> plan =
      BuildArrivalSchedule(LinearRampTraffic(10, 200, 0.5), n, /*seed=*/42);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

std::vector<ActualSend> JitteredSends(const ArrivalSchedule& plan) {
  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) {
    sends.push_back({i, plan.offset_s[i] + 1e-4 * static_cast<double>((i * 7919) % 13)});
  }
  return sends;
}

std::vector<std::string> TraceNames(const nlohmann::json& fig, const std::string& legend) {
  std::vector<std::string> names;
  for (const auto& tr : fig["data"]) {
    if (tr["legend"] == legend) names.push_back(tr["name"]);
  }
  return names;
}

TEST_F(PlotPagesTest, FileNames) {
  EXPECT_EQ(ExpectedPlotFileName("synthetic"), "synthetic_rps_distribution_plot.html");
  EXPECT_EQ(ActualPlotFileName("sharegpt"), "sharegpt_rps_distribution_plot_with_actual_rps.html");
  EXPECT_EQ(FigureJsonPath("/a/b/x_rps_distribution_plot.html"),
            fs::path("/a/b/x_rps_distribution_plot.json"));
}

TEST_F(PlotPagesTest, ExpectedPageIsSelfContainedWithTitleTracesAndTable) {
  const ArrivalSchedule plan = RampedBurstyPlan(6000);
  const fs::path html = dir_ / ExpectedPlotFileName("synthetic");
  ASSERT_TRUE(WriteExpectedPlotPage(plan, html).ok());
  const std::string page = ReadFile(html);
  const std::string title =
      "Request Per Second(RPS) Distribution Analysis | Target Rate: 200 RPS | Linear Ramp-up: "
      "10→200 RPS";
  EXPECT_THAT(page, HasSubstr("<title>" + title + " — expected</title>"));
  EXPECT_THAT(page, HasSubstr("plotly.js v"));  // inline, no CDN
  EXPECT_THAT(page, Not(HasSubstr("<script src")));
  EXPECT_THAT(page, HasSubstr("Legend Explanation"));
  for (const char* name :
       {"Normal RPS", "Time Interval Caused Anomaly", "Burstiness Caused Anomaly", "50-point EWMA",
        "Theoretical Ramp-up", "Normal Request Count", "Normal Intervals",
        "Time vs RPS - Distribution", "Expected: RPS vs Request Count - Distribution",
        "Expected: Gamma Distribution (burstiness: 0.5)"}) {
    EXPECT_THAT(page, HasSubstr(name)) << name;
  }
  EXPECT_THAT(page, Not(HasSubstr("Actual RPS")));
  // Six columns; one row per trace.
  EXPECT_THAT(page, HasSubstr("<th>Group</th><th>Legend Item</th><th>Meaning</th>"
                              "<th>Computation</th><th>Criterion</th><th>Visual Appearance</th>"));

  const nlohmann::json fig = nlohmann::json::parse(ReadFile(FigureJsonPath(html)));
  EXPECT_EQ(fig["layout"]["title"]["text"], title);
  EXPECT_EQ(fig["data"].size(), fig["legend_table"].size());
  EXPECT_EQ(fig["data"].size(), 9u);
  EXPECT_THAT(TraceNames(fig, "legend"),
              ElementsAre("Normal RPS", "Time Interval Caused Anomaly", "Burstiness Caused Anomaly",
                          "50-point EWMA", "Theoretical Ramp-up"));
  EXPECT_THAT(TraceNames(fig, "legend2"),
              ElementsAre("Normal Request Count", "Time Interval Caused Anomaly"));
  EXPECT_THAT(TraceNames(fig, "legend3"),
              ElementsAre("Normal Intervals", "Time Interval Caused Anomaly"));
  EXPECT_TRUE(fig["layout"]["showlegend"].get<bool>());
  EXPECT_TRUE(fig["layout"].contains("legend3"));
  EXPECT_FALSE(fig["layout"].contains("legend4"));
  EXPECT_EQ(fig["stats"]["requests"], 6000);
  int rows = 0;
  for (size_t pos = page.find("<tr><td>"); pos != std::string::npos;
       pos = page.find("<tr><td>", pos + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 9);
}

TEST_F(PlotPagesTest, ActualPageAddsTheOrangeTraceAndExtras) {
  const ArrivalSchedule plan = RampedBurstyPlan(6000);
  const fs::path html = dir_ / ActualPlotFileName("synthetic");
  const std::vector<ActualSend> sends = JitteredSends(plan);
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, html).ok());
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("Actual RPS: After Excluding Anomalies"));
  EXPECT_THAT(page, HasSubstr(" — actual</title>"));
  EXPECT_THAT(page, HasSubstr("Send lateness p50 / p90 / p99 / max"));
  EXPECT_THAT(page, HasSubstr("Intended rate, (N − 1)/(t_{N−1} − t_0) over the whole plan"));
  EXPECT_THAT(page, HasSubstr("KS distance"));
  const nlohmann::json fig = nlohmann::json::parse(ReadFile(FigureJsonPath(html)));
  EXPECT_THAT(
      TraceNames(fig, "legend"),
      ElementsAre("Normal RPS", "Time Interval Caused Anomaly", "Burstiness Caused Anomaly",
                  "50-point EWMA", "Theoretical Ramp-up", "Actual RPS: After Excluding Anomalies"));
  EXPECT_THAT(TraceNames(fig, "legend4"), ElementsAre("Send Lateness"));
  EXPECT_THAT(TraceNames(fig, "legend5"), ElementsAre("Achieved Rate", "Intended Rate"));
  EXPECT_EQ(fig["data"].size(), fig["legend_table"].size());
  for (const auto& tr : fig["data"]) {
    if (tr["name"] == "Actual RPS: After Excluding Anomalies") {
      EXPECT_EQ(tr["line"]["color"], "#ff7f0e");
    }
  }
  EXPECT_EQ(fig["stats"]["actual"]["sent"], 6000);
  EXPECT_TRUE(fig["stats"]["actual"]["ks_distance"].is_number());
}

// Issue 8 item 3: how the run ended is a visible line on both pages (and
// in their figure JSON), above the context and the plot; no note, no line.
TEST_F(PlotPagesTest, BothPagesShowTheNote) {
  const ArrivalSchedule plan = RampedBurstyPlan(200);
  const std::vector<ActualSend> sends = JitteredSends(plan);
  const PageContext context = {{"Model", "m"}};
  const std::string note = "Run interrupted by the user at 4.97 s: <80> cut off";
  const fs::path actual = dir_ / "noted.html";
  const fs::path expected = dir_ / "noted_expected.html";
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, actual, context, note).ok());
  ASSERT_TRUE(WriteExpectedPlotPage(plan, expected, context, note).ok());
  for (const fs::path& noted : {actual, expected}) {
    const std::string page = ReadFile(noted);
    EXPECT_THAT(page, HasSubstr("<p id=\"surge-note\">Run interrupted by the user at 4.97 s: "
                                "&lt;80&gt; cut off</p>"))
        << noted;
    EXPECT_LT(page.find("id=\"surge-note\""), page.find("<table id=\"surge-context\""));
    EXPECT_LT(page.find("id=\"surge-note\""), page.find("<div id=\"surge-rps-plot\""));
    const nlohmann::json fig = nlohmann::json::parse(ReadFile(FigureJsonPath(noted)));
    EXPECT_EQ(fig["stats"]["note"], note);
  }
  const fs::path plain = dir_ / "plain.html";
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, plain).ok());
  EXPECT_THAT(ReadFile(plain), Not(HasSubstr("<p id=\"surge-note\"")));
}

// Issue 10 item 3: the actual page shows TTFT and E2EL from actual vs from
// planned send in a small table below the context (above the charts), with
// the numbers it was given (the summary's), in ms; the figure JSON carries
// them in seconds under stats.latency. No views, no table.
TEST_F(PlotPagesTest, ActualPageShowsLatencyFromActualAndPlannedSend) {
  const ArrivalSchedule plan = RampedBurstyPlan(400);
  const std::vector<ActualSend> sends = JitteredSends(plan);
  const fs::path html = dir_ / "latency.html";
  const std::vector<LatencyView> latency = {
      {"TTFT", 4, {0.025, 0.037, 0.0397}, {0.065, 0.171, 0.2061}},
      {"E2EL", 4, {0.25, 0.37, 0.397}, {0.275, 0.525, 0.5925}}};
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, html, {{"Model", "m"}}, "", {}, latency).ok());
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("<table id=\"surge-latency\"><thead><tr><th>Latency (ms), OK "
                              "requests</th><th>N</th><th>from actual send p50 / p90 / p99</th>"
                              "<th>from planned send p50 / p90 / p99</th></tr></thead><tbody>\n"
                              "<tr><th>TTFT</th><td>4</td><td>25.000 / 37.000 / 39.700</td>"
                              "<td>65.000 / 171.000 / 206.100</td></tr>\n"
                              "<tr><th>E2EL</th><td>4</td><td>250.000 / 370.000 / 397.000</td>"
                              "<td>275.000 / 525.000 / 592.500</td></tr>\n</tbody></table>\n"));
  EXPECT_LT(page.find("<table id=\"surge-context\""), page.find("<table id=\"surge-latency\""));
  EXPECT_LT(page.find("<table id=\"surge-latency\""), page.find("<div id=\"surge-rps-plot\""));
  const nlohmann::json fig = nlohmann::json::parse(ReadFile(FigureJsonPath(html)));
  const nlohmann::json& rows = fig["stats"]["latency"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["metric"], "TTFT");
  EXPECT_EQ(rows[0]["count"], 4);
  EXPECT_EQ(rows[0]["from_actual_send"]["p50_s"].get<double>(), 0.025);
  EXPECT_EQ(rows[0]["from_planned_send"]["p99_s"].get<double>(), 0.2061);
  EXPECT_EQ(rows[1]["metric"], "E2EL");
  EXPECT_EQ(rows[1]["from_planned_send"]["p90_s"].get<double>(), 0.525);
  // No OK request: n/a cells, null in the JSON.
  const fs::path empty = dir_ / "no_ok.html";
  const std::vector<LatencyView> no_ok = {{"TTFT", 0, {}, {}}};
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, empty, {}, "", {}, no_ok).ok());
  EXPECT_THAT(ReadFile(empty),
              HasSubstr("<tr><th>TTFT</th><td>0</td><td>n/a / n/a / n/a</td><td>n/a / n/a / "
                        "n/a</td></tr>"));
  EXPECT_TRUE(nlohmann::json::parse(ReadFile(
      FigureJsonPath(empty)))["stats"]["latency"][0]["from_planned_send"]["p50_s"]
                  .is_null());
  // Without views (and on the expected page): no table, no JSON key.
  const fs::path plain = dir_ / "plain.html";
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, plain).ok());
  EXPECT_THAT(ReadFile(plain), Not(HasSubstr("surge-latency\"")));
  EXPECT_FALSE(nlohmann::json::parse(ReadFile(FigureJsonPath(plain)))["stats"].contains("latency"));
  const fs::path expected = dir_ / "expected.html";
  ASSERT_TRUE(WriteExpectedPlotPage(plan, expected).ok());
  EXPECT_THAT(ReadFile(expected), Not(HasSubstr("surge-latency\"")));
}

// A lost worker on the actual page: a red dotted line at the
// moment on the Time vs RPS axis (x) and the rate-over-time axis (x5), its
// label naming the worker and the counts (the full sentence on hover), and
// the sentence in the "During the run" list above the context; the figure
// JSON carries the events. No events, no list.
TEST_F(PlotPagesTest, ActualPageMarksRunEventsOnTheTimeAxes) {
  const ArrivalSchedule plan = RampedBurstyPlan(400);
  const std::vector<ActualSend> sends = JitteredSends(plan);
  const fs::path html = dir_ / "lost.html";
  const std::vector<RunEvent> events = {
      {.at_s = 1.25,
       .label = "worker 1 lost: 3 send_unknown, 2 not sent, 40 moved",
       .text = "worker 1 lost at 1.25 s (silent for <1500> ms): 3 send_unknown, 2 not sent, 40 "
               "moved to the others"}};
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, html, {{"Model", "m"}}, "", events).ok());
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("<div id=\"surge-events\"><b>During the run:</b><ul>\n<li>worker 1 "
                              "lost at 1.25 s (silent for &lt;1500&gt; ms): 3 send_unknown, 2 not "
                              "sent, 40 moved to the others</li>"));
  EXPECT_LT(page.find("id=\"surge-events\""), page.find("<table id=\"surge-context\""));
  const nlohmann::json fig = nlohmann::json::parse(ReadFile(FigureJsonPath(html)));
  std::vector<std::string> lines_on;
  for (const auto& shape : fig["layout"]["shapes"]) {
    if (shape["line"]["color"] != kRunEventColor) continue;
    EXPECT_DOUBLE_EQ(shape["x0"].get<double>(), 1.25);
    EXPECT_DOUBLE_EQ(shape["x1"].get<double>(), 1.25);
    lines_on.push_back(shape["xref"]);
  }
  EXPECT_THAT(lines_on, ElementsAre("x", "x5"));
  std::vector<std::string> labels_on;
  for (const auto& a : fig["layout"]["annotations"]) {
    if (a["text"] != events[0].label) continue;
    EXPECT_DOUBLE_EQ(a["x"].get<double>(), 1.25);
    EXPECT_EQ(a["hovertext"], events[0].text);
    EXPECT_EQ(a["font"]["color"], kRunEventColor);
    labels_on.push_back(a["xref"]);
  }
  EXPECT_THAT(labels_on, ElementsAre("x", "x5"));
  ASSERT_EQ(fig["stats"]["events"].size(), 1u);
  EXPECT_DOUBLE_EQ(fig["stats"]["events"][0]["at_s"].get<double>(), 1.25);
  EXPECT_EQ(fig["stats"]["events"][0]["text"], events[0].text);

  const fs::path plain = dir_ / "plain.html";
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, plain).ok());
  EXPECT_THAT(ReadFile(plain), Not(HasSubstr("id=\"surge-events\"")));
  const nlohmann::json plain_fig = nlohmann::json::parse(ReadFile(FigureJsonPath(plain)));
  EXPECT_FALSE(plain_fig["stats"].contains("events"));
}

TEST_F(PlotPagesTest, InstantMode) {
  const ArrivalSchedule plan = InstantPlan(100);
  const fs::path expected = dir_ / ExpectedPlotFileName("synthetic");
  const absl::Status s = WriteExpectedPlotPage(plan, expected);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(expected));

  std::vector<ActualSend> sends;
  for (uint64_t i = 0; i < plan.size(); ++i) sends.push_back({i, 0.001 * static_cast<double>(i)});
  const fs::path actual = dir_ / ActualPlotFileName("synthetic");
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, actual).ok());
  const std::string page = ReadFile(actual);
  EXPECT_THAT(page, HasSubstr("Actual RPS: After Excluding Anomalies"));
  EXPECT_THAT(page, Not(HasSubstr("Normal RPS")));
  EXPECT_THAT(page, Not(HasSubstr("Gamma Distribution")));
  const nlohmann::json fig = nlohmann::json::parse(ReadFile(FigureJsonPath(actual)));
  ASSERT_EQ(fig["data"].size(), 1u);
  EXPECT_EQ(fig["data"][0]["name"], "Actual RPS: After Excluding Anomalies");
  EXPECT_FALSE(fig["layout"].contains("xaxis2"));
  EXPECT_FALSE(fig["layout"].contains("legend2"));
}

TEST_F(PlotPagesTest, SameInputSamePage) {
  const ArrivalSchedule plan = RampedBurstyPlan(30'000);
  const std::vector<ActualSend> sends = JitteredSends(plan);
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, dir_ / "a.html").ok());
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, dir_ / "b.html").ok());
  EXPECT_EQ(ReadFile(dir_ / "a.html"), ReadFile(dir_ / "b.html"));
  EXPECT_EQ(ReadFile(dir_ / "a.json"), ReadFile(dir_ / "b.json"));
}

TEST_F(PlotPagesTest, MillionRequestPageStaysSmall) {
  const ArrivalSchedule plan = RampedBurstyPlan(1'000'000);
  const fs::path html = dir_ / ExpectedPlotFileName("big");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(WriteExpectedPlotPage(plan, html).ok());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto bytes = fs::file_size(html) - EmbeddedPlotlyJs().size();
  RecordProperty("expected_page_seconds", std::to_string(seconds));
  RecordProperty("expected_page_bytes_without_plotly", std::to_string(bytes));
  EXPECT_LT(bytes, 2'000'000u);
  EXPECT_LT(seconds, 5.0);  // generous: sanitizer and debug builds
}

// Issue 8, item 8: both pages carry the run's context, visibly and in the
// JSON, HTML-escaped.
TEST_F(PlotPagesTest, BothPagesShowTheRunContext) {
  const ArrivalSchedule plan = MixedPlan(20, 10, 0, 0);
  const PageContext context = {
      {"Model", "org/m<1>"}, {"Server", "http://127.0.0.1:8000"}, {"surge version", "0.1.0"}};
  const fs::path expected = dir_ / ExpectedPlotFileName("synthetic");
  const fs::path actual = dir_ / ActualPlotFileName("synthetic");
  ASSERT_TRUE(WriteExpectedPlotPage(plan, expected, context).ok());
  const std::vector<ActualSend> sends = {{0, 0.05}, {1, 0.1}};
  ASSERT_TRUE(WriteActualPlotPage(plan, sends, actual, context).ok());
  for (const fs::path& html : {expected, actual}) {
    const std::string page = ReadFile(html);
    EXPECT_THAT(page, HasSubstr("<table id=\"surge-context\"><tbody>\n"
                                "<tr><th>Model</th><td>org/m&lt;1&gt;</td>"
                                "<th>Server</th><td>http://127.0.0.1:8000</td></tr>\n"
                                "<tr><th>surge version</th><td>0.1.0</td></tr>\n</tbody>"))
        << html;
    const nlohmann::json fig = nlohmann::json::parse(ReadFile(FigureJsonPath(html)));
    EXPECT_EQ(fig["context"]["Model"], "org/m<1>");
    EXPECT_EQ(fig["context"]["surge version"], "0.1.0");
  }
  EXPECT_THAT(ReadFile(expected), HasSubstr("Target Rate: 20 RPS — expected</title>"));
  EXPECT_THAT(ReadFile(actual), HasSubstr("Target Rate: 20 RPS — actual</title>"));
  // Two sends give one actual point: drawn as a marker, a line through one
  // point would be invisible.
  const nlohmann::json fig = nlohmann::json::parse(ReadFile(FigureJsonPath(actual)));
  for (const auto& tr : fig["data"]) {
    if (tr["name"] == "Actual RPS: After Excluding Anomalies") {
      EXPECT_EQ(tr["x"].size(), 1u);
      EXPECT_EQ(tr["mode"], "lines+markers");
    }
    if (tr["name"] == "Normal RPS") {
      EXPECT_EQ(tr["mode"], "lines");
    }
  }
}

TEST_F(PlotPagesTest, UnwritablePathIsAnError) {
  const ArrivalSchedule plan = MixedPlan(10, 10, 0, 0);
  const absl::Status s = WriteExpectedPlotPage(plan, "/proc/surge-cannot-write/x.html");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/proc/surge-cannot-write"));
}

}  // namespace
}  // namespace surge::coordinator
