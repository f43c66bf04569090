#include "coordinator/plan/arrival_schedule.h"

#include <algorithm>
#include <boost/random/gamma_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace surge::coordinator {
namespace {

// λ_i of R-RATE, with p_i = i/(N−1) (p_0 = 0 when N = 1).
double RateAt(const ResolvedTraffic& t, uint64_t i, uint64_t n) {
  if (!t.ramp_active) return t.request_rate_rps;
  const double p = n > 1 ? static_cast<double>(i) / static_cast<double>(n - 1) : 0.0;
  if (t.strategy == RampStrategy::kLinear) {
    return t.ramp_start_rps + (t.ramp_end_rps - t.ramp_start_rps) * p;
  }
  return t.ramp_start_rps * std::pow(t.ramp_end_rps / t.ramp_start_rps, p);
}

// Neumaier (improved Kahan) summation: t_i stays exact to about 1 ulp even
// after 10 M additions, so offsets do not drift by accumulated rounding.
class CompensatedSum {
 public:
  double Add(double x) {
    const double s = sum_ + x;
    if (std::fabs(sum_) >= std::fabs(x)) {
      compensation_ += (sum_ - s) + x;
    } else {
      compensation_ += (x - s) + sum_;
    }
    sum_ = s;
    return sum_ + compensation_;
  }

 private:
  double sum_ = 0;
  double compensation_ = 0;
};

absl::Status DegeneratePlanError(const ResolvedTraffic& t, size_t n, double last_offset_s) {
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid configuration:\n  traffic_cfg.burstiness = ", t.burstiness,
      ": with this shape the Gamma intervals round to ",
      std::isfinite(last_offset_s) ? "0" : "a non-finite value", ", so all ", n,
      " requests would be due at the same instant instead of at ", t.target_rate_rps,
      " RPS; use a larger burstiness: below about 0.01 the draws underflow (0.5 is "
      "already bursty, 1 = Poisson, 0 = fixed intervals; flag --burstiness), or a request_rate "
      "below 0.1 if one burst of every request is meant (instant mode)"));
}

}  // namespace

std::string_view AnomalyName(Anomaly anomaly) {
  switch (anomaly) {
    case Anomaly::kNormal:
      return "normal";
    case Anomaly::kTiming:
      return "timing";
    case Anomaly::kBurstiness:
      return "burstiness";
    case Anomaly::kInstant:
      return "instant";
  }
  return "normal";
}

size_t ArrivalSchedule::Count(Anomaly a) const {
  size_t n = 0;
  for (Anomaly x : anomaly) n += (x == a);
  return n;
}

Anomaly ClassifyInterval(double interval_s, double rate_rps, double burstiness) {
  // R-ANOM: T = {Δ < 1 ms}, also for β = 0; B = {|Δ − e|/e > 0.5} \ T, empty for β = 0.
  if (interval_s < kTimingAnomalyIntervalS) return Anomaly::kTiming;
  if (burstiness == 0) return Anomaly::kNormal;
  const double expected_s = 1.0 / rate_rps;
  if (std::fabs(interval_s - expected_s) / expected_s > kBurstinessAnomalyDeviation) {
    return Anomaly::kBurstiness;
  }
  return Anomaly::kNormal;
}

