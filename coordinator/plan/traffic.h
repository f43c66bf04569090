// Resolved traffic: what the validated AISBench keys mean once R-RAMP, R-TGT
// and R-INST are applied (SPEC §2). Pure.
#ifndef SURGE_COORDINATOR_PLAN_TRAFFIC_H_
#define SURGE_COORDINATOR_PLAN_TRAFFIC_H_

#include <memory>
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
  // profile λ(t) whose curve the expected page draws, and the sampler's
  // title. Null / empty for the seed's traffic and trace replay. Then
  // request_rate_rps is the profile's mean rate Λ(D)/D, target_rate_rps its
  // peak, burstiness traffic_cfg.burstiness (1 for mmpp), never instant.
  std::shared_ptr<const RateProfile> profile;
  std::string sampler_title;
};

// "Linear", "Exponential", "" (page titles).
std::string_view RampStrategyTitle(RampStrategy strategy);

// Applies R-RAMP, R-TGT and R-INST to a validated config; for composed
// traffic (UsesComposedTraffic) also builds the rate profile. Pure; never
// fails (validation is coordinator/config's job; an invalid composed config
// leaves `profile` null).
ResolvedTraffic ResolveTraffic(const surge::v1::RunConfig& config);

// R-RAMP, R-TGT and R-INST of the AISBench keys alone (no profile).
ResolvedTraffic ResolveSeedTraffic(const surge::v1::RunConfig& config);

// True when the config asks for composed traffic: stages, spikes or the
// mmpp sampler (mmpp_states).
bool UsesComposedTraffic(const surge::v1::RunConfig& config);

// Refuses traffic that would turn into a burst by accident: a ramp-up the
// user configured is inactive (R-RAMP) and the fallback request_rate is below
// 0.1, so R-INST would send all `num_requests` at once. Pure. Errors:
// INVALID_ARGUMENT, one line "  <field> = <value>: <why>; <what would work>".
absl::Status CheckTraffic(const ResolvedTraffic& traffic, uint64_t num_requests);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_TRAFFIC_H_
