// The request plan: for every request i its intended rate λ_i,
// interval Δ_i, cumulative offset t_i and anomaly class. Built by a pure,
// seeded function of the resolved traffic: no I/O, no clock, no threads.
#ifndef SURGE_COORDINATOR_PLAN_ARRIVAL_SCHEDULE_H_
#define SURGE_COORDINATOR_PLAN_ARRIVAL_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/plan/traffic.h"

namespace surge::coordinator {

// Anomaly class of one planned request (R-ANOM, R-INST). One byte, so a plan
// of 10 M requests keeps its classes in 10 MB.
enum class Anomaly : uint8_t { kNormal = 0, kTiming = 1, kBurstiness = 2, kInstant = 3 };

// "normal", "timing", "burstiness", "instant": the names of R-OUT-2.
std::string_view AnomalyName(Anomaly anomaly);

// Below this planned interval a request is a timing anomaly, seconds (R-ANOM).
inline constexpr double kTimingAnomalyIntervalS = 0.001;
// Above this relative deviation from 1/λ_i a request is a burstiness anomaly.
inline constexpr double kBurstinessAnomalyDeviation = 0.5;

// One traffic class of a merged plan (traffic_classes.h): its name, its
// seed and its own traffic, as its single-class plan has them.
struct TrafficClassPlan {
  std::string name;
  uint64_t seed = 0;
  ResolvedTraffic traffic;
  // Its requests in the merged plan.
  uint64_t requests = 0;
};

// An immutable plan, struct of arrays indexed by request index 0..N-1.
// Offsets are non-decreasing. About 25 bytes per request.
struct ArrivalSchedule {
  // The traffic the plan was built from (rates, β, ramp, target, instant).
  ResolvedTraffic traffic;
  // Seed of the generator the intervals came from (R-RNG).
  uint64_t seed = 0;
  // λ_i, requests/s (R-RATE).
  std::vector<double> rate_rps;
  // Δ_i, seconds, final (after R-NORM); 0 in instant mode.
  std::vector<double> interval_s;
  // t_i, seconds after the run start t0 (R-CUM, R-NORM); 0 in instant mode.
  std::vector<double> offset_s;
  // Class of each request on the final Δ_i (R-ANOM); kInstant in instant mode.
  std::vector<Anomaly> anomaly;
  // Traffic classes (RunConfig.classes), in configured order; empty for a
  // plan without classes, which then leaves the two vectors below empty.
  std::vector<TrafficClassPlan> classes;
  // Each request's class (an index into `classes`) and its index in that
  // class's own plan (0, 1, ... per class, in merged order).
  std::vector<uint16_t> class_index;
  std::vector<uint64_t> class_request;

  size_t size() const { return offset_s.size(); }
  // Number of requests of class `a`.
  size_t Count(Anomaly a) const;
};

// Builds the plan of `num_requests` requests (in order R-RATE →
// R-INT → R-CUM → R-NORM → R-ANOM; R-INST short-circuits). Deterministic for
// a given (traffic, num_requests, seed) on every platform: intervals come
// from Boost.Random's mt19937_64 and gamma_distribution (R-RNG).
// Errors: INVALID_ARGUMENT when num_requests is 0 or traffic is not valid
// (validate the config first; see coordinator/config).
absl::StatusOr<ArrivalSchedule> BuildArrivalSchedule(const ResolvedTraffic& traffic,
                                                     uint64_t num_requests, uint64_t seed);

// Expected interval e_i = 1/λ_i; classifies Δ_i (R-ANOM). Pure.
Anomaly ClassifyInterval(double interval_s, double rate_rps, double burstiness);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_ARRIVAL_SCHEDULE_H_
