#include "coordinator/plan/traffic_config.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/enum_spelling.h"
#include "coordinator/plan/traffic.h"

namespace surge::coordinator {
namespace {

using surge::v1::RampUpStrategy;
using surge::v1::RunConfig;
using surge::v1::SamplerKind;
using surge::v1::StageProfileKind;
using surge::v1::TrafficStage;

std::string Num(double v) { return absl::StrFormat("%g", v); }
bool Finite(double v) { return std::isfinite(v); }

class Problems {
 public:
  void Add(const std::string& field, const std::string& value, const std::string& allowed) {
    lines.push_back(absl::StrCat("  ", field, " = ", value, ": ", allowed));
  }
  absl::Status ToStatus() const {
    if (lines.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(lines, "\n")));
  }
  std::vector<std::string> lines;
};

// ---- One stage ------------------------------------------------------------

// The stage's form (one rate, one length) and the keys of forms it does not
// use. `prefix` is "traffic_cfg.stages[i]".
void CheckStageForm(const TrafficStage& st, const std::string& prefix, Problems& p) {
  const bool has_ramp =
      st.has_ramp_up_strategy() || st.has_ramp_up_start_rps() || st.has_ramp_up_end_rps();
  const int forms = st.has_rate_rps() + has_ramp + st.has_profile();
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
  const bool sine = st.profile() == surge::v1::STAGE_PROFILE_KIND_SINE;
  const bool diurnal = st.profile() == surge::v1::STAGE_PROFILE_KIND_DIURNAL;
  // (A text that is no profile was reported when it was read.)
  if (st.has_profile() && st.profile() == surge::v1::STAGE_PROFILE_KIND_UNSPECIFIED) {
    p.Add(prefix + ".profile", absl::StrCat("\"", EnumSpelling(st.profile()), "\""),
          "must be \"sine\" or \"diurnal\"");
  }
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
}

// A stage at a constant rate_rps.
std::unique_ptr<RateProfile> ConstantStage(const TrafficStage& st, const std::string& prefix,
                                           size_t before, Problems& p) {
  const double r = st.rate_rps();
  if (!(Finite(r) && r >= 0)) {
    p.Add(prefix + ".rate_rps", Num(r), "must be a rate >= 0, requests/s (0 = a pause)");
  } else if (st.has_num_requests() && !(r > 0)) {
    p.Add(prefix + ".rate_rps", Num(r),
          "must be > 0 with num_requests (a pause holds no requests; give duration_s)");
  } else if (p.lines.size() == before) {
    const double count = static_cast<double>(st.num_requests());
    return MakeConstantProfile(r, st.has_num_requests() ? count / r : st.duration_s());
  }
  return nullptr;
}

// A stage on a linear or exponential ramp in time.
std::unique_ptr<RateProfile> RampStage(const TrafficStage& st, const std::string& prefix,
                                       size_t before, Problems& p) {
  const RampUpStrategy s = st.ramp_up_strategy();
  const bool exp = s == surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL;
  // (A text that is no strategy was reported when it was read.)
  if (s != surge::v1::RAMP_UP_STRATEGY_LINEAR && !exp && surge::v1::RampUpStrategy_IsValid(s)) {
    p.Add(prefix + ".ramp_up_strategy", absl::StrCat("\"", EnumSpelling(s), "\""),
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
  if (p.lines.size() != before) return nullptr;
  double duration = st.duration_s();
  if (st.has_num_requests()) {
    // ∫λ over D = n: linear D = 2n/(a+b); exponential D = n·ln(b/a)/(b−a).
    const double count = static_cast<double>(st.num_requests());
    duration = exp && a != b ? count * std::log(b / a) / (b - a) : 2 * count / (a + b);
  }
  return MakeRampProfile(exp, a, b, duration);
}

// A sine or diurnal stage: mean + amplitude·cos(2π(t − peak)/period).
std::unique_ptr<RateProfile> CosineStage(const TrafficStage& st, const std::string& prefix,
                                         size_t before, Problems& p) {
  const bool diurnal = st.profile() == surge::v1::STAGE_PROFILE_KIND_DIURNAL;
  double mean = 0, amp = 0, peak = 0;
  const double period = st.has_period_s() ? st.period_s() : (diurnal ? 86400.0 : 0.0);
  if (!(Finite(period) && period > 0)) {
    p.Add(prefix + ".period_s", st.has_period_s() ? Num(period) : "(not set)",
          "must be a number of seconds > 0");
  }
  if (!diurnal) {
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
  if (p.lines.size() != before) return nullptr;
  double duration = st.duration_s();
  if (st.has_num_requests()) {
    // Λ does not depend on the length: solve Λ(D) = n on a long enough span.
    const double count = static_cast<double>(st.num_requests());
    auto probe = MakeCosineProfile(diurnal, mean, amp, period, peak, 2 * count / mean + period);
    duration = probe->TimeAtCount(count);
  }
  return MakeCosineProfile(diurnal, mean, amp, period, peak, duration);
}

// One stage's profile, or problems.
std::unique_ptr<RateProfile> StageProfile(const TrafficStage& st, const std::string& prefix,
                                          Problems& p) {
  const size_t before = p.lines.size();
  CheckStageForm(st, prefix, p);
  const bool has_ramp =
      st.has_ramp_up_strategy() || st.has_ramp_up_start_rps() || st.has_ramp_up_end_rps();
  std::unique_ptr<RateProfile> out;
  if (st.has_rate_rps()) {
    out = ConstantStage(st, prefix, before, p);
  } else if (has_ramp) {
    out = RampStage(st, prefix, before, p);
  } else if (st.profile() == surge::v1::STAGE_PROFILE_KIND_SINE ||
             st.profile() == surge::v1::STAGE_PROFILE_KIND_DIURNAL) {
    out = CosineStage(st, prefix, before, p);
  }
  if (p.lines.size() != before) return nullptr;
  return out;
}

// ---- The whole profile ----------------------------------------------------

// traffic_cfg.stages, or the AISBench keys as one stage of num_prompts
// requests in time; β per stage into `betas`.
std::vector<std::unique_ptr<RateProfile>> BaseStages(const RunConfig& config,
                                                     std::vector<double>& betas, Problems& p) {
  const auto& t = config.traffic_cfg();
  std::vector<std::unique_ptr<RateProfile>> stages;
  if (t.stages_size() > 0) {
    for (int i = 0; i < t.stages_size(); ++i) {
      const TrafficStage& st = t.stages(i);
      auto profile = StageProfile(st, absl::StrCat("traffic_cfg.stages[", i, "]"), p);
      if (profile != nullptr) stages.push_back(std::move(profile));
      betas.push_back(st.has_burstiness() ? st.burstiness() : t.burstiness());
    }
    return stages;
  }
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
  betas.push_back(t.burstiness());
  return stages;
}

// traffic_cfg.spikes checked against a profile of `duration_s`: sorted,
// each with its index in the config; none may overlap the next.
std::vector<Spike> SortedSpikes(const surge::v1::TrafficCfg& t, double duration_s, Problems& p) {
  std::vector<std::pair<Spike, int>> spikes;
  for (int i = 0; i < t.spikes_size(); ++i) {
    const auto& sp = t.spikes(i);
    const std::string prefix = absl::StrCat("traffic_cfg.spikes[", i, "]");
    const size_t before = p.lines.size();
    if (!sp.has_at_s() || !(Finite(sp.at_s()) && sp.at_s() >= 0)) {
      p.Add(prefix + ".at_s", sp.has_at_s() ? Num(sp.at_s()) : "(not set)",
            "must be a time >= 0, seconds after the run start");
    } else if (sp.at_s() >= duration_s) {
      p.Add(prefix + ".at_s", Num(sp.at_s()),
            absl::StrCat("must be before the profile ends (", Num(duration_s), " s)"));
    }
    if (!sp.has_duration_s() || !(Finite(sp.duration_s()) && sp.duration_s() > 0)) {
      p.Add(prefix + ".duration_s", sp.has_duration_s() ? Num(sp.duration_s()) : "(not set)",
            "must be a number of seconds > 0");
    }
    if (!sp.has_rate_multiplier() || !(Finite(sp.rate_multiplier()) && sp.rate_multiplier() >= 0)) {
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
      p.Add(
          absl::StrCat("traffic_cfg.spikes[", spikes[j].second, "].at_s"),
          Num(spikes[j].first.at_s),
          absl::StrCat("overlaps traffic_cfg.spikes[", spikes[j - 1].second, "] (", Num(prev.at_s),
                       "–", Num(prev.at_s + prev.duration_s), " s); spikes may not overlap"));
    }
  }
  std::vector<Spike> sorted;
  for (const auto& s : spikes) sorted.push_back(s.first);
  return sorted;
}

// ---- Key problems ---------------------------------------------------------

bool AnyStageBurstiness(const surge::v1::TrafficCfg& t) {
  bool any = false;
  for (const auto& st : t.stages()) any |= st.has_burstiness() && st.burstiness() > 0;
  return any;
}

// traffic_cfg.sampler against the burstiness keys.
void SamplerProblems(const surge::v1::TrafficCfg& t, Problems& p) {
  // (A text that is no sampler was reported when it was read, with the
  // sampler's spec: config.proto.)
  const SamplerKind sampler = t.sampler();
  const bool any_stage_beta = AnyStageBurstiness(t);
  if (sampler == surge::v1::SAMPLER_KIND_FIXED && (t.burstiness() != 0 || any_stage_beta)) {
    p.Add("traffic_cfg.sampler", "\"fixed\"",
          "contradicts a burstiness > 0 (Gamma intervals); use sampler gamma or burstiness 0");
  }
  if (sampler == surge::v1::SAMPLER_KIND_GAMMA && !(t.burstiness() > 0) && !any_stage_beta) {
    p.Add("traffic_cfg.sampler", "\"gamma\"",
          "needs traffic_cfg.burstiness > 0 (the Gamma shape β; flag --burstiness)");
  }
}

// The mmpp sampler's states, or mmpp_states given to another sampler.
void MmppProblems(const surge::v1::TrafficCfg& t, Problems& p) {
  const SamplerKind sampler = t.sampler();
  if (sampler != surge::v1::SAMPLER_KIND_MMPP) {
    if (t.mmpp_states_size() > 0 && surge::v1::SamplerKind_IsValid(sampler)) {
      p.Add("traffic_cfg.mmpp_states", absl::StrCat("(", t.mmpp_states_size(), " states)"),
            absl::StrCat("are used only with sampler mmpp, not \"",
                         sampler == surge::v1::SAMPLER_KIND_AUTO ? std::string("fixed/gamma")
                                                                 : EnumSpelling(sampler),
                         "\" (set traffic_cfg.sampler: mmpp, flag --sampler mmpp)"));
    }
    return;
  }
  if (t.burstiness() != 0 || AnyStageBurstiness(t)) {
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
}

// With stages: the top-level rate keys unused, num_prompts large enough.
void StageListProblems(const RunConfig& c, Problems& p) {
  const auto& t = c.traffic_cfg();
  if (t.stages_size() == 0) return;
  if (c.request_rate() != 0) {
    p.Add("request_rate", Num(c.request_rate()),
          "is not used with traffic_cfg.stages (each stage has its own rate); remove it "
          "(flag --request-rate) or make it a stage");
  }
  const RampUpStrategy s = t.ramp_up_strategy();
  if ((s != surge::v1::RAMP_UP_STRATEGY_UNSPECIFIED && s != surge::v1::RAMP_UP_STRATEGY_NONE) ||
      t.has_ramp_up_start_rps() || t.has_ramp_up_end_rps()) {
    p.Add("traffic_cfg.ramp_up_strategy", absl::StrCat("\"", EnumSpelling(s), "\""),
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
  if (all_counts && t.spikes_size() == 0 && t.sampler() != surge::v1::SAMPLER_KIND_MMPP &&
      total > c.num_prompts()) {
    p.Add("num_prompts", absl::StrCat(c.num_prompts()),
          absl::StrCat("is less than the stages' num_requests total (", total,
                       "); num_prompts caps a run with stages: give num_prompts >= ", total,
                       " (flag --num-prompts) or fewer requests per stage"));
  }
}

// The lines of an "invalid configuration:\n..." message.
std::vector<std::string> ProblemLines(const absl::Status& status) {
  const std::string text(status.message());
  const std::string head = "invalid configuration:\n";
  const std::string body = text.rfind(head, 0) == 0 ? text.substr(head.size()) : text;
  std::vector<std::string> lines;
  for (size_t pos = 0; pos <= body.size();) {
    const size_t nl = body.find('\n', pos);
    lines.push_back(body.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return lines;
}

// The keys trace replay overrides, as one warning; empty when none is set.
std::string ReplayIgnoresWarning(const RunConfig& config) {
  const auto& t = config.traffic_cfg();
  std::vector<std::string> ignored;
  if (config.request_rate() != 0) ignored.push_back("request_rate");
  if (t.burstiness() != 0) ignored.push_back("traffic_cfg.burstiness");
  if (t.ramp_up_strategy() != surge::v1::RAMP_UP_STRATEGY_UNSPECIFIED &&
      t.ramp_up_strategy() != surge::v1::RAMP_UP_STRATEGY_NONE) {
    ignored.push_back("traffic_cfg.ramp_up_strategy");
  }
  if (t.has_ramp_up_start_rps()) ignored.push_back("traffic_cfg.ramp_up_start_rps");
  if (t.has_ramp_up_end_rps()) ignored.push_back("traffic_cfg.ramp_up_end_rps");
  if (t.stages_size() > 0) ignored.push_back("traffic_cfg.stages");
  if (t.spikes_size() > 0) ignored.push_back("traffic_cfg.spikes");
  if (t.sampler() != surge::v1::SAMPLER_KIND_AUTO) ignored.push_back("traffic_cfg.sampler");
  if (ignored.empty()) return "";
  return absl::StrCat("trace replay: the trace's timestamps set the schedule, so ",
                      absl::StrJoin(ignored, ", "),
                      " (flags --request-rate, --burstiness, --ramp-up-*) are ignored");
}

// R-INST is never silent: how many requests go at once.
std::string InstantWarning(const ResolvedTraffic& traffic, const RunConfig& config) {
  return absl::StrCat("request_rate ", traffic.request_rate_rps,
                      std::isinf(traffic.request_rate_rps)
                          ? std::string()
                          : absl::StrCat(" < ", kInstantModeBelowRps),
                      ": instant mode, all ", config.num_prompts(), " requests are sent at once",
                      config.max_concurrency() > 0
                          ? absl::StrCat(" (at most ", config.max_concurrency(), " in flight)")
                          : std::string(),
                      "; give --request-rate (>= 0.1) or a ramp-up for paced traffic");
}

}  // namespace

bool UsesComposedTraffic(const RunConfig& config) {
  const auto& t = config.traffic_cfg();
  return t.stages_size() > 0 || t.spikes_size() > 0 ||
         t.sampler() == surge::v1::SAMPLER_KIND_MMPP || t.mmpp_states_size() > 0;
}

absl::StatusOr<std::unique_ptr<RateProfile>> MakeRateProfile(const RunConfig& config,
                                                             std::vector<double>* betas) {
  Problems p;
  std::vector<double> stage_betas;
  std::vector<std::unique_ptr<RateProfile>> stages = BaseStages(config, stage_betas, p);
  if (absl::Status s = p.ToStatus(); !s.ok()) return s;
  std::unique_ptr<RateProfile> profile = MakeStagedProfile(std::move(stages));
  const auto& t = config.traffic_cfg();
  if (t.spikes_size() > 0) {
    std::vector<Spike> spikes = SortedSpikes(t, profile->DurationS(), p);
    if (absl::Status s = p.ToStatus(); !s.ok()) return s;
    profile = MakeSpikeOverlay(std::move(profile), std::move(spikes));
  }
  if (betas != nullptr) *betas = std::move(stage_betas);
  return profile;
}

std::vector<std::string> TrafficKeyProblems(const RunConfig& c) {
  Problems p;
  SamplerProblems(c.traffic_cfg(), p);
  MmppProblems(c.traffic_cfg(), p);
  StageListProblems(c, p);
  return p.lines;
}

std::vector<std::string> TrafficConfigProblems(const RunConfig& c) {
  std::vector<std::string> lines = TrafficKeyProblems(c);
  if (UsesComposedTraffic(c) && lines.empty()) {
    auto profile = MakeRateProfile(c, nullptr);
    if (!profile.ok()) lines = ProblemLines(profile.status());
  }
  return lines;
}

absl::Status CheckTrafficConfig(const RunConfig& config) {
  if (config.dataset().trace_replay() || UsesComposedTraffic(config)) return absl::OkStatus();
  return CheckTraffic(ResolveSeedTraffic(config), config.num_prompts());
}

double TraceTimeScale(const RunConfig& config) {
  const auto& d = config.dataset();
  return d.has_trace_time_scale() ? d.trace_time_scale() : 1.0;
}

bool PlansInstantMode(const RunConfig& config) {
  if (config.dataset().trace_replay() || UsesComposedTraffic(config)) return false;
  return ResolveSeedTraffic(config).instant;
}

std::vector<std::string> TrafficWarnings(const RunConfig& config) {
  std::vector<std::string> out;
  if (config.dataset().trace_replay()) {
    std::string ignored = ReplayIgnoresWarning(config);
    if (!ignored.empty()) out.push_back(std::move(ignored));
    return out;
  }
  if (UsesComposedTraffic(config)) return out;
  const ResolvedTraffic traffic = ResolveSeedTraffic(config);
  out = traffic.warnings;
  if (traffic.instant) out.push_back(InstantWarning(traffic, config));
  return out;
}

}  // namespace surge::coordinator