absl::StatusOr<ArrivalSchedule> BuildArrivalSchedule(const ResolvedTraffic& traffic,
                                                     uint64_t num_requests, uint64_t seed) {
  if (num_requests == 0) return absl::InvalidArgumentError("num_prompts must be >= 1");
  if (!std::isfinite(traffic.burstiness) || traffic.burstiness < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("traffic_cfg.burstiness must be >= 0, got ", traffic.burstiness));
  }
  if (absl::Status s = CheckTraffic(traffic, num_requests); !s.ok()) return s;
  ArrivalSchedule plan;
  plan.traffic = traffic;
  plan.traffic.description = DescribeSeedTraffic(traffic, num_requests);
  plan.seed = seed;
  const size_t n = static_cast<size_t>(num_requests);
  plan.rate_rps.resize(n);
  plan.interval_s.resize(n);
  plan.offset_s.resize(n);
  plan.anomaly.resize(n);
  for (size_t i = 0; i < n; ++i) plan.rate_rps[i] = RateAt(traffic, i, n);

  // R-INST: everything due at once.
  if (traffic.instant) {
    std::fill(plan.anomaly.begin(), plan.anomaly.end(), Anomaly::kInstant);
    return plan;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!(plan.rate_rps[i] > 0) || !std::isfinite(plan.rate_rps[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("rate of request ", i, " is ", plan.rate_rps[i], ", must be > 0"));
    }
  }

  const double beta = traffic.burstiness;
  if (beta == 0) {
    // R-INT, β = 0: Δ_i = 1/λ_i exactly. Without ramp-up the offsets are
    // computed in closed form t_i = (i+1)/λ: R-NORM's scale factor is then
    // exactly 1, and Δ_i stays exactly 1/λ (recomputing it from differences
    // of rounded offsets would put rates of exactly 1,000 RPS a rounding
    // error on either side of the 1 ms timing-anomaly threshold).
    CompensatedSum sum;
    for (size_t i = 0; i < n; ++i) {
      plan.interval_s[i] = 1.0 / plan.rate_rps[i];
      plan.offset_s[i] = traffic.ramp_active
                             ? sum.Add(plan.interval_s[i])
                             : static_cast<double>(i + 1) / traffic.request_rate_rps;
    }
  } else {
    // R-INT, β > 0: Δ_i ~ Gamma(shape β, scale θ_i = 1/(λ_i β)). A Gamma(β, θ)
    // variate is θ times a Gamma(β, 1) variate; Boost.Random's engine and
    // distribution give the same stream on every platform (R-RNG).
    boost::random::mt19937_64 engine(seed);
    boost::random::gamma_distribution<double> unit_gamma(beta, 1.0);
    CompensatedSum sum;
    for (size_t i = 0; i < n; ++i) {
      const double theta = 1.0 / (plan.rate_rps[i] * beta);
      plan.interval_s[i] = theta * unit_gamma(engine);
      // R-CUM; the compensated sum can round a zero increment 1 ulp down,
      // which would make an offset decrease: offsets never do.
      plan.offset_s[i] = std::max(sum.Add(plan.interval_s[i]), i > 0 ? plan.offset_s[i - 1] : 0.0);
    }
    // Gamma draws of a tiny shape β underflow to 0 (and huge β can make θ
    // underflow): when every request lands on one instant, the rate asked
    // cannot be represented, and sending would be a burst nobody asked for.
    const double first = plan.offset_s[0];
    const double last = plan.offset_s[n - 1];
    if (!std::isfinite(last) || !(last > 0) || (n > 1 && first == last)) {
      return DegeneratePlanError(traffic, n, last);
    }
    if (!traffic.ramp_active) {
      // R-NORM: scale so the run lasts exactly N / request_rate, then
      // recompute Δ_i from the scaled offsets. When t_{N-1} is so small
      // (subnormal) that k overflows, t_i/t_{N-1} (in [0, 1]) is scaled
      // instead. Rounding never makes a scaled offset pass the total, and
      // monotone scaling keeps the offsets non-decreasing.
      const double total = static_cast<double>(n) / traffic.request_rate_rps;
      const double k = total / last;
      for (size_t i = 0; i < n; ++i) {
        const double scaled =
            std::isfinite(k) ? plan.offset_s[i] * k : (plan.offset_s[i] / last) * total;
        plan.offset_s[i] = std::min(scaled, total);
      }
      plan.offset_s[n - 1] = total;
      double previous = 0;
      for (size_t i = 0; i < n; ++i) {
        plan.interval_s[i] = plan.offset_s[i] - previous;
        previous = plan.offset_s[i];
      }
    }
  }
  // R-ANOM on the final Δ_i.
  for (size_t i = 0; i < n; ++i) {
    plan.anomaly[i] = ClassifyInterval(plan.interval_s[i], plan.rate_rps[i], beta);
  }
  return plan;
}

}  // namespace surge::coordinator
