// SplitMix64's step: a well-spread 64-bit mix of a 64-bit value, for seeds
// of their own streams and for hashing ids together. Pure.
#ifndef SURGE_COMMON_SPLIT_MIX_H_
#define SURGE_COMMON_SPLIT_MIX_H_

#include <cstdint>

namespace surge {

constexpr uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace surge

#endif  // SURGE_COMMON_SPLIT_MIX_H_
