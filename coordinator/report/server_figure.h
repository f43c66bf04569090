// The server's own view on the actual page (docs/METRICS.md "Server
// telemetry"): the running and waiting requests its /metrics reported,
// drawn on the Time vs RPS chart against a secondary y axis, on the plan's
// time axis (seconds after t0). Pure.
#ifndef SURGE_COORDINATOR_REPORT_SERVER_FIGURE_H_
#define SURGE_COORDINATOR_REPORT_SERVER_FIGURE_H_

#include <string>

#include "coordinator/report/plot_model.h"
#include "coordinator/report/rps_figure.h"

namespace surge::coordinator {

inline constexpr char kServerRunningName[] = "Server: running requests";
inline constexpr char kServerWaitingName[] = "Server: waiting requests";

// The successful scrapes' values, x = t_s (s after t0).
struct ServerSeries {
  XySeries running;
  XySeries waiting;
  std::string url;        // where they were scraped
  double interval_s = 1;  // how often
};

// Adds the two traces (each only when it has points) to the Time vs RPS
// chart, after its own traces, with a legend row each; the chart gets its
// secondary y axis. Nothing without points.
void AddServerTraces(const ServerSeries& server, RpsFigure& fig);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_SERVER_FIGURE_H_
