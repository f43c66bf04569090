#include "coordinator/config/traffic_flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/utf8.h"

namespace surge::coordinator {

absl::Status ParseStageFlag(std::string_view value, surge::v1::TrafficCfg* traffic) {
  const std::string text(value);
  auto bad = [&text](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid configuration:\n  traffic_cfg.stages = \"", ToValidUtf8(text), "\": ", why,
        "; a stage is LENGTH@RATE, LENGTH 30s (seconds) or 500r (requests), RATE 10 (RPS), "
        "10-50 (linear ramp) or 10-50:exp (exponential ramp), e.g. --stage 30s@10 (flag "
        "--stage)"));
  };
  const size_t at = text.find('@');
  if (at == std::string::npos || at == 0) return bad("no LENGTH@RATE");
  const std::string length = text.substr(0, at);
  std::string rate = text.substr(at + 1);
  surge::v1::TrafficStage stage;
  const char unit = length.back();
  const std::string number = length.substr(0, length.size() - 1);
  if (unit == 's') {
    double d;
    if (!absl::SimpleAtod(number, &d)) return bad(absl::StrCat("\"", length, "\" is no duration"));
    stage.set_duration_s(d);
  } else if (unit == 'r') {
    uint64_t n;
    if (!absl::SimpleAtoi(number, &n)) return bad(absl::StrCat("\"", length, "\" is no count"));
    stage.set_num_requests(n);
  } else {
    return bad(absl::StrCat("LENGTH \"", length, "\" must end in s (seconds) or r (requests)"));
  }
  bool exponential = false;
  if (absl::EndsWith(rate, ":exp")) {
    exponential = true;
    rate.resize(rate.size() - 4);
  }
  const size_t dash = rate.find('-', 1);
  double a, b;
  if (dash == std::string::npos) {
    if (exponential || !absl::SimpleAtod(rate, &a)) {
      return bad(absl::StrCat("RATE \"", rate, "\" is no rate"));
    }
    stage.set_rate_rps(a);
  } else {
    if (!absl::SimpleAtod(rate.substr(0, dash), &a) ||
        !absl::SimpleAtod(rate.substr(dash + 1), &b)) {
      return bad(absl::StrCat("RATE \"", rate, "\" is no START-END ramp"));
    }
    stage.set_ramp_up_strategy(exponential ? surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL
                                           : surge::v1::RAMP_UP_STRATEGY_LINEAR);
    stage.set_ramp_up_start_rps(a);
    stage.set_ramp_up_end_rps(b);
  }
  *traffic->add_stages() = stage;
  return absl::OkStatus();
}

absl::Status ParseSpikeFlag(std::string_view value, surge::v1::TrafficCfg* traffic) {
  const std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(value.data(), value.size()), ':');
  double v[3];
  if (parts.size() != 3 || !absl::SimpleAtod(parts[0], &v[0]) ||
      !absl::SimpleAtod(parts[1], &v[1]) || !absl::SimpleAtod(parts[2], &v[2])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid configuration:\n  traffic_cfg.spikes = \"", ToValidUtf8(std::string(value)),
        "\": must be AT_S:DURATION_S:MULTIPLIER, e.g. 40:3:4 (four times the rate from 40 s "
        "to 43 s) (flag --spike)"));
  }
  auto* spike = traffic->add_spikes();
  spike->set_at_s(v[0]);
  spike->set_duration_s(v[1]);
  spike->set_rate_multiplier(v[2]);
  return absl::OkStatus();
}

}  // namespace surge::coordinator
