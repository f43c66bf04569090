#include "coordinator/dataset/synthetic_prefixes.h"

#include <algorithm>

#include "common/split_mix.h"
#include "coordinator/dataset/length_distribution.h"
#include "coordinator/dataset/payload_source.h"

namespace surge::coordinator {
namespace {

// A fixed odd constant ("prefixes") that sets this stream apart from the
// lengths' and the schedule's.
constexpr uint64_t kPrefixStream = 0x7072656669786573ULL;

}  // namespace

SyntheticPrefixes::SyntheticPrefixes(uint32_t prefix_len, uint32_t groups, uint64_t run_seed)
    : prefix_len_(prefix_len),
      groups_(std::max<uint32_t>(groups, 1)),
      stream_seed_(SplitMix64(run_seed ^ kPrefixStream)) {}

uint32_t SyntheticPrefixes::GroupOf(uint64_t index) const {
  if (prefix_len_ == 0 || groups_ == 1) return 0;
  // Lemire's multiply-high maps the 64-bit draw onto 0..groups-1.
  const unsigned __int128 wide =
      static_cast<unsigned __int128>(SplitMix64(stream_seed_ + index)) * groups_;
  return static_cast<uint32_t>(wide >> 64);
}

uint64_t SyntheticPrefixes::GroupSeed(uint32_t group) const {
  return SplitMix64(stream_seed_ ^ (0xa5a5a5a5ULL + group));
}

void SyntheticPrefixes::Apply(uint64_t index, Payload* payload) const {
  if (prefix_len_ == 0) return;
  const uint64_t total = std::min<uint64_t>(uint64_t{prefix_len_} + payload->input_tokens,
                                            kMaxDrawnTokens);
  payload->input_tokens = static_cast<uint32_t>(total);
  payload->prefix_tokens = prefix_len_;
  payload->prefix_seed = GroupSeed(GroupOf(index));
}

}  // namespace surge::coordinator
