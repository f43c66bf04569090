// Rate profiles (docs/TRAFFIC.md): the intended rate λ(t) of a composed
// traffic, its cumulative expected count Λ(t) = ∫_0^t λ(u) du and the
// inverse Λ^{-1}, which the arrival process uses to place requests
// (time rescaling: a unit-rate sequence of counts s_1 < s_2 < ... becomes the
// offsets t_i = Λ^{-1}(s_i)). Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_PLAN_RATE_PROFILE_H_
#define SURGE_COORDINATOR_PLAN_RATE_PROFILE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace surge::coordinator {

// One point of a theoretical rate curve: time, seconds; rate, requests/s.
struct RatePoint {
  double t_s = 0;
  double rate_rps = 0;
};

// A rate profile on [0, DurationS()]. λ is left-continuous at the edges of
// stages and spikes: a request that ends a stage belongs to that stage.
class RateProfile {
 public:
  virtual ~RateProfile() = default;
  // λ(t), requests/s, t in [0, DurationS()].
  virtual double RateRps(double t_s) const = 0;
  // Λ(t) = ∫_0^t λ, requests; non-decreasing, Λ(0) = 0.
  virtual double CountAt(double t_s) const = 0;
  // Λ^{-1}(count): the first t with Λ(t) = count, clamped to [0, DurationS()].
  // Closed form where one exists; the default bisects CountAt to 1 ulp.
  virtual double TimeAtCount(double count) const;
  // Length, seconds, > 0.
  virtual double DurationS() const = 0;
  // For the page and the log, e.g. "Diurnal 5–50 RPS, period 30 s".
  virtual std::string Title() const = 0;
  // A compact title for the page's heading, e.g. "ramp 2→10 → diurnal
  // 10–60 RPS + spike ×3" (the full Title() is in the legend table).
  virtual std::string ShortTitle() const { return Title(); }
  // The closed form of λ(t), for the page's description row.
  virtual std::string Formula() const = 0;
  // Times in (0, DurationS()) where λ jumps or bends (stage and spike edges).
  virtual std::vector<double> Breakpoints() const { return {}; }
  // Index of the stage holding time t (right-continuous; the last stage at
  // t = DurationS()); 0 for a single-stage profile.
  virtual size_t StageAt(double /*t_s*/) const { return 0; }
  // The highest λ, requests/s (from the curve's points, exact for the
  // profiles here: their maxima are at edges or at sampled peaks).
  virtual double PeakRateRps() const;

  // Λ(DurationS()): the expected number of requests.
  double TotalCount() const { return CountAt(DurationS()); }
  // Λ(D)/D, requests/s.
  double MeanRateRps() const { return TotalCount() / DurationS(); }
  // The theoretical curve for the expected page: `points` evenly spaced
  // samples plus both sides of every breakpoint (vertical jumps drawn).
  std::vector<RatePoint> Curve(size_t points) const;
};

// λ = rate_rps on [0, duration_s]. rate_rps >= 0, duration_s > 0.
std::unique_ptr<RateProfile> MakeConstantProfile(double rate_rps, double duration_s);
// Ramp from start_rps to end_rps over duration_s, linear in time
// (λ = a + (b−a)·t/D) or exponential (λ = a·(b/a)^{t/D}, a > 0).
std::unique_ptr<RateProfile> MakeRampProfile(bool exponential, double start_rps, double end_rps,
                                             double duration_s);
// λ = mean + amplitude·cos(2π(t − peak_at_s)/period_s), 0 <= amplitude <=
// mean; `diurnal` only changes the title (min/max form).
std::unique_ptr<RateProfile> MakeCosineProfile(bool diurnal, double mean_rps, double amplitude_rps,
                                               double period_s, double peak_at_s,
                                               double duration_s);
// Stages one after the other; stage k starts where stage k−1 ends. Not empty.
std::unique_ptr<RateProfile> MakeStagedProfile(std::vector<std::unique_ptr<RateProfile>> stages);

struct Spike {
  double at_s = 0;
  double duration_s = 0;
  double rate_multiplier = 1;
};
// `base` with λ multiplied by each spike's factor on (at_s, at_s +
// duration_s] (clipped to the profile). Spikes sorted and not overlapping.
std::unique_ptr<RateProfile> MakeSpikeOverlay(std::unique_ptr<RateProfile> base,
                                              std::vector<Spike> spikes);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_RATE_PROFILE_H_
