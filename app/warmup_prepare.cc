#include "app/warmup_prepare.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/plan/warmup.h"

namespace surge::app {

absl::StatusOr<Warmups> MakeWarmups(const surge::v1::RunConfig& config,
                                    const coordinator::ArrivalSchedule& plan) {
  Warmups w;
  const uint32_t n = config.num_warmups();
  if (n == 0) return w;
  const double first_rate = plan.rate_rps.empty() ? 0 : plan.rate_rps.front();
  w.offsets_ns = coordinator::WarmupOffsetsNs(n, first_rate);
  auto payloads = coordinator::MakePayloadSource(config.dataset(), n,
                                                 coordinator::WarmupPayloadSeed(config.seed()));
  if (!payloads.ok()) return payloads.status();
  w.payloads = *std::move(payloads);
  return w;
}

absl::StatusOr<std::optional<coordinator::SteadyStateWindow>> ResolveSteadyStateOption(
    const surge::v1::RunConfig& config, const coordinator::ArrivalSchedule& plan) {
  const std::string& text = config.steady_state_s();
  auto field_error = [&text](const absl::Status& s) {
    return absl::InvalidArgumentError(absl::StrCat("invalid configuration:\n  steady_state_s = \"",
                                                   text, "\": ", s.message(),
                                                   " (flag --steady-state-s)"));
  };
  auto spec = coordinator::ParseSteadyState(text);
  if (!spec.ok()) return field_error(spec.status());
  if (!spec->has_value()) return std::optional<coordinator::SteadyStateWindow>();
  auto window = coordinator::ResolveSteadyState(**spec, text, plan.offset_s);
  if (!window.ok()) return field_error(window.status());
  return std::optional<coordinator::SteadyStateWindow>(*std::move(window));
}

}  // namespace surge::app
