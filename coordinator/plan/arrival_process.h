// Arrival processes (docs/TRAFFIC.md): the traffic model that makes a plan,
// built by one factory from the config. The AISBench keys alone keep the
// seed's plan exactly (R-RATE, R-INT, R-CUM, R-NORM: BuildArrivalSchedule);
// composed traffic is a rate profile (traffic_config.h) × an interval
// sampler (interval_sampler.h), both built once; a trace replay keeps
// BuildReplaySchedule. Each process describes its traffic
// (TrafficDescription) in the plan it makes. Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_PLAN_ARRIVAL_PROCESS_H_
#define SURGE_COORDINATOR_PLAN_ARRIVAL_PROCESS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/interval_sampler.h"
#include "coordinator/plan/traffic.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// The plan (ArrivalSchedule) of sampled arrivals: offsets as drawn, Δ_i =
// t_i − t_{i−1} (Δ_0 = t_0), λ_i = the arrival's rate, classes by R-ANOM with
// the arrival's β. `traffic` is stored in the plan.
ArrivalSchedule ScheduleFromArrivals(const std::vector<SampledArrival>& arrivals,
                                     const ResolvedTraffic& traffic, uint64_t seed);

// A traffic model that makes a plan.
class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // The traffic this process plans, described (stored in every plan).
  virtual const ResolvedTraffic& Traffic() const = 0;
  // The plan for `seed`. Errors: INVALID_ARGUMENT (see each kind).
  virtual absl::StatusOr<ArrivalSchedule> Generate(uint64_t seed) const = 0;
  // Page and log title, e.g. "Diurnal 5–50 RPS ... × Gamma(β = 1)".
  std::string Title() const { return Traffic().description.title; }
};

// The one factory: from a validated config, the process its traffic keys
// describe — the seed's (AISBench keys only: constant or index-ramped rate ×
// fixed or Gamma intervals, exactly BuildArrivalSchedule), a composed one
// (stages, spikes or the mmpp sampler: MakeRateProfile × sampler), or, when
// `replay_offsets_s` is given (trace replay), the trace's offsets.
// Errors: INVALID_ARGUMENT naming the field (as TrafficConfigProblems).
absl::StatusOr<std::unique_ptr<ArrivalProcess>> MakeArrivalProcess(
    const surge::v1::RunConfig& config, const std::vector<double>* replay_offsets_s = nullptr);

// The traffic a config's keys plan, described: R-RAMP, R-TGT and R-INST
// for the AISBench keys; for composed traffic the profile's mean and peak
// (to 6 significant digits) and the sampler. An invalid composed config
// (see TrafficConfigProblems) gives no profile and no description.
ResolvedTraffic ResolveTraffic(const surge::v1::RunConfig& config);

// Warnings about a finished plan: a small β whose Gamma intervals put half
// the plan or more under 1 ms when intervals of 2 ms and more were to be
// expected (the requests would go out in bursts). None for trace replay or
// instant mode.
std::vector<std::string> PlanWarnings(const ArrivalSchedule& plan);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_ARRIVAL_PROCESS_H_
