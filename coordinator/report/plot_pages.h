// Writes the two RPS distribution pages:
//   {dataset}_rps_distribution_plot.html                  (expected, R-PLOT-*)
//   {dataset}_rps_distribution_plot_with_actual_rps.html  (actual, R-ACT-*)
// Each page is one self-contained HTML file (plotly.js inline, embedded into
// the binary at build time, so it works offline: R-PLOT-2) and beside it
// `<page stem>.json` holds the same figure data ({data, layout} for plotly,
// plus legend_table and stats) for other tools.
//
// The content comes from rps_figure.h (pure); this module only renders and
// touches files. Files are written to `<name>.tmp` and renamed into place, so
// a reader never sees half a page. The parent folder is created if missing
// (R-PLOT-1 layout is the caller's job).
//
// Errors: FAILED_PRECONDITION for the expected page in instant mode
// (R-PLOT-0: the caller should not ask); INVALID_ARGUMENT for a malformed
// plan or sends (see rps_figure.h); INTERNAL when a file cannot be written
// (the message names the path and the OS error).
#ifndef SURGE_COORDINATOR_REPORT_PLOT_PAGES_H_
#define SURGE_COORDINATOR_REPORT_PLOT_PAGES_H_

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/report/reuse_figure.h"
#include "coordinator/report/rps_figure.h"  // ActualSend, RpsFigure
#include "coordinator/report/server_figure.h"
#include "coordinator/report/session_figure.h"

namespace surge::coordinator {

// "{dataset}_rps_distribution_plot.html" (R-PLOT-1).
std::string ExpectedPlotFileName(const std::string& dataset);
// "{dataset}_rps_distribution_plot_with_actual_rps.html" (R-ACT-1).
std::string ActualPlotFileName(const std::string& dataset);
// `<dir>/<stem of html_path>.json`.
std::filesystem::path FigureJsonPath(const std::filesystem::path& html_path);

// R-PLOT-*: the expected page. Not for instant mode (R-PLOT-0): returns
// FAILED_PRECONDITION when plan.traffic.instant. `context` (model, server,
// seed, …; see RunContextItems in coordinator/report/run_context.h) is
// shown above the charts and stored under "context" in the JSON; `note`
// as for the actual page (a run stopped early rewrites its expected page).
// `bands` (the steady-state window) shade the time axes (AddShadedBands).
absl::Status WriteExpectedPlotPage(const ArrivalSchedule& plan,
                                   const std::filesystem::path& html_path,
                                   const PageContext& context = {}, std::string_view note = {},
                                   std::span<const ShadedBand> bands = {});

// R-ACT-*: the actual page: the expected figure plus the orange actual trace
// and the R-ACT-5 charts (lateness, achieved vs intended rate, KS distance);
// in instant mode only the actual Time vs RPS chart (R-ACT-4). `sends` are
// the requests that were sent (any order, any subset of the plan).
// `context` as for the expected page. `note`, when not empty, is shown as a
// line above the context (RpsFigure::note), e.g. that the run was
// interrupted and when. `events` (e.g. worker losses, see worker_losses.h)
// are drawn as red vertical lines on the time axes and listed above the
// context (AddRunEvents). `latency` (TTFT and E2EL from actual vs from
// planned send, RpsFigure::latency) is shown as a small table below the
// context; empty = no table. `late_marks` (late, skipped and delayed
// requests of the late-send policy) become marker traces on the Time vs RPS
// chart (AddLateMarks); empty = none. `lateness`: the summary's send
// lateness percentiles (BuildActualRpsFigure). `bands` (the steady-state
// window, the warm-ups before t0) shade the time axes (AddShadedBands).
// `reuse` (the measured prefix reuse over time and the planned line) adds
// the prefix-reuse chart (reuse_figure.h); null = none. `server` (the
// server's running and waiting requests from its /metrics) adds two traces
// on the Time vs RPS chart's secondary y axis (server_figure.h); null or
// empty = none. `turns` (a multi-turn run: every turn sent) adds the
// turns' rate and TTFT-by-turn charts (session_figure.h); null = none.
absl::Status WriteActualPlotPage(
    const ArrivalSchedule& plan, std::span<const ActualSend> sends,
    const std::filesystem::path& html_path, const PageContext& context = {},
    std::string_view note = {}, std::span<const RunEvent> events = {},
    std::span<const LatencyView> latency = {}, std::span<const LateMark> late_marks = {},
    const std::optional<SendLatenessPercentiles>& lateness = std::nullopt,
    std::span<const ShadedBand> bands = {}, const ReuseSeries* reuse = nullptr,
    const ServerSeries* server = nullptr, const std::vector<TurnSample>* turns = nullptr);

// Lower level, for `surge report` and tests: the figure as JSON text
// ({"data", "layout", "legend_table", "context", "stats"}), deterministic.
std::string RenderFigureJson(const RpsFigure& figure);
// Writes `figure` as a page at html_path and its JSON beside it.
absl::Status WriteFigurePage(const RpsFigure& figure, const std::filesystem::path& html_path);

// The plotly.js source embedded into the binary (R-PLOT-2).
std::string_view EmbeddedPlotlyJs();

// `s` with &, <, > and " written as HTML entities, for text in a page.
std::string HtmlEscape(std::string_view s);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_PLOT_PAGES_H_
