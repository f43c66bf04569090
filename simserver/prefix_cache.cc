#include "simserver/prefix_cache.h"

#include "common/split_mix.h"

namespace surge::simserver {

std::vector<uint64_t> ChainedBlockIds(const std::vector<uint64_t>& token_ids,
                                      uint32_t block_tokens) {
  const size_t blocks = token_ids.size() / block_tokens;
  std::vector<uint64_t> ids;
  ids.reserve(blocks);
  uint64_t parent = 0x5eedULL;
  for (size_t b = 0; b < blocks; ++b) {
    uint64_t h = SplitMix64(parent);
    for (size_t t = b * block_tokens; t < (b + 1) * block_tokens; ++t) {
      h = SplitMix64(h ^ token_ids[t]);
    }
    ids.push_back(h);
    parent = h;
  }
  return ids;
}

PrefixCache::PrefixCache(uint64_t capacity_blocks, uint32_t block_tokens)
    : capacity_(capacity_blocks), block_tokens_(block_tokens) {}

uint32_t PrefixCache::Visit(const std::vector<uint64_t>& prompt_token_ids) {
  const std::vector<uint64_t> ids = ChainedBlockIds(prompt_token_ids, block_tokens_);
  std::lock_guard<std::mutex> lock(mu_);
  // Lookup: the leading blocks already held.
  size_t found = 0;
  while (found < ids.size() && where_.count(ids[found]) > 0) ++found;
  // Insert or touch, last block first.
  for (size_t k = ids.size(); k-- > 0;) Touch(ids[k]);
  // Evict the least recently used beyond the capacity.
  while (lru_.size() > capacity_) {
    where_.erase(lru_.back());
    lru_.pop_back();
  }
  return static_cast<uint32_t>(found * block_tokens_);
}

void PrefixCache::Touch(uint64_t id) {
  if (auto it = where_.find(id); it != where_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front(id);
  where_[id] = lru_.begin();
}

uint64_t PrefixCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace surge::simserver
