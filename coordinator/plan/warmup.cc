#include "coordinator/plan/warmup.h"

#include <cmath>

#include "common/split_mix.h"

namespace surge::coordinator {

double WarmupSpacingS(uint32_t count, double first_rate_rps) {
  if (count == 0) return 0;
  if (!std::isfinite(first_rate_rps) || !(first_rate_rps >= kWarmupMinRateRps)) {
    return 1.0 / static_cast<double>(count);
  }
  return 1.0 / first_rate_rps;
}

std::vector<int64_t> WarmupOffsetsNs(uint32_t count, double first_rate_rps) {
  const double spacing_s = WarmupSpacingS(count, first_rate_rps);
  std::vector<int64_t> offsets(count);
  for (uint32_t s = 0; s < count; ++s) {
    offsets[s] = -std::llround(static_cast<double>(count - s) * spacing_s * 1e9);
  }
  return offsets;
}

uint64_t WarmupPayloadSeed(uint64_t run_seed) {
  // Any run seed maps to a different, well-mixed seed.
  return SplitMix64(run_seed);
}

}  // namespace surge::coordinator
