#include "coordinator/plan/warmup.h"

#include <cmath>

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
  // splitmix64's finaliser of seed + a fixed odd constant: any run seed maps
  // to a different, well-mixed seed.
  uint64_t z = run_seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace surge::coordinator
