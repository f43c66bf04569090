// The compact flags of a traffic profile, `--stage LENGTH@RATE` and
// `--spike AT_S:DURATION_S:MULTIPLIER`: each value is one item of a list of
// mappings (traffic_cfg.stages, traffic_cfg.spikes), which the option table
// gives no flag of its own. Pure.
#ifndef SURGE_COORDINATOR_CONFIG_TRAFFIC_FLAGS_H_
#define SURGE_COORDINATOR_CONFIG_TRAFFIC_FLAGS_H_

#include <string_view>

#include "absl/status/status.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// --stage VALUE (docs/TRAFFIC.md), appended to `traffic`'s stages: LENGTH@RATE
// with LENGTH "<seconds>s" (duration_s) or "<count>r" (num_requests) and RATE
// "<rps>" (rate_rps), "<start>-<end>" (linear ramp) or "<start>-<end>:exp"
// (exponential ramp), e.g. "30s@10", "500r@10-50", "20s@5-80:exp".
// Errors: INVALID_ARGUMENT "  traffic_cfg.stages = \"<value>\": <what is allowed>".
absl::Status ParseStageFlag(std::string_view value, surge::v1::TrafficCfg* traffic);

// --spike AT_S:DURATION_S:MULTIPLIER, appended to `traffic`'s spikes, e.g.
// "40:3:4" (×4 from 40 s to 43 s). Errors as ParseStageFlag's.
absl::Status ParseSpikeFlag(std::string_view value, surge::v1::TrafficCfg* traffic);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CONFIG_TRAFFIC_FLAGS_H_
