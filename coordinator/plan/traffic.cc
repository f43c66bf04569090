#include "coordinator/plan/traffic.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/enum_spelling.h"
#include "coordinator/plan/number_format.h"

namespace surge::coordinator {
namespace {

std::string Num(double v) { return absl::StrFormat("%g", v); }
std::string Rate(double rps) { return absl::StrFormat("%.6g RPS", rps); }

// R-RAMP: active only when all four conditions hold; otherwise the first
// condition that failed, and one warning naming it.
void ApplyRampRule(const surge::v1::RunConfig& config, ResolvedTraffic& t) {
  const auto& cfg = config.traffic_cfg();
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
    t.warnings.push_back(absl::StrCat("traffic_cfg.ramp_up_strategy is \"",
                                      EnumSpelling(cfg.ramp_up_strategy()),
                                      "\" but ramp-up is inactive: ", t.ramp_inactive_reason,
                                      "; using request_rate = ", config.request_rate(), " RPS"));
  }
}

// "50 RPS, 1000 requests × Gamma intervals (β = 0.5)", "Instant mode".
std::string SeedTitle(const ResolvedTraffic& t, uint64_t n) {
  if (t.instant) return "Instant mode";
  std::string rate = t.ramp_active
                         ? absl::StrCat(std::string(RampStrategyTitle(t.strategy)), " ramp-up ",
                                        Num(t.ramp_start_rps), "→", Num(t.ramp_end_rps),
                                        " RPS over ", n, " requests")
                         : absl::StrCat(Num(t.request_rate_rps), " RPS, ", n, " requests");
  return absl::StrCat(rate, " × ",
                      t.burstiness == 0
                          ? std::string("fixed intervals")
                          : absl::StrCat("Gamma intervals (β = ", Num(t.burstiness), ")"));
}

// R-PLOT-2: the target rate, then the mode or the active ramp.
std::string SeedShortTitle(const ResolvedTraffic& t) {
  std::string title = absl::StrCat("Target Rate: ", FormatShort(t.target_rate_rps), " RPS");
  if (t.instant) {
    absl::StrAppend(&title, " | Instant Mode");
  } else if (t.ramp_active) {
    absl::StrAppend(&title, absl::StrCat(" | ", std::string(RampStrategyTitle(t.strategy)),
                                         " Ramp-up: ", FormatShort(t.ramp_start_rps), "→",
                                         FormatShort(t.ramp_end_rps), " RPS"));
  }
  return title;
}

// The ramp's λ_i (R-RATE) as the page's dashed line.
TheoreticalRate RampLine(const ResolvedTraffic& t) {
  const bool linear = t.strategy == RampStrategy::kLinear;
  return {.name = kTheoreticalRampName,
          .hover = "t = %{x:.4f} s<br>λ = %{y:.4g}",
          .meaning = "The intended rate λ_i of the ramp-up, without burstiness.",
          .computation = linear ? "λ_i = λ_s + (λ_e − λ_s)·p_i, p_i = i/(N−1), drawn at x = t_i."
                                : "λ_i = λ_s·(λ_e/λ_s)^p_i, p_i = i/(N−1), drawn at x = t_i.",
          .criterion = absl::StrCat("Ramp-up active: strategy ", linear ? "linear" : "exponential",
                                    ", start ", FormatShort(t.ramp_start_rps), " > 0, end ",
                                    FormatShort(t.ramp_end_rps), " > 0.1, end ≥ start."),
          .curve = {}};
}

std::string SeedLogLine(const ResolvedTraffic& t) {
  return absl::StrFormat(
      "target rate %g RPS%s, burstiness %g%s", t.target_rate_rps,
      t.ramp_active ? absl::StrCat(" (", std::string(RampStrategyTitle(t.strategy)), " ramp-up ",
                                   t.ramp_start_rps, "->", t.ramp_end_rps, ")")
                    : std::string(),
      t.burstiness, t.instant ? ", instant mode" : "");
}

std::string SeedRateText(const ResolvedTraffic& t) {
  if (t.instant && std::isinf(t.target_rate_rps)) {
    return "instant mode: request_rate inf (all at once), every request planned at 0 (R-INST)";
  }
  if (t.instant) {
    return absl::StrCat("instant mode: target rate ", Rate(t.target_rate_rps),
                        " < 0.1 RPS, every request planned at 0 (R-INST)");
  }
  return absl::StrCat("target ", Rate(t.target_rate_rps),
                      t.ramp_active ? " (ramp-up end)" : " (request_rate)");
}

std::string RampText(const ResolvedTraffic& t) {
  if (!t.ramp_active) return "none";
  return absl::StrCat(std::string(RampStrategyTitle(t.strategy)), " ",
                      absl::StrFormat("%.6g", t.ramp_start_rps), " → ", Rate(t.ramp_end_rps));
}

}  // namespace

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

std::string BurstinessText(double burstiness) {
  std::string beta = absl::StrFormat("%.6g", burstiness);
  if (burstiness == 0) {
    absl::StrAppend(&beta, " (fixed intervals)");
  } else if (burstiness == 1) {
    absl::StrAppend(&beta, " (Poisson arrivals)");
  } else if (burstiness < 1) {
    absl::StrAppend(&beta, " (bursty Gamma intervals)");
  } else {
    absl::StrAppend(&beta, " (more regular than Poisson)");
  }
  return beta;
}

TrafficDescription DescribeSeedTraffic(const ResolvedTraffic& traffic, uint64_t num_requests) {
  TrafficDescription d;
  d.title = SeedTitle(traffic, num_requests);
  d.short_title = SeedShortTitle(traffic);
  if (traffic.ramp_active) d.theoretical = RampLine(traffic);
  d.log_line = SeedLogLine(traffic);
  d.context = {{"Request rate", SeedRateText(traffic)},
               {"Burstiness (β)", BurstinessText(traffic.burstiness)},
               {"Ramp-up", RampText(traffic)}};
  return d;
}

ResolvedTraffic ResolveSeedTraffic(const surge::v1::RunConfig& config) {
  ResolvedTraffic t;
  const auto& cfg = config.traffic_cfg();
  t.request_rate_rps = config.request_rate();
  t.burstiness = cfg.burstiness();
  if (cfg.ramp_up_strategy() == surge::v1::RAMP_UP_STRATEGY_LINEAR) {
    t.strategy = RampStrategy::kLinear;
  }
  if (cfg.ramp_up_strategy() == surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL) {
    t.strategy = RampStrategy::kExponential;
  }
  t.ramp_start_rps = cfg.ramp_up_start_rps();
  t.ramp_end_rps = cfg.ramp_up_end_rps();
  if (t.strategy != RampStrategy::kNone) ApplyRampRule(config, t);
  // R-TGT and R-INST; request_rate inf is vLLM's spelling of "all at once".
  t.target_rate_rps = t.ramp_active ? t.ramp_end_rps : t.request_rate_rps;
  t.instant = t.target_rate_rps < kInstantModeBelowRps || std::isinf(t.target_rate_rps);
  t.description = DescribeSeedTraffic(t, config.num_prompts());
  return t;
}

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
