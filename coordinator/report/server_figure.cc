#include "coordinator/report/server_figure.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "coordinator/plan/number_format.h"
#include "coordinator/report/figure_parts.h"

namespace surge::coordinator {
namespace {

// Apart from the rate chart's blue, purple and orange.
constexpr char kTeal[] = "#17becf";

using figure_internal::kBrown;
using figure_internal::kTimeChart;
using figure_internal::MakeTrace;
using figure_internal::TraceSpec;

constexpr TraceSpec kRunningSpec = {
    .name = kServerRunningName,
    .chart = kTimeChart,
    .kind = TraceKind::kLine,
    .color = kTeal,
    .hover = "server at %{x:.4g} s<br>running %{y} requests",
    .meaning =
        "Requests the server was running (in its batch) when scraped: "
        "vllm:num_requests_running or sglang:num_running_reqs, summed over engines.",
    .look = "Teal step line, right y axis",
    .line_shape = "hv",
    .line_width = 2};
constexpr TraceSpec kWaitingSpec = {
    .name = kServerWaitingName,
    .chart = kTimeChart,
    .kind = TraceKind::kLine,
    .color = kBrown,
    .hover = "server at %{x:.4g} s<br>waiting %{y} requests",
    .meaning =
        "Requests queued at the server, not yet running, when scraped: "
        "vllm:num_requests_waiting or sglang:num_queue_reqs, summed over engines. A "
        "queue that keeps growing means the offered rate is above the server's capacity.",
    .look = "Brown dashed step line, right y axis",
    .dash = "dash",
    .line_shape = "hv",
    .line_width = 2};

FigureTrace ServerTrace(const TraceSpec& spec, const XySeries& points, const ServerSeries& s) {
  FigureTrace tr = MakeTrace(
      spec, points, points.size(),
      {.criterion =
           absl::StrCat("Every successful scrape of ", s.url, " (every ", FormatShort(s.interval_s),
                        " s): ", FormatCount(points.size()), " samples."),
       .appearance = absl::StrCat(spec.look, "; all ", FormatCount(points.size()), " points drawn"),
       .computation = "The gauge's value at the scrape, drawn at the scrape's send time on the "
                      "coordinator's clock, seconds after t0 (the plan's time axis)."});
  tr.secondary_y = true;
  return tr;
}

}  // namespace

void AddServerTraces(const ServerSeries& server, RpsFigure& fig) {
  if (server.running.size() == 0 && server.waiting.size() == 0) return;
  if (fig.charts.size() <= kTimeChart) return;
  fig.charts[kTimeChart].y2_title = "Server requests (running, waiting)";
  // After the chart's own traces: the traces stay grouped by chart.
  auto at = std::find_if(fig.traces.begin(), fig.traces.end(),
                         [](const FigureTrace& t) { return t.chart > kTimeChart; });
  std::vector<FigureTrace> added;
  if (server.running.size() > 0) added.push_back(ServerTrace(kRunningSpec, server.running, server));
  if (server.waiting.size() > 0) added.push_back(ServerTrace(kWaitingSpec, server.waiting, server));
  fig.traces.insert(at, added.begin(), added.end());
}

}  // namespace surge::coordinator
