#include "coordinator/plan/traffic.h"

#include "absl/strings/str_cat.h"

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

ResolvedTraffic ResolveTraffic(const surge::v1::RunConfig& config) {
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
    const std::string prefix = absl::StrCat("traffic_cfg.ramp_up_strategy is \"", name,
                                            "\" but ramp-up is inactive: ");
    const std::string fallback =
        absl::StrCat("; using request_rate = ", config.request_rate(), " RPS");
    if (!cfg.has_ramp_up_start_rps() || !(t.ramp_start_rps > 0)) {
      t.warnings.push_back(absl::StrCat(prefix, "traffic_cfg.ramp_up_start_rps must be > 0 (got ",
                                        cfg.has_ramp_up_start_rps()
                                            ? absl::StrCat(t.ramp_start_rps)
                                            : std::string("none"),
                                        ")", fallback));
    } else if (!cfg.has_ramp_up_end_rps() || !(t.ramp_end_rps > 0.1)) {
      t.warnings.push_back(absl::StrCat(prefix, "traffic_cfg.ramp_up_end_rps must be > 0.1 (got ",
                                        cfg.has_ramp_up_end_rps() ? absl::StrCat(t.ramp_end_rps)
                                                                  : std::string("none"),
                                        ")", fallback));
    } else if (t.ramp_end_rps < t.ramp_start_rps) {
      t.warnings.push_back(absl::StrCat(prefix, "traffic_cfg.ramp_up_end_rps (", t.ramp_end_rps,
                                        ") must be >= traffic_cfg.ramp_up_start_rps (",
                                        t.ramp_start_rps, ")", fallback));
    } else {
      t.ramp_active = true;
    }
  }
  // R-TGT and R-INST.
  t.target_rate_rps = t.ramp_active ? t.ramp_end_rps : t.request_rate_rps;
  t.instant = t.target_rate_rps < kInstantModeBelowRps;
  return t;
}

}  // namespace surge::coordinator
