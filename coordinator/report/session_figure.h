// The actual page's charts of a multi-turn run (docs/SESSIONS.md): the
// rate of every turn sent beside the plan's session starts (the plan is
// the starts: a later turn is due its think time after the previous answer,
// known only as the run goes), and TTFT by turn number, the cost of a
// growing history. Pure.
#ifndef SURGE_COORDINATOR_REPORT_SESSION_FIGURE_H_
#define SURGE_COORDINATOR_REPORT_SESSION_FIGURE_H_

#include <cstdint>
#include <vector>

#include "coordinator/report/rps_figure.h"

namespace surge::coordinator {

inline constexpr char kTurnRateTitle[] = "Actual: Turns Sent vs Planned Session Starts";
inline constexpr char kTurnTtftTitle[] = "Actual: TTFT by Turn";
inline constexpr char kTurnsSentName[] = "Turns sent (all turns)";
inline constexpr char kStartsPlannedName[] = "Session starts planned";
inline constexpr char kTurnTtftP50Name[] = "TTFT p50 by turn";
inline constexpr char kTurnTtftP90Name[] = "TTFT p90 by turn";

// One turn that was sent.
struct TurnSample {
  double sent_s = 0;  // actual send, s after t0
  uint32_t turn = 0;  // from 0
  // TTFT, s; 0 when the turn got no first token.
  double ttft_s = 0;
};

// Adds the two charts and their traces to an actual figure (not in
// instant mode), the rate in bins of the rate chart's width; the planned
// starts are `start_offsets_s` (the plan). Nothing without samples.
void AddSessionCharts(const std::vector<TurnSample>& samples,
                      const std::vector<double>& start_offsets_s, RpsFigure& fig);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_REPORT_SESSION_FIGURE_H_
