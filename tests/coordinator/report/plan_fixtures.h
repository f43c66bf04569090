// Hand-built plans for the plot tests: ArrivalSchedule is a plain struct, so
// tests fix every interval and class exactly instead of going through the
// seeded generator. Each traffic carries its description (DescribeSeedTraffic;
// a fixture's traffic alone is described over 0 requests, a plan over its own).
#ifndef SURGE_TESTS_COORDINATOR_REPORT_PLAN_FIXTURES_H_
#define SURGE_TESTS_COORDINATOR_REPORT_PLAN_FIXTURES_H_

#include <vector>

#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"

namespace surge::coordinator::testing {

// Constant-rate traffic without ramp-up.
inline ResolvedTraffic ConstantTraffic(double rate_rps, double burstiness) {
  ResolvedTraffic t;
  t.request_rate_rps = rate_rps;
  t.burstiness = burstiness;
  t.target_rate_rps = rate_rps;
  t.instant = rate_rps < kInstantModeBelowRps;
  t.description = DescribeSeedTraffic(t, 0);
  return t;
}

inline ResolvedTraffic LinearRampTraffic(double start_rps, double end_rps, double burstiness) {
  ResolvedTraffic t;
  t.request_rate_rps = end_rps;
  t.burstiness = burstiness;
  t.strategy = RampStrategy::kLinear;
  t.ramp_active = true;
  t.ramp_start_rps = start_rps;
  t.ramp_end_rps = end_rps;
  t.target_rate_rps = end_rps;
  t.description = DescribeSeedTraffic(t, 0);
  return t;
}

// A plan with the given intervals and classes; λ_i = the request rate,
// t_i = Σ Δ.
inline ArrivalSchedule PlanFrom(const ResolvedTraffic& traffic,
                                const std::vector<double>& intervals,
                                const std::vector<Anomaly>& classes) {
  ArrivalSchedule plan;
  plan.traffic = traffic;
  plan.traffic.description = DescribeSeedTraffic(traffic, intervals.size());
  double t = 0;
  for (size_t i = 0; i < intervals.size(); ++i) {
    t += intervals[i];
    plan.rate_rps.push_back(traffic.request_rate_rps);
    plan.interval_s.push_back(intervals[i]);
    plan.offset_s.push_back(t);
    plan.anomaly.push_back(classes[i]);
  }
  return plan;
}

// `normal` normal requests at `rate_rps`, then `timing` timing anomalies
// (Δ = 0.5 ms) and `burst` burstiness anomalies (Δ = 3/λ), interleaved
// evenly over time.
inline ArrivalSchedule MixedPlan(double rate_rps, size_t normal, size_t timing, size_t burst) {
  const size_t n = normal + timing + burst;
  std::vector<double> iv(n);
  std::vector<Anomaly> cls(n);
  size_t nt = 0, nb = 0;
  for (size_t i = 0; i < n; ++i) {
    // Spread the anomalies evenly: request i is a timing anomaly when the
    // running share of timing anomalies falls behind, likewise burstiness.
    if (timing > 0 && nt * n < (i + 1) * timing) {
      iv[i] = 0.0005;
      cls[i] = Anomaly::kTiming;
      ++nt;
    } else if (burst > 0 && nb * n < (i + 1) * burst) {
      iv[i] = 3.0 / rate_rps;
      cls[i] = Anomaly::kBurstiness;
      ++nb;
    } else {
      iv[i] = 1.0 / rate_rps;
      cls[i] = Anomaly::kNormal;
    }
  }
  return PlanFrom(ConstantTraffic(rate_rps, burst > 0 ? 0.5 : 0), iv, cls);
}

// Instant mode (R-INST): every request due at 0.
inline ArrivalSchedule InstantPlan(size_t n) {
  ResolvedTraffic t = ConstantTraffic(0, 0);
  ArrivalSchedule plan;
  plan.traffic = t;
  plan.traffic.description = DescribeSeedTraffic(t, n);
  plan.rate_rps.assign(n, 0);
  plan.interval_s.assign(n, 0);
  plan.offset_s.assign(n, 0);
  plan.anomaly.assign(n, Anomaly::kInstant);
  return plan;
}

}  // namespace surge::coordinator::testing

#endif  // SURGE_TESTS_COORDINATOR_REPORT_PLAN_FIXTURES_H_
