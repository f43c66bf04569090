// Interval samplers (docs/TRAFFIC.md): they draw the arrivals of composed
// traffic one after the other over a rate profile, by time rescaling
// (unit-mean gaps in Λ, mapped back with Λ^{-1}). Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_PLAN_INTERVAL_SAMPLER_H_
#define SURGE_COORDINATOR_PLAN_INTERVAL_SAMPLER_H_

#include <boost/random/mersenne_twister.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/plan/rate_profile.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

using RandomEngine = boost::random::mt19937_64;

// One arrival drawn by a sampler.
struct SampledArrival {
  // t_i, seconds; +inf when the profile ends first.
  double offset_s = 0;
  // The intended rate at t_i including the sampler's state factor, req/s.
  double rate_rps = 0;
  // β used to classify the interval (R-ANOM): the stage's β, 1 for MMPP.
  double burstiness = 0;
  // MMPP: the state and the number of the visit (dwell) the arrival fell
  // in; 0 for the other samplers.
  uint32_t state = 0;
  uint64_t dwell = 0;
};

// Draws arrivals one after the other over a profile. Stateful: Reset
// starts a new sequence.
class IntervalSampler {
 public:
  virtual ~IntervalSampler() = default;
  // The next arrival after the previous one (offset 0 before the first).
  virtual SampledArrival Next(const RateProfile& profile, RandomEngine& engine) = 0;
  // Back to the state before the first Next.
  virtual void Reset() = 0;
  // "fixed intervals", "Gamma(β = 0.5)", "MMPP, 2 states".
  virtual std::string Title() const = 0;
};

// Renewal samplers: the gap in Λ after an arrival in stage k is 1 (β_k = 0,
// fixed: t_i = Λ^{-1}(i+1) exactly) or Gamma(shape β_k, scale 1/β_k) (mean 1,
// CV 1/√β_k; Boost.Random's gamma_distribution, R-RNG). The stage is the one
// holding the previous arrival (stage 0 for the first).
std::unique_ptr<IntervalSampler> MakeRenewalSampler(std::vector<double> stage_burstiness);

struct MmppStateSpec {
  double rate_multiplier = 1;
  double mean_dwell_s = 1;
};
// Markov-modulated Poisson: in state k arrivals are Poisson with rate
// m_k·λ(t), where m_k = rate_multiplier_k / m̄ and m̄ = Σ d_k·r_k / Σ d_k, so
// the long-run rate follows λ(t); a visit lasts Exp(mean d_k) seconds, then
// the chain jumps to one of the other states, each equally likely. The
// first state is drawn with probability d_k / Σ d (the stationary share).
// At least two states, Σ d_k·r_k > 0.
std::unique_ptr<IntervalSampler> MakeMmppSampler(std::vector<MmppStateSpec> states);

// The sampler traffic_cfg asks for: mmpp (mmpp_states) or the renewal
// sampler with β per stage (`stage_burstiness`, from MakeRateProfile).
std::unique_ptr<IntervalSampler> MakeIntervalSampler(const surge::v1::RunConfig& config,
                                                     std::vector<double> stage_burstiness);

// Every arrival of `sampler` (Reset first) over `profile`, at most
// `max_requests` (more is an error naming num_prompts). Deterministic for a
// seed. Errors: INVALID_ARGUMENT when the profile plans more than
// max_requests or none at all.
absl::StatusOr<std::vector<SampledArrival>> SampleArrivals(const RateProfile& profile,
                                                           IntervalSampler& sampler,
                                                           uint64_t max_requests, uint64_t seed);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_INTERVAL_SAMPLER_H_
