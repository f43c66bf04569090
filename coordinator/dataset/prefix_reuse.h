// Planned prefix reuse (docs/DATASETS.md "Shared prefixes and reuse"): the
// share of a plan's prompt tokens that repeat, in whole blocks of
// block_tokens, a prefix that a request earlier in the planned send order
// already had. That is what an unbounded prefix cache (vLLM's automatic
// prefix caching, whose blocks are chained by the hash of parent and block)
// would hit. Pure: no I/O, no clock.
//
// A request is a sequence of block identities, each standing for
// tokens_per_id tokens of its prompt's start, and its prompt's token count:
// a synthetic prompt with a prefix is its group's blocks; a Mooncake line
// its hash_ids (512 tokens each); a session's turn could be its history.
#ifndef SURGE_COORDINATOR_DATASET_PREFIX_REUSE_H_
#define SURGE_COORDINATOR_DATASET_PREFIX_REUSE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace surge::coordinator {

class PayloadSource;

// Sums of the planned reuse.
struct PlannedReuse {
  uint32_t block_tokens = 0;
  uint64_t requests = 0;
  uint64_t shared_tokens = 0;
  uint64_t prompt_tokens = 0;
  // shared_tokens / prompt_tokens; 0 when there are no prompt tokens.
  double share() const {
    return prompt_tokens == 0 ? 0.0
                              : static_cast<double>(shared_tokens) /
                                    static_cast<double>(prompt_tokens);
  }
};

// Adds requests in planned send order. Memory: one 8-byte chain identity
// (plus the hash set's overhead) per distinct leading block seen.
class PlannedReuseCounter {
 public:
  // block_tokens >= 1.
  explicit PlannedReuseCounter(uint32_t block_tokens);

  // One request: its leading part shared with earlier requests is the
  // longest run of leading ids whose chain (id k with every id before it)
  // an earlier request had, times tokens_per_id, capped at prompt_tokens
  // and floored to whole blocks of block_tokens. Returns that many tokens;
  // then the request's chains count as seen.
  uint64_t Add(const uint64_t* block_ids, size_t count, uint32_t tokens_per_id,
               uint64_t prompt_tokens);
  uint64_t Add(const std::vector<uint64_t>& block_ids, uint32_t tokens_per_id,
               uint64_t prompt_tokens) {
    return Add(block_ids.data(), block_ids.size(), tokens_per_id, prompt_tokens);
  }

  const PlannedReuse& totals() const { return totals_; }

 private:
  PlannedReuse totals_;
  absl::flat_hash_set<uint64_t> seen_;
};

// The planned reuse of requests 0..n-1 of `payloads` (request order is the
// planned send order; a replayed trace is already sorted by timestamp),
// counted in blocks of block_tokens:
// - a synthetic prompt with a prefix: prefix_tokens / block_tokens whole
//   blocks of its group (equal prefix_seed, equal blocks), its own tokens
//   none;
// - a Mooncake line: its hash_ids, 512 tokens each (kPrefixBlockTokens);
// - any other prompt: nothing shared, its tokens counted.
// nullopt when no request has a prefix or block ids (the plan has no
// shared prefixes: nothing to report).
std::optional<PlannedReuse> PlanPrefixReuse(const PayloadSource& payloads, uint64_t n,
                                            uint32_t block_tokens);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_PREFIX_REUSE_H_
