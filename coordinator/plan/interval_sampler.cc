#include "coordinator/plan/interval_sampler.h"

#include <algorithm>
#include <boost/random/exponential_distribution.hpp>
#include <boost/random/gamma_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace surge::coordinator {
namespace {

using surge::v1::RunConfig;

std::string Num(double v) { return absl::StrFormat("%g", v); }

class RenewalSampler : public IntervalSampler {
 public:
  explicit RenewalSampler(std::vector<double> betas) : betas_(std::move(betas)) {
    if (betas_.empty()) betas_.push_back(0);
  }
  SampledArrival Next(const RateProfile& profile, RandomEngine& engine) override {
    const size_t stage = std::min(profile.StageAt(t_), betas_.size() - 1);
    const double beta = betas_[stage];
    double gap = 1;
    if (beta > 0) {
      auto it = gammas_.find(beta);
      if (it == gammas_.end()) {
        it = gammas_.emplace(beta, boost::random::gamma_distribution<double>(beta, 1.0)).first;
      }
      gap = it->second(engine) / beta;
    }
    s_ += gap;
    SampledArrival a;
    a.burstiness = beta;
    // A whole-number total (fixed intervals) may round a hair below its sum.
    const double total = profile.TotalCount();
    if (s_ > total * (1 + 1e-12) + 1e-12) {
      a.offset_s = std::numeric_limits<double>::infinity();
      return a;
    }
    t_ = std::max(t_, profile.TimeAtCount(std::min(s_, total)));
    a.offset_s = t_;
    a.rate_rps = profile.RateRps(t_);
    return a;
  }
  void Reset() override {
    gammas_.clear();
    s_ = 0;
    t_ = 0;
  }
  std::string Title() const override {
    std::vector<double> distinct = betas_;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    if (distinct.size() == 1) {
      return distinct[0] == 0 ? std::string("fixed intervals")
                              : absl::StrCat("Gamma(β = ", Num(distinct[0]), ")");
    }
    std::vector<std::string> parts;
    for (double b : betas_) parts.push_back(b == 0 ? std::string("fixed") : Num(b));
    return absl::StrCat("Gamma, β per stage: ", absl::StrJoin(parts, ", "));
  }

 private:
  std::vector<double> betas_;
  std::map<double, boost::random::gamma_distribution<double>> gammas_;
  double s_ = 0;  // Λ at the previous arrival (exact sum of the gaps)
  double t_ = 0;
};

class MmppSampler : public IntervalSampler {
 public:
  explicit MmppSampler(std::vector<MmppStateSpec> states) : states_(std::move(states)) {
    double dw = 0, dwr = 0;
    for (const auto& s : states_) {
      dw += s.mean_dwell_s;
      dwr += s.mean_dwell_s * s.rate_multiplier;
    }
    mean_multiplier_ = dwr / dw;
    total_dwell_ = dw;
  }
  SampledArrival Next(const RateProfile& profile, RandomEngine& engine) override {
    const double d = profile.DurationS();
    if (!started_) {
      started_ = true;
      // The first state with its stationary share d_k / Σ d.
      double u = boost::random::uniform_01<double>()(engine) * total_dwell_;
      state_ = 0;
      while (state_ + 1 < states_.size() && u >= states_[state_].mean_dwell_s) {
        u -= states_[state_].mean_dwell_s;
        ++state_;
      }
      dwell_end_ = Dwell(engine);
    }
    boost::random::exponential_distribution<double> unit_exp(1.0);
    // Bounded: every pass either returns or moves to the next visit, and
    // visits have positive mean length; 10^7 visits end any sane profile.
    for (int guard = 0; guard < 10000000; ++guard) {
      const double m = Multiplier();
      const double visit_end = std::min(dwell_end_, d);
      if (m > 0) {
        const double s_next = s_ + unit_exp(engine) / m;
        const double end_count = profile.CountAt(visit_end);
        if (s_next <= end_count) {
          s_ = s_next;
          t_ = std::max(t_, profile.TimeAtCount(s_next));
          SampledArrival a;
          a.offset_s = t_;
          a.rate_rps = m * profile.RateRps(t_);
          a.burstiness = 1;
          a.state = static_cast<uint32_t>(state_);
          a.dwell = visit_;
          return a;
        }
      }
      // No arrival before the visit ends (memoryless: the draw is dropped).
      if (dwell_end_ >= d) break;
      t_ = dwell_end_;
      s_ = profile.CountAt(t_);
      Jump(engine);
    }
    SampledArrival end;
    end.offset_s = std::numeric_limits<double>::infinity();
    return end;
  }
  void Reset() override {
    started_ = false;
    state_ = 0;
    visit_ = 0;
    dwell_end_ = 0;
    s_ = 0;
    t_ = 0;
  }
  std::string Title() const override {
    std::vector<std::string> parts;
    for (const auto& s : states_) {
      parts.push_back(absl::StrCat("×", Num(s.rate_multiplier / mean_multiplier_), " for ~",
                                   Num(s.mean_dwell_s), " s"));
    }
    return absl::StrCat("MMPP, ", states_.size(), " states (", absl::StrJoin(parts, ", "), ")");
  }

