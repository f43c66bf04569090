#include "coordinator/plan/arrival_process.h"

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
#include "coordinator/plan/replay_schedule.h"

namespace surge::coordinator {
namespace {

using surge::v1::RunConfig;
using surge::v1::TrafficStage;

std::string Num(double v) { return absl::StrFormat("%g", v); }

// ---- Samplers -------------------------------------------------------------

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

// ---- Processes ------------------------------------------------------------

// AISBench keys only: the seed's plan, unchanged (R-RATE … R-ANOM).
class SeedProcess : public ArrivalProcess {
 public:
  SeedProcess(ResolvedTraffic traffic, uint64_t n) : traffic_(std::move(traffic)), n_(n) {}
  std::string Title() const override {
    if (traffic_.instant) return "Instant mode";
    std::string rate =
        traffic_.ramp_active
            ? absl::StrCat(std::string(RampStrategyTitle(traffic_.strategy)), " ramp-up ",
                           Num(traffic_.ramp_start_rps), "→", Num(traffic_.ramp_end_rps),
                           " RPS over ", n_, " requests")
            : absl::StrCat(Num(traffic_.request_rate_rps), " RPS, ", n_, " requests");
    return absl::StrCat(rate, " × ",
                        traffic_.burstiness == 0
                            ? std::string("fixed intervals")
                            : absl::StrCat("Gamma intervals (β = ", Num(traffic_.burstiness), ")"));
  }
  absl::StatusOr<ArrivalSchedule> Generate(uint64_t seed) const override {
    return BuildArrivalSchedule(traffic_, n_, seed);
  }

 private:
  ResolvedTraffic traffic_;
  uint64_t n_;
};

class ReplayProcess : public ArrivalProcess {
 public:
  explicit ReplayProcess(std::vector<double> offsets) : offsets_(std::move(offsets)) {}
  std::string Title() const override { return "Trace replay"; }
  absl::StatusOr<ArrivalSchedule> Generate(uint64_t seed) const override {
    return BuildReplaySchedule(offsets_, seed);
  }

 private:
  std::vector<double> offsets_;
};

class ComposedProcess : public ArrivalProcess {
 public:
  ComposedProcess(RunConfig config, ResolvedTraffic traffic, uint64_t max_requests)
      : config_(std::move(config)), traffic_(std::move(traffic)), max_(max_requests) {}
  std::string Title() const override {
    return absl::StrCat(traffic_.profile->Title(), " × ", traffic_.sampler_title);
  }
  absl::StatusOr<ArrivalSchedule> Generate(uint64_t seed) const override {
    std::vector<double> betas;
    auto profile = MakeRateProfile(config_, &betas);
    if (!profile.ok()) return profile.status();
    std::unique_ptr<IntervalSampler> sampler = MakeIntervalSampler(config_, betas);
    auto arrivals = SampleArrivals(**profile, *sampler, max_, seed);
    if (!arrivals.ok()) return arrivals.status();
    return ScheduleFromArrivals(*arrivals, traffic_, seed);
  }

