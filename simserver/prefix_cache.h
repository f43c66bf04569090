// The built-in server's prefix cache: a model of a KV cache with prefix
// caching (vLLM's automatic prefix caching), counted in blocks of
// block_tokens prompt tokens. A block's identity is a hash of its parent's
// identity and its own token ids, so a block is found only when the whole
// prompt before it matched too. Least recently used blocks are evicted when
// more than `capacity_blocks` are held. Thread-safe.
#ifndef SURGE_SIMSERVER_PREFIX_CACHE_H_
#define SURGE_SIMSERVER_PREFIX_CACHE_H_

#include <cstdint>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace surge::simserver {

class PrefixCache {
 public:
  // capacity_blocks >= 1, block_tokens >= 1.
  PrefixCache(uint64_t capacity_blocks, uint32_t block_tokens);

  // One prompt's visit: returns the cached tokens (the leading full blocks
  // found in the cache, times block_tokens), then inserts or touches every
  // full block of the prompt (a partial last block is not cached). Blocks
  // are touched from the last to the first, so a prompt's leading blocks
  // are the most recently used and its tail is evicted first (as vLLM frees
  // a request's blocks), and a chain is never left without its head while
  // its tail stays.
  uint32_t Visit(const std::vector<uint64_t>& prompt_token_ids);

  // Blocks held now (<= capacity_blocks).
  uint64_t size() const;

 private:
  void Touch(uint64_t id);

  const uint64_t capacity_;
  const uint32_t block_tokens_;
  mutable std::mutex mu_;
  // Most recently used first.
  std::list<uint64_t> lru_;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

// The chained identities of the full blocks of `token_ids`: identity k
// hashes identity k-1 and the k-th block's ids. Pure.
std::vector<uint64_t> ChainedBlockIds(const std::vector<uint64_t>& token_ids,
                                      uint32_t block_tokens);

}  // namespace surge::simserver

#endif  // SURGE_SIMSERVER_PREFIX_CACHE_H_