 private:
  double Multiplier() const { return states_[state_].rate_multiplier / mean_multiplier_; }
  double Dwell(RandomEngine& engine) {
    return t_ + boost::random::exponential_distribution<double>(1.0 / states_[state_].mean_dwell_s)(
                    engine);
  }
  void Jump(RandomEngine& engine) {
    // One of the other states, each equally likely.
    const double u = boost::random::uniform_01<double>()(engine);
    size_t k = std::min(states_.size() - 2, static_cast<size_t>(u * (states_.size() - 1)));
    state_ = k >= state_ ? k + 1 : k;
    ++visit_;
    dwell_end_ = Dwell(engine);
  }

  std::vector<MmppStateSpec> states_;
  double mean_multiplier_ = 1, total_dwell_ = 1;
  bool started_ = false;
  size_t state_ = 0;
  uint64_t visit_ = 0;
  double dwell_end_ = 0, s_ = 0, t_ = 0;
};

}  // namespace

std::unique_ptr<IntervalSampler> MakeRenewalSampler(std::vector<double> stage_burstiness) {
  return std::make_unique<RenewalSampler>(std::move(stage_burstiness));
}

std::unique_ptr<IntervalSampler> MakeMmppSampler(std::vector<MmppStateSpec> states) {
  return std::make_unique<MmppSampler>(std::move(states));
}

std::unique_ptr<IntervalSampler> MakeIntervalSampler(const RunConfig& c,
                                                     std::vector<double> stage_burstiness) {
  if (c.traffic_cfg().sampler() == surge::v1::SAMPLER_KIND_MMPP) {
    std::vector<MmppStateSpec> states;
    for (const auto& s : c.traffic_cfg().mmpp_states()) {
      states.push_back({s.rate_multiplier(), s.mean_dwell_s()});
    }
    return MakeMmppSampler(std::move(states));
  }
  return MakeRenewalSampler(std::move(stage_burstiness));
}

absl::StatusOr<std::vector<SampledArrival>> SampleArrivals(const RateProfile& profile,
                                                           IntervalSampler& sampler,
                                                           uint64_t max_requests, uint64_t seed) {
  RandomEngine engine(seed);
  sampler.Reset();
  std::vector<SampledArrival> out;
  for (;;) {
    SampledArrival a = sampler.Next(profile, engine);
    if (!std::isfinite(a.offset_s)) break;
    if (out.size() >= max_requests) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid configuration:\n  num_prompts = ", max_requests, ": the traffic profile (",
          profile.Title(), ", about ", absl::StrFormat("%.0f", profile.TotalCount()),
          " requests expected) plans more requests than num_prompts, which caps a run with "
          "stages; give num_prompts >= the stages' total (flag --num-prompts) or shorten the "
          "stages"));
    }
    out.push_back(a);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid configuration:\n  traffic_cfg.stages = (", profile.Title(),
        "): the profile plans no request (expected ", absl::StrFormat("%.3g", profile.TotalCount()),
        "); make a stage longer or its rate higher"));
  }
  return out;
}

}  // namespace surge::coordinator