 private:
  RunConfig config_;
  ResolvedTraffic traffic_;
  uint64_t max_;
};

// ---- Config → profile -----------------------------------------------------

class Problems {
 public:
  void Add(const std::string& field, const std::string& value, const std::string& allowed) {
    lines.push_back(absl::StrCat("  ", field, " = ", value, ": ", allowed));
  }
  std::vector<std::string> lines;
};

bool Finite(double v) { return std::isfinite(v); }

// One stage's profile, or problems. `prefix` is "traffic_cfg.stages[i]".
std::unique_ptr<RateProfile> StageProfile(const TrafficStage& st, const std::string& prefix,
                                          Problems& p) {
  const size_t before = p.lines.size();
  const bool has_ramp =
      st.has_ramp_up_strategy() || st.has_ramp_up_start_rps() || st.has_ramp_up_end_rps();
  const bool has_profile = st.has_profile();
  const int forms = st.has_rate_rps() + has_ramp + has_profile;
  if (forms != 1) {
    p.Add(prefix, forms == 0 ? "(no rate)" : "(several rates)",
          "give exactly one of rate_rps, a ramp (ramp_up_strategy, ramp_up_start_rps, "
          "ramp_up_end_rps) or profile (sine | diurnal)");
  }
  if (st.has_duration_s() == st.has_num_requests()) {
    p.Add(prefix, st.has_duration_s() ? "(duration_s and num_requests)" : "(no length)",
          "give exactly one of duration_s (seconds) or num_requests (requests)");
  }
  if (st.has_duration_s() && !(Finite(st.duration_s()) && st.duration_s() > 0)) {
    p.Add(prefix + ".duration_s", Num(st.duration_s()), "must be a number of seconds > 0");
  }
  if (st.has_num_requests() && st.num_requests() < 1) {
    p.Add(prefix + ".num_requests", "0", "must be a whole number >= 1");
  }
  if (st.has_burstiness() && !(Finite(st.burstiness()) && st.burstiness() >= 0)) {
    p.Add(prefix + ".burstiness", Num(st.burstiness()),
          "must be a number >= 0 (0 = fixed intervals, 1 = Poisson)");
  }
  const bool sine = st.profile() == "sine";
  const bool diurnal = st.profile() == "diurnal";
  if (has_profile && !sine && !diurnal) {
    p.Add(prefix + ".profile", absl::StrCat("\"", st.profile(), "\""),
          "must be \"sine\" or \"diurnal\"");
  }
  // Parameters of a form this stage does not use.
  auto stray = [&](bool has, const char* key, bool allowed, const char* of) {
    if (has && !allowed) {
      p.Add(absl::StrCat(prefix, ".", key), "(given)",
            absl::StrCat("is a parameter of ", of, ", which this stage does not use"));
    }
  };
  stray(st.has_mean_rps(), "mean_rps", sine, "profile: sine");
  stray(st.has_amplitude_rps(), "amplitude_rps", sine, "profile: sine");
  stray(st.has_phase_s(), "phase_s", sine, "profile: sine");
  stray(st.has_min_rps(), "min_rps", diurnal, "profile: diurnal");
  stray(st.has_max_rps(), "max_rps", diurnal, "profile: diurnal");
  stray(st.has_peak_at_s(), "peak_at_s", diurnal, "profile: diurnal");
  stray(st.has_period_s(), "period_s", sine || diurnal, "profile: sine or diurnal");

  std::unique_ptr<RateProfile> out;
  double duration = st.duration_s();
  const double count = static_cast<double>(st.num_requests());
  if (st.has_rate_rps()) {
    const double r = st.rate_rps();
    if (!(Finite(r) && r >= 0)) {
      p.Add(prefix + ".rate_rps", Num(r), "must be a rate >= 0, requests/s (0 = a pause)");
    } else if (st.has_num_requests() && !(r > 0)) {
      p.Add(prefix + ".rate_rps", Num(r),
            "must be > 0 with num_requests (a pause holds no requests; give duration_s)");
    } else if (p.lines.size() == before) {
      if (st.has_num_requests()) duration = count / r;
      out = MakeConstantProfile(r, duration);
    }
  } else if (has_ramp) {
    const std::string& s = st.ramp_up_strategy();
    const bool exp = s == "exponential";
    if (s != "linear" && !exp) {
      p.Add(prefix + ".ramp_up_strategy", absl::StrCat("\"", s, "\""),
            "must be \"linear\" or \"exponential\"");
    }
    const double a = st.ramp_up_start_rps(), b = st.ramp_up_end_rps();
    if (!st.has_ramp_up_start_rps() || !(Finite(a) && (exp ? a > 0 : a >= 0))) {
      p.Add(prefix + ".ramp_up_start_rps", st.has_ramp_up_start_rps() ? Num(a) : "(not set)",
            exp ? "must be a rate > 0, requests/s (an exponential ramp cannot start at 0)"
                : "must be a rate >= 0, requests/s");
    }
    if (!st.has_ramp_up_end_rps() || !(Finite(b) && b > 0)) {
      p.Add(prefix + ".ramp_up_end_rps", st.has_ramp_up_end_rps() ? Num(b) : "(not set)",
            "must be a rate > 0, requests/s (a ramp may go up or down)");
    }
    if (p.lines.size() == before) {
      if (st.has_num_requests()) {
        // ∫λ over D = n: linear D = 2n/(a+b); exponential D = n·ln(b/a)/(b−a).
        duration = exp && a != b ? count * std::log(b / a) / (b - a) : 2 * count / (a + b);
      }
      out = MakeRampProfile(exp, a, b, duration);
    }
  } else if (sine || diurnal) {
    double mean = 0, amp = 0, peak = 0;
    const double period = st.has_period_s() ? st.period_s() : (diurnal ? 86400.0 : 0.0);
    if (!(Finite(period) && period > 0)) {
      p.Add(prefix + ".period_s", st.has_period_s() ? Num(period) : "(not set)",
            "must be a number of seconds > 0");
    }
    if (sine) {
      mean = st.mean_rps();
      amp = st.amplitude_rps();
      if (!(Finite(mean) && mean > 0)) {
        p.Add(prefix + ".mean_rps", st.has_mean_rps() ? Num(mean) : "(not set)",
              "must be a rate > 0, requests/s");
      } else if (!(Finite(amp) && amp >= 0 && amp <= mean)) {
        p.Add(prefix + ".amplitude_rps", Num(amp),
              absl::StrCat("must be between 0 and mean_rps (", Num(mean),
                           ") so the rate never goes below 0"));
      }
      if (!Finite(st.phase_s())) p.Add(prefix + ".phase_s", Num(st.phase_s()), "must be finite");
      // sin(x) = cos(x − π/2): the crest at t = period/4 − phase.
      peak = period / 4 - st.phase_s();
    } else {
      const double lo = st.min_rps(), hi = st.max_rps();
      if (!st.has_min_rps() || !(Finite(lo) && lo >= 0)) {
        p.Add(prefix + ".min_rps", st.has_min_rps() ? Num(lo) : "(not set)",
              "must be a rate >= 0, requests/s");
      }
      if (!st.has_max_rps() || !(Finite(hi) && hi > 0 && hi >= lo)) {
        p.Add(prefix + ".max_rps", st.has_max_rps() ? Num(hi) : "(not set)",
              absl::StrCat("must be a rate > 0 and >= min_rps (", Num(lo), "), requests/s"));
      }
      mean = (lo + hi) / 2;
      amp = (hi - lo) / 2;
      peak = st.has_peak_at_s() ? st.peak_at_s() : period / 2;
      if (!Finite(peak)) p.Add(prefix + ".peak_at_s", Num(peak), "must be finite");
    }
    if (p.lines.size() == before) {
      if (st.has_num_requests()) {
        // Λ does not depend on the length: solve Λ(D) = n on a long enough span.
        auto probe = MakeCosineProfile(diurnal, mean, amp, period, peak, 2 * count / mean + period);
        duration = probe->TimeAtCount(count);
      }
      out = MakeCosineProfile(diurnal, mean, amp, period, peak, duration);
    }
  }
  if (p.lines.size() != before) return nullptr;
  return out;
}

}  // namespace

std::unique_ptr<IntervalSampler> MakeRenewalSampler(std::vector<double> stage_burstiness) {
  return std::make_unique<RenewalSampler>(std::move(stage_burstiness));
}

std::unique_ptr<IntervalSampler> MakeMmppSampler(std::vector<MmppStateSpec> states) {
  return std::make_unique<MmppSampler>(std::move(states));
}

std::unique_ptr<IntervalSampler> MakeIntervalSampler(const RunConfig& c,
                                                     std::vector<double> stage_burstiness) {
  if (c.traffic_cfg().sampler() == "mmpp") {
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

ArrivalSchedule ScheduleFromArrivals(const std::vector<SampledArrival>& arrivals,
                                     const ResolvedTraffic& traffic, uint64_t seed) {
  ArrivalSchedule plan;
  plan.traffic = traffic;
  plan.seed = seed;
  const size_t n = arrivals.size();
  plan.rate_rps.resize(n);
  plan.interval_s.resize(n);
  plan.offset_s.resize(n);
  plan.anomaly.resize(n);
  double previous = 0;
  for (size_t i = 0; i < n; ++i) {
    plan.offset_s[i] = arrivals[i].offset_s;
    plan.rate_rps[i] = arrivals[i].rate_rps;
    plan.interval_s[i] = arrivals[i].offset_s - previous;
    previous = arrivals[i].offset_s;
    // A zero rate (the edge of a pause) has no expected interval: only the
    // timing class applies.
    plan.anomaly[i] = plan.rate_rps[i] > 0 ? ClassifyInterval(plan.interval_s[i], plan.rate_rps[i],
                                                              arrivals[i].burstiness)
                                           : ClassifyInterval(plan.interval_s[i], 1, 0);
  }
  return plan;
}

absl::StatusOr<std::unique_ptr<RateProfile>> MakeRateProfile(const RunConfig& config,
                                                             std::vector<double>* betas) {
  Problems p;
  const auto& t = config.traffic_cfg();
  std::vector<std::unique_ptr<RateProfile>> stages;
  std::vector<double> stage_betas;
  if (t.stages_size() > 0) {
    for (int i = 0; i < t.stages_size(); ++i) {
      const TrafficStage& st = t.stages(i);
      auto profile = StageProfile(st, absl::StrCat("traffic_cfg.stages[", i, "]"), p);
      if (profile != nullptr) stages.push_back(std::move(profile));
      stage_betas.push_back(st.has_burstiness() ? st.burstiness() : t.burstiness());
    }
  } else {
    // The AISBench keys as one stage of num_prompts requests, in time.
    const ResolvedTraffic seed = ResolveSeedTraffic(config);
    const double n = static_cast<double>(config.num_prompts());
    if (seed.ramp_active) {
      const double a = seed.ramp_start_rps, b = seed.ramp_end_rps;
      const bool exp = seed.strategy == RampStrategy::kExponential;
      const double d = exp && a != b ? n * std::log(b / a) / (b - a) : 2 * n / (a + b);
      stages.push_back(MakeRampProfile(exp, a, b, d));
    } else if (seed.instant || !(config.request_rate() >= kInstantModeBelowRps)) {
      p.Add("request_rate", Num(config.request_rate()),
            "spikes and the mmpp sampler need paced traffic: a request_rate >= 0.1 and finite "
            "(flag --request-rate), a ramp-up, or traffic_cfg.stages");
    } else {
      stages.push_back(MakeConstantProfile(config.request_rate(), n / config.request_rate()));
    }
    stage_betas.push_back(t.burstiness());
  }
  if (!p.lines.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(p.lines, "\n")));
  }
  std::unique_ptr<RateProfile> profile = MakeStagedProfile(std::move(stages));
  if (t.spikes_size() > 0) {
    std::vector<std::pair<Spike, int>> spikes;
    for (int i = 0; i < t.spikes_size(); ++i) {
      const auto& sp = t.spikes(i);
      const std::string prefix = absl::StrCat("traffic_cfg.spikes[", i, "]");
      const size_t before = p.lines.size();
      if (!sp.has_at_s() || !(Finite(sp.at_s()) && sp.at_s() >= 0)) {
        p.Add(prefix + ".at_s", sp.has_at_s() ? Num(sp.at_s()) : "(not set)",
              "must be a time >= 0, seconds after the run start");
      } else if (sp.at_s() >= profile->DurationS()) {
        p.Add(prefix + ".at_s", Num(sp.at_s()),
              absl::StrCat("must be before the profile ends (", Num(profile->DurationS()), " s)"));
      }
      if (!sp.has_duration_s() || !(Finite(sp.duration_s()) && sp.duration_s() > 0)) {
        p.Add(prefix + ".duration_s", sp.has_duration_s() ? Num(sp.duration_s()) : "(not set)",
              "must be a number of seconds > 0");
      }
      if (!sp.has_rate_multiplier() ||
          !(Finite(sp.rate_multiplier()) && sp.rate_multiplier() >= 0)) {
        p.Add(prefix + ".rate_multiplier",
              sp.has_rate_multiplier() ? Num(sp.rate_multiplier()) : "(not set)",
              "must be a factor >= 0 on the rate (0 = an outage, 3 = three times the rate)");
      }
      if (p.lines.size() == before) {
        spikes.push_back({{sp.at_s(), sp.duration_s(), sp.rate_multiplier()}, i});
      }
    }
    std::sort(spikes.begin(), spikes.end(),
              [](const auto& x, const auto& y) { return x.first.at_s < y.first.at_s; });
    for (size_t j = 1; j < spikes.size(); ++j) {
      const Spike& prev = spikes[j - 1].first;
      if (spikes[j].first.at_s < prev.at_s + prev.duration_s) {
        p.Add(absl::StrCat("traffic_cfg.spikes[", spikes[j].second, "].at_s"),
              Num(spikes[j].first.at_s),
              absl::StrCat("overlaps traffic_cfg.spikes[", spikes[j - 1].second, "] (",
                           Num(prev.at_s), "–", Num(prev.at_s + prev.duration_s),
                           " s); spikes may not overlap"));
      }
    }
    if (!p.lines.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid configuration:\n", absl::StrJoin(p.lines, "\n")));
    }
    std::vector<Spike> sorted;
    for (const auto& s : spikes) sorted.push_back(s.first);
    profile = MakeSpikeOverlay(std::move(profile), std::move(sorted));
  }
  if (betas != nullptr) *betas = std::move(stage_betas);
  return profile;
}

std::vector<std::string> TrafficConfigProblems(const RunConfig& c) {
  Problems p;
  const auto& t = c.traffic_cfg();
  const std::string& sampler = t.sampler();
  const bool mmpp = sampler == "mmpp";
  if (!(sampler.empty() || sampler == "fixed" || sampler == "gamma" || mmpp)) {
    p.Add("traffic_cfg.sampler", absl::StrCat("\"", sampler, "\""),
          "must be \"fixed\", \"gamma\" or \"mmpp\" (flag --sampler; default: gamma when "
          "burstiness > 0, else fixed)");
  }
  bool any_stage_beta = false;
  for (const auto& st : t.stages()) any_stage_beta |= st.has_burstiness() && st.burstiness() > 0;
  if (sampler == "fixed" && (t.burstiness() != 0 || any_stage_beta)) {
    p.Add("traffic_cfg.sampler", "\"fixed\"",
          "contradicts a burstiness > 0 (Gamma intervals); use sampler gamma or burstiness 0");
  }
  if (sampler == "gamma" && !(t.burstiness() > 0) && !any_stage_beta) {
    p.Add("traffic_cfg.sampler", "\"gamma\"",
          "needs traffic_cfg.burstiness > 0 (the Gamma shape β; flag --burstiness)");
  }
  if (mmpp) {
    if (t.burstiness() != 0 || any_stage_beta) {
      p.Add("traffic_cfg.burstiness", Num(t.burstiness()),
            "is not used with sampler mmpp (intervals are exponential within a state); "
            "remove it or use sampler gamma");
    }
    if (t.mmpp_states_size() < 2) {
      p.Add("traffic_cfg.mmpp_states", absl::StrCat("(", t.mmpp_states_size(), " states)"),
            "sampler mmpp needs two or more states, each {rate_multiplier, mean_dwell_s}");
    }
    double weighted = 0;
    for (int i = 0; i < t.mmpp_states_size(); ++i) {
      const auto& s = t.mmpp_states(i);
      const std::string prefix = absl::StrCat("traffic_cfg.mmpp_states[", i, "]");
      if (!s.has_rate_multiplier() || !(Finite(s.rate_multiplier()) && s.rate_multiplier() >= 0)) {
        p.Add(prefix + ".rate_multiplier",
              s.has_rate_multiplier() ? Num(s.rate_multiplier()) : "(not set)",
              "must be a factor >= 0 on the rate");
      }
      if (!s.has_mean_dwell_s() || !(Finite(s.mean_dwell_s()) && s.mean_dwell_s() > 0)) {
        p.Add(prefix + ".mean_dwell_s", s.has_mean_dwell_s() ? Num(s.mean_dwell_s()) : "(not set)",
              "must be a number of seconds > 0");
      }
      if (Finite(s.rate_multiplier()) && Finite(s.mean_dwell_s())) {
        weighted += s.rate_multiplier() * s.mean_dwell_s();
      }
    }
    if (t.mmpp_states_size() >= 2 && !(weighted > 0)) {
      p.Add("traffic_cfg.mmpp_states", "(every rate_multiplier 0)",
            "at least one state needs a rate_multiplier > 0");
    }
  } else if (t.mmpp_states_size() > 0) {
    p.Add("traffic_cfg.mmpp_states", absl::StrCat("(", t.mmpp_states_size(), " states)"),
          absl::StrCat("are used only with sampler mmpp, not \"",
                       sampler.empty() ? "fixed/gamma" : sampler,
                       "\" (set traffic_cfg.sampler: mmpp, flag --sampler mmpp)"));
  }
  if (t.stages_size() > 0) {
    if (c.request_rate() != 0) {
      p.Add("request_rate", Num(c.request_rate()),
            "is not used with traffic_cfg.stages (each stage has its own rate); remove it "
            "(flag --request-rate) or make it a stage");
    }
    const std::string& s = t.ramp_up_strategy();
    if ((!s.empty() && s != "none") || t.has_ramp_up_start_rps() || t.has_ramp_up_end_rps()) {
      p.Add("traffic_cfg.ramp_up_strategy", absl::StrCat("\"", s, "\""),
            "the top-level ramp-up keys are not used with traffic_cfg.stages; give the ramp "
            "inside a stage (ramp_up_strategy, ramp_up_start_rps, ramp_up_end_rps)");
    }
    // Count stages hold a known number of requests: more than num_prompts
    // (the cap of a run with stages) is a contradiction.
    bool all_counts = true;
    uint64_t total = 0;
    for (const auto& st : t.stages()) {
      all_counts &= st.has_num_requests() && !st.has_duration_s();
      total += st.num_requests();
    }
    if (all_counts && t.spikes_size() == 0 && !mmpp && total > c.num_prompts()) {
      p.Add("num_prompts", absl::StrCat(c.num_prompts()),
            absl::StrCat("is less than the stages' num_requests total (", total,
                         "); num_prompts caps a run with stages: give num_prompts >= ", total,
                         " (flag --num-prompts) or fewer requests per stage"));
    }
  }
  if (UsesComposedTraffic(c) && p.lines.empty()) {
    auto profile = MakeRateProfile(c, nullptr);
    if (!profile.ok()) {
      const std::string text(profile.status().message());
      const std::string head = "invalid configuration:\n";
      std::string body = text.rfind(head, 0) == 0 ? text.substr(head.size()) : text;
      for (size_t pos = 0; pos <= body.size();) {
        const size_t nl = body.find('\n', pos);
        p.lines.push_back(body.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
        if (nl == std::string::npos) break;
        pos = nl + 1;
      }
    }
  }
  return p.lines;
}

absl::StatusOr<std::unique_ptr<ArrivalProcess>> MakeArrivalProcess(
    const RunConfig& config, const std::vector<double>* replay_offsets_s) {
  if (replay_offsets_s != nullptr) {
    return std::unique_ptr<ArrivalProcess>(new ReplayProcess(*replay_offsets_s));
  }
  if (!UsesComposedTraffic(config)) {
    return std::unique_ptr<ArrivalProcess>(
        new SeedProcess(ResolveTraffic(config), config.num_prompts()));
  }
  if (std::vector<std::string> problems = TrafficConfigProblems(config); !problems.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(problems, "\n")));
  }
  ResolvedTraffic traffic = ResolveTraffic(config);
  // With stages num_prompts caps the run; without (spikes or mmpp over the
  // AISBench keys) it sized the base stage, and spikes add to it: bounded
  // at 4× the expected count plus 1000 so the loop always ends.
  const uint64_t cap = config.traffic_cfg().stages_size() > 0
                           ? config.num_prompts()
                           : static_cast<uint64_t>(4 * traffic.profile->TotalCount()) + 1000;
  return std::unique_ptr<ArrivalProcess>(new ComposedProcess(config, std::move(traffic), cap));
}

}  // namespace surge::coordinator
