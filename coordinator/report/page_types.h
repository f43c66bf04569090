// The pieces the RPS pages are made of, shared by the figure builders
// (rps_figure.h), the run context (run_context.h), the run's events
// (worker_losses.h, schedule_verdict.h) and the renderer (plot_pages.h):
// traces with their legend rows, charts, vertical markers, run events,
// context rows and latency views. Plain data.
#ifndef SURGE_COORDINATOR_REPORT_PAGE_TYPES_H_
#define SURGE_COORDINATOR_REPORT_PAGE_TYPES_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "coordinator/report/plot_model.h"  // XySeries

namespace surge::coordinator {

enum class TraceKind { kLine, kMarkers, kBars };

// One row of the "Legend Explanation" table (R-PLOT-6).
struct LegendRow {
  std::string group;
  std::string item;
  std::string meaning;
  std::string computation;
  std::string criterion;
  std::string appearance;
};

struct FigureTrace {
  std::string name;
  size_t chart = 0;  // index into RpsFigure::charts; its legend is the chart's
  TraceKind kind = TraceKind::kLine;
  std::string color;
  std::string dash = "solid";  // plotly line dash
  std::string line_shape;      // plotly line shape, "" = linear
  double line_width = 1.5;
  std::string symbol;  // plotly marker symbol (kMarkers)
  double marker_size = 8;
  std::vector<double> bar_widths;  // kBars: per-bin width in data units; x is the centre
  std::string hover;               // plotly hovertemplate
  XySeries points;                 // what is drawn
  uint64_t full_count = 0;         // how many points the trace stands for (R-PLOT-8)
  LegendRow row;
  // Drawn against its chart's secondary y axis (FigureChart::y2_title).
  bool secondary_y = false;
};

// A labelled vertical line on a chart (percentiles on the lateness chart,
// run events on the time axes).
struct VerticalMarker {
  double x;
  std::string label;
  // Line and label colour (CSS).
  std::string color = "#444444";
  // Shown when the pointer rests on the label; "" = none.
  std::string hover = "";
};

// A shaded stretch of a time axis, seconds after t0: the steady-state
// window (docs/DATASETS.md "Warm-up and steady state") on both pages, the
// warm-ups before t0 on the actual page. Drawn as a plotly rect under the
// traces over the chart's whole height, `label` at its top.
struct ShadedBand {
  double x0_s = 0;
  double x1_s = 0;
  std::string label;
  // Fill colour (CSS, with its alpha).
  std::string color = "rgba(46,139,87,0.12)";
  // Shown when the pointer rests on the label; "" = none.
  std::string hover = "";
};

// Something that happened during the run at a known time, e.g. a worker
// lost and its requests taken over. On the actual page: a vertical line at
// at_s on every time axis (Time vs RPS, Achieved vs Intended Rate) carrying
// `label`, and `text` in the list of run events above the charts.
struct RunEvent {
  // Seconds after t0 on the coordinator's clock.
  double at_s = 0;
  // Short, on the line: "worker 2 lost: 52 send_unknown, 25 not sent, 3,010 moved".
  std::string label;
  // The full sentence, in the event list and on hover.
  std::string text;
};

// Colour of run-event lines and labels (dark red).
inline constexpr char kRunEventColor[] = "#b22222";

struct FigureChart {
  std::string title;
  std::string legend_title;  // the group name shown on the chart's legend
  std::string x_title;
  std::string y_title;
  bool x_log = false;         // x axis type
  bool y_log = false;         // initial y axis type
  bool y_log_toggle = false;  // add Linear/Log buttons for the y axis
  // x is the run's time axis (seconds after t0): run events are drawn here.
  bool time_axis = false;
  std::vector<VerticalMarker> markers = {};
  // Shaded stretches of the x axis (AddShadedBands); empty = none.
  std::vector<ShadedBand> bands = {};
  // The title of a secondary y axis on the right, for the traces marked
  // secondary_y (the server's requests, server_figure.h); "" = none.
  std::string y2_title = "";
};

// One line of the run context shown at the top of both pages (model,
// server, dataset, seed, …): a label and its value, plain text.
struct ContextItem {
  std::string label;
  std::string value;
};
using PageContext = std::vector<ContextItem>;

// p50/p90/p99 of one latency, seconds; NaN when it has no value.
struct LatencyPercentiles {
  double p50_s = std::numeric_limits<double>::quiet_NaN();
  double p90_s = std::numeric_limits<double>::quiet_NaN();
  double p99_s = std::numeric_limits<double>::quiet_NaN();
};

// One latency metric in both views, for the actual page's latency table:
// counted from each request's actual send (what the server took) and from
// its planned send (actual-send value + the request's lateness: what a user
// arriving on schedule waited; the coordinated-omission view). The caller
// fills it from the run summary (RunSummary ttft_s / ttft_from_planned_s,
// …); the page computes no statistics of its own.
struct LatencyView {
  std::string metric;  // "TTFT", "E2EL"
  uint64_t count = 0;  // requests both views cover (OK requests)
  LatencyPercentiles from_actual_send;
  LatencyPercentiles from_planned_send;
};

// Send lateness (actual − planned send) p50/p90/p99/max, seconds, as the
// run summary gives them; NaN when nothing was sent.
struct SendLatenessPercentiles {
  double p50_s = std::numeric_limits<double>::quiet_NaN();
  double p90_s = std::numeric_limits<double>::quiet_NaN();
  double p99_s = std::numeric_limits<double>::quiet_NaN();
  double max_s = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_PAGE_TYPES_H_
