// Shared prefixes of synthetic prompts (--random-prefix-len,
// --random-prefix-groups; docs/DATASETS.md "Shared prefixes and reuse"):
// request i starts with the prefix of group g(i), prefix_len tokens of corpus
// text that are byte-identical for every request of the group, then its own
// tokens. Pure; immutable.
#ifndef SURGE_COORDINATOR_DATASET_SYNTHETIC_PREFIXES_H_
#define SURGE_COORDINATOR_DATASET_SYNTHETIC_PREFIXES_H_

#include <cstdint>

namespace surge::coordinator {

struct Payload;

class SyntheticPrefixes {
 public:
  // prefix_len 0 = no prefixes (Apply changes nothing); groups >= 1.
  SyntheticPrefixes(uint32_t prefix_len, uint32_t groups, uint64_t run_seed);

  // The group of request `index`, in 0..groups-1: a counter-based stream of
  // its own (SplitMix64 of a seed derived from the run seed, plus the
  // index), so neither the length draws nor the schedule change, and a
  // request's group does not depend on the others. 0 without prefixes.
  uint32_t GroupOf(uint64_t index) const;
  // Where the text of group `group` starts in the corpus (prefix_seed).
  uint64_t GroupSeed(uint32_t group) const;

  // Puts request `index`'s prefix in front of its own input_tokens:
  // prefix_tokens = prefix_len, prefix_seed = GroupSeed(GroupOf(index)),
  // input_tokens = prefix_len + own tokens (capped at 16777216).
  void Apply(uint64_t index, Payload* payload) const;

  uint32_t prefix_len() const { return prefix_len_; }
  uint32_t groups() const { return groups_; }

 private:
  uint32_t prefix_len_;
  uint32_t groups_;
  uint64_t stream_seed_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_SYNTHETIC_PREFIXES_H_
