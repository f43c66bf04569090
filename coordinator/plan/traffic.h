// Resolved traffic: what the validated AISBench keys mean once the ramp-up
// rule (R-RAMP), the target-rate rule (R-TGT) and instant mode (R-INST) are
// applied, and the description every arrival process fills for the pages,
// the run context and the log. Pure.
#ifndef SURGE_COORDINATOR_PLAN_TRAFFIC_H_
#define SURGE_COORDINATOR_PLAN_TRAFFIC_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/plan/rate_profile.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

enum class RampStrategy { kNone, kLinear, kExponential };

// Below this target rate (requests/s) a run is in instant mode (R-INST); so
// is a request_rate of +inf (vLLM's `--request-rate inf`).
inline constexpr double kInstantModeBelowRps = 0.1;

// Names of the line the expected page draws for the intended rate.
inline constexpr char kTheoreticalRampName[] = "Theoretical Ramp-up";
// Composed traffic (docs/TRAFFIC.md): the profile's closed-form λ(t).
inline constexpr char kTheoreticalRateName[] = "Theoretical Rate λ(t)";

// The first part of every page heading; the traffic's short title follows.
inline constexpr char kPageTitlePrefix[] = "Request Per Second(RPS) Distribution Analysis | ";

// A fact about the traffic for the pages' run context: a label, a value.
struct TrafficFact {
  std::string label;
  std::string value;
};

// The intended rate the expected page draws as a green dashed line on the
// Time vs RPS chart, with the texts of its legend row.
struct TheoreticalRate {
  std::string name;
  // Plotly hovertemplate of the line.
  std::string hover;
  std::string meaning;
  std::string computation;
  std::string criterion;
  // λ(t) as (t, λ) points. Empty: the line is the plan's own λ_i at t_i,
  // which the page decimates (and says how many points it drew).
  std::vector<RatePoint> curve;
};

// How a traffic describes itself. Filled by the process that plans it
// (DescribeSeedTraffic, ResolveReplayTraffic, the composed process), stored
// with the traffic, read as is by every consumer.
struct TrafficDescription {
  // The traffic in one line, e.g. "Diurnal 5–50 RPS, period 30 s × Gamma(β = 1)".
  std::string title;
  // The page heading after kPageTitlePrefix, e.g. "Target Rate: 20 RPS |
  // Linear Ramp-up: 1→20 RPS" (R-PLOT-2).
  std::string short_title;
  // The intended-rate line; none when the rate is flat or unknown (a constant
  // request_rate, a trace, instant mode).
  std::optional<TheoreticalRate> theoretical;
  // The log line "plan: N requests, seed S, <log_line>" ends with this.
  std::string log_line;
  // Logged right before that line; empty = nothing.
  std::string log_intro;
  // Rows of the run context: the request rate, the burstiness (or the
  // interval sampler), the ramp-up.
  std::vector<TrafficFact> context;
};

struct ResolvedTraffic {
  // request_rate, requests/s (used when ramp-up is inactive).
  double request_rate_rps = 0;
  // β, shape of the Gamma intervals; 0 = fixed intervals.
  double burstiness = 0;
  // The strategy as configured (even when inactive).
  RampStrategy strategy = RampStrategy::kNone;
  // True when R-RAMP's four conditions hold.
  bool ramp_active = false;
  // Ramp start and end rates, requests/s; 0 when not configured.
  double ramp_start_rps = 0;
  double ramp_end_rps = 0;
  // R-TGT: ramp end when the ramp is active, else request_rate.
  double target_rate_rps = 0;
  // R-INST: target rate < 0.1, or request_rate +inf.
  bool instant = false;
  // One line per R-RAMP condition that failed for a configured strategy.
  std::vector<std::string> warnings;
  // A strategy was configured but R-RAMP made it inactive: the failed
  // condition, e.g. "end (10) < start (50)", and the field it names
  // ("traffic_cfg.ramp_up_end_rps"). Empty when no strategy or active.
  std::string ramp_inactive_reason;
  std::string ramp_inactive_field;
  // True for a trace replay plan (replay_schedule.h): the rates are the
  // trace's mean rate and `burstiness` is the trace's moment estimate.
  bool trace_replay = false;
  // Composed traffic (docs/TRAFFIC.md: stages, spikes, mmpp): the rate
  // profile λ(t), built once by the arrival process. Null for the AISBench
  // keys alone and trace replay. Then request_rate_rps is the profile's mean
  // rate Λ(D)/D, target_rate_rps its peak, burstiness traffic_cfg.burstiness
  // (1 for mmpp), never instant.
  std::shared_ptr<const RateProfile> profile;
  // What the pages, the run context and the log say about this traffic.
  TrafficDescription description;
};

// "Linear", "Exponential", "" (page titles).
std::string_view RampStrategyTitle(RampStrategy strategy);

// R-RAMP, R-TGT and R-INST of the AISBench keys alone (no profile), with
// their description (DescribeSeedTraffic over num_prompts requests).
ResolvedTraffic ResolveSeedTraffic(const surge::v1::RunConfig& config);

// The description of traffic planned from the AISBench keys alone: a
// constant or ramped rate × fixed or Gamma intervals over `num_requests`
// requests, or instant mode. Pure.
TrafficDescription DescribeSeedTraffic(const ResolvedTraffic& traffic, uint64_t num_requests);

// The run context's burstiness text: "0.5 (bursty Gamma intervals)".
std::string BurstinessText(double burstiness);

// Refuses traffic that would turn into a burst by accident: a ramp-up the
// user configured is inactive (R-RAMP) and the fallback request_rate is below
// 0.1, so R-INST would send all `num_requests` at once. Pure. Errors:
// INVALID_ARGUMENT, one line "  <field> = <value>: <why>; <what would work>".
absl::Status CheckTraffic(const ResolvedTraffic& traffic, uint64_t num_requests);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_TRAFFIC_H_
