#include "coordinator/plan/traffic.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/plan/arrival_process.h"

namespace surge::coordinator {

std::string_view RampStrategyTitle(RampStrategy strategy) {
  switch (strategy) {
    case RampStrategy::kLinear:
      return "Linear";
    case RampStrategy::kExponential:
      return "Exponential";
    case RampStrategy::kNone:
      break;
  }
  return "";
}

ResolvedTraffic ResolveSeedTraffic(const surge::v1::RunConfig& config) {
  ResolvedTraffic t;
  const auto& cfg = config.traffic_cfg();
  t.request_rate_rps = config.request_rate();
  t.burstiness = cfg.burstiness();
  const std::string& name = cfg.ramp_up_strategy();
  if (name == "linear") t.strategy = RampStrategy::kLinear;
  if (name == "exponential") t.strategy = RampStrategy::kExponential;
  t.ramp_start_rps = cfg.ramp_up_start_rps();
  t.ramp_end_rps = cfg.ramp_up_end_rps();

  // R-RAMP: active only when all four conditions hold; otherwise one warning
  // naming the first condition that failed.
  if (t.strategy != RampStrategy::kNone) {
    const std::string start =
        cfg.has_ramp_up_start_rps() ? absl::StrCat(t.ramp_start_rps) : std::string("none");
    const std::string end =
        cfg.has_ramp_up_end_rps() ? absl::StrCat(t.ramp_end_rps) : std::string("none");
    if (!cfg.has_ramp_up_start_rps() || !(t.ramp_start_rps > 0)) {
      t.ramp_inactive_field = "traffic_cfg.ramp_up_start_rps";
      t.ramp_inactive_reason =
          absl::StrCat("traffic_cfg.ramp_up_start_rps must be > 0 (got ", start, ")");
    } else if (!cfg.has_ramp_up_end_rps() || !(t.ramp_end_rps > 0.1)) {
      t.ramp_inactive_field = "traffic_cfg.ramp_up_end_rps";
      t.ramp_inactive_reason =
          absl::StrCat("traffic_cfg.ramp_up_end_rps must be > 0.1 (got ", end, ")");
    } else if (t.ramp_end_rps < t.ramp_start_rps) {
      t.ramp_inactive_field = "traffic_cfg.ramp_up_end_rps";
      t.ramp_inactive_reason =
          absl::StrCat("traffic_cfg.ramp_up_end_rps (", end,
                       ") must be >= traffic_cfg.ramp_up_start_rps (", start, ")");
    } else {
      t.ramp_active = true;
    }
    if (!t.ramp_active) {
      t.warnings.push_back(absl::StrCat("traffic_cfg.ramp_up_strategy is \"", name,
                                        "\" but ramp-up is inactive: ", t.ramp_inactive_reason,
                                        "; using request_rate = ", config.request_rate(), " RPS"));
    }
  }
  // R-TGT and R-INST.
  t.target_rate_rps = t.ramp_active ? t.ramp_end_rps : t.request_rate_rps;
  // request_rate inf is vLLM's spelling of "all at once": the same mode.
  t.instant = t.target_rate_rps < kInstantModeBelowRps || std::isinf(t.target_rate_rps);
  return t;
}

bool UsesComposedTraffic(const surge::v1::RunConfig& config) {
  const auto& t = config.traffic_cfg();
  return t.stages_size() > 0 || t.spikes_size() > 0 || t.sampler() == "mmpp" ||
         t.mmpp_states_size() > 0;
}

ResolvedTraffic ResolveTraffic(const surge::v1::RunConfig& config) {
  if (!UsesComposedTraffic(config)) return ResolveSeedTraffic(config);
  ResolvedTraffic t;
  t.burstiness = config.traffic_cfg().sampler() == "mmpp" ? 1.0 : config.traffic_cfg().burstiness();
  std::vector<double> betas;
  auto profile = MakeRateProfile(config, &betas);
  if (!profile.ok()) return t;
  t.profile = std::shared_ptr<const RateProfile>(std::move(*profile));
  t.sampler_title = MakeIntervalSampler(config, betas)->Title();
  t.request_rate_rps = t.profile->MeanRateRps();
  // The peak to 6 significant digits: a sampled edge of a cosine is a few
  // ulps off its closed value, and the page title shows this number.
  t.target_rate_rps = std::stod(absl::StrFormat("%.6g", t.profile->PeakRateRps()));
  return t;
}

}  // namespace surge::coordinator

namespace surge::coordinator {

absl::Status CheckTraffic(const ResolvedTraffic& t, uint64_t num_requests) {
  if (t.trace_replay || t.strategy == RampStrategy::kNone || t.ramp_active || !t.instant) {
    return absl::OkStatus();
  }
  // The ramp the user asked for is off and R-INST would take over: a paced
  // run would become one burst of every request. Refused (not warned).
  const double value =
      t.ramp_inactive_field == "traffic_cfg.ramp_up_start_rps" ? t.ramp_start_rps : t.ramp_end_rps;
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid configuration:\n  ", t.ramp_inactive_field, " = ", value,
      ": ramp-up is inactive because ", t.ramp_inactive_reason,
      ", and the fallback request_rate = ", t.request_rate_rps,
      std::isinf(t.request_rate_rps) ? absl::StrCat(" means all at once")
                                     : absl::StrCat(" is below ", kInstantModeBelowRps, " RPS"),
      ", so all ", num_requests,
      " requests would be sent at once (instant mode); make the ramp valid (start > 0, "
      "end > 0.1, end >= start; flags --ramp-up-start-rps, --ramp-up-end-rps) or give "
      "request_rate >= 0.1 (flag --request-rate)"));
}

}  // namespace surge::coordinator
