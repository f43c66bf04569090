#include "coordinator/dataset/prefix_reuse.h"

#include <algorithm>

#include "common/prompt_builder.h"
#include "common/split_mix.h"
#include "coordinator/dataset/payload_source.h"

namespace surge::coordinator {
namespace {

// The chain identity of a block: its parent's chain and its own id.
uint64_t Chain(uint64_t parent, uint64_t id) { return SplitMix64(parent * 0x100000001b3ULL ^ SplitMix64(id)); }

constexpr uint64_t kRoot = 0x726f6f74ULL;

}  // namespace

PlannedReuseCounter::PlannedReuseCounter(uint32_t block_tokens) {
  totals_.block_tokens = std::max<uint32_t>(block_tokens, 1);
}

uint64_t PlannedReuseCounter::Add(const uint64_t* block_ids, size_t count, uint32_t tokens_per_id,
                                  uint64_t prompt_tokens) {
  // Lookup: the leading chains an earlier request had.
  uint64_t chain = kRoot;
  size_t matched = 0;
  size_t k = 0;
  for (; k < count; ++k) {
    chain = Chain(chain, block_ids[k]);
    if (seen_.count(chain) == 0) break;
    ++matched;
  }
  // Then this request's chains are seen (the rest of them from where the
  // lookup stopped; the first unseen one is already computed).
  for (; k < count; ++k) {
    if (k > matched) chain = Chain(chain, block_ids[k]);
    seen_.insert(chain);
  }
  const uint64_t b = totals_.block_tokens;
  const uint64_t shared =
      std::min<uint64_t>(static_cast<uint64_t>(matched) * tokens_per_id, prompt_tokens) / b * b;
  ++totals_.requests;
  totals_.shared_tokens += shared;
  totals_.prompt_tokens += prompt_tokens;
  return shared;
}

std::optional<PlannedReuse> PlanPrefixReuse(const PayloadSource& payloads, uint64_t n,
                                            uint32_t block_tokens) {
  PlannedReuseCounter counter(block_tokens);
  const uint32_t b = std::max<uint32_t>(block_tokens, 1);
  bool any = false;
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < n; ++i) {
    const Payload p = payloads.At(i);
    if (p.prefix_tokens > 0) {
      // The group's whole blocks: ids prefix_seed + k, equal for the group.
      ids.resize(p.prefix_tokens / b);
      for (size_t k = 0; k < ids.size(); ++k) ids[k] = p.prefix_seed + k;
      counter.Add(ids, b, p.input_tokens);
      any = true;
    } else if (!p.prefix_block_ids.empty()) {
      counter.Add(p.prefix_block_ids, kPrefixBlockTokens, p.input_tokens);
      any = true;
    } else {
      counter.Add(nullptr, 0, b, p.input_tokens);
    }
  }
  if (!any) return std::nullopt;
  return counter.totals();
}

}  // namespace surge::coordinator
