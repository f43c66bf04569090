// Traffic config: what the traffic keys of a validated config ask for
// (docs/TRAFFIC.md). Composed traffic (stages, spikes, the mmpp sampler)
// becomes a rate profile with β per stage; every key's problem is named by
// its field. Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_PLAN_TRAFFIC_CONFIG_H_
#define SURGE_COORDINATOR_PLAN_TRAFFIC_CONFIG_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/plan/rate_profile.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// True when the config asks for composed traffic: stages, spikes or the
// mmpp sampler (mmpp_states).
bool UsesComposedTraffic(const surge::v1::RunConfig& config);

// The composed traffic of a config: traffic_cfg.stages (or, without stages,
// one stage of num_prompts requests at request_rate, or on the configured
// ramp in time) with traffic_cfg.spikes laid over it. β per stage goes to
// `stage_burstiness` (may be null): the stage's own, else traffic_cfg.burstiness.
// Errors: INVALID_ARGUMENT, "invalid configuration:" and one line per
// problem, "  <field path> = <value>: <what is allowed>".
absl::StatusOr<std::unique_ptr<RateProfile>> MakeRateProfile(const surge::v1::RunConfig& config,
                                                             std::vector<double>* stage_burstiness);

// The problems of the composed-traffic keys (stages, spikes, sampler,
// mmpp_states) and their interplay with request_rate, the ramp keys and
// num_prompts, without building the profile; one line per problem as above
// (empty: fine).
std::vector<std::string> TrafficKeyProblems(const surge::v1::RunConfig& config);

// TrafficKeyProblems, then (when there are none and the traffic is
// composed) the problems MakeRateProfile finds. Used by ValidateRunConfig.
std::vector<std::string> TrafficConfigProblems(const surge::v1::RunConfig& config);

// CheckTraffic (traffic.h) of the config's traffic: refuses a configured
// ramp-up that is inactive and would fall back to instant mode. OK for trace
// replay and composed traffic (never instant).
absl::Status CheckTrafficConfig(const surge::v1::RunConfig& config);

// True when the config plans every request at once (R-INST): never for
// trace replay (the trace's offsets decide) or composed traffic.
bool PlansInstantMode(const surge::v1::RunConfig& config);

// The factor trace replay scales the trace's timestamps by (1 unless
// trace_time_scale is given).
double TraceTimeScale(const surge::v1::RunConfig& config);

// What a run says about its traffic keys before planning, in order: for
// trace replay the traffic keys the trace's timestamps override; else the
// ramp-up rule's warning and, in instant mode, how many requests go at once.
std::vector<std::string> TrafficWarnings(const surge::v1::RunConfig& config);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_TRAFFIC_CONFIG_H_
