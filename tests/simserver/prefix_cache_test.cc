// The built-in server's prefix cache, exactly: which leading blocks hit,
// which blocks the least-recent-use order evicts, and chained identities.
#include "simserver/prefix_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace surge::simserver {
namespace {

using Ids = std::vector<uint64_t>;

TEST(PrefixCacheTest, FirstVisitMissesThenLeadingFullBlocksHit) {
  PrefixCache cache(/*capacity_blocks=*/10, /*block_tokens=*/2);
  EXPECT_EQ(cache.Visit({1, 2, 3, 4, 5}), 0u);  // blocks (1,2) (3,4); 5 is partial
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Visit({1, 2, 3, 4, 5}), 4u);
  EXPECT_EQ(cache.Visit({1, 2, 3, 4, 6, 7}), 4u);  // a third block (6,7) joins
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.Visit({1, 2, 3, 4, 6, 7}), 6u);
  EXPECT_EQ(cache.Visit({1, 2, 9, 9}), 2u);
  EXPECT_EQ(cache.Visit({1}), 0u);  // no full block
}

TEST(PrefixCacheTest, BlocksAreChainedToTheirParents) {
  PrefixCache cache(10, 2);
  EXPECT_EQ(cache.Visit({1, 2, 3, 4}), 0u);
  // Block (3,4) is held, but after another first block it is another block.
  EXPECT_EQ(cache.Visit({9, 9, 3, 4}), 0u);
  EXPECT_EQ(cache.size(), 4u);
  // A hit stops at the first miss: (1,2) hits, (5,5) misses, (3,4) after it
  // is not the held (3,4).
  EXPECT_EQ(cache.Visit({1, 2, 5, 5, 3, 4}), 2u);
}

TEST(PrefixCacheTest, LeastRecentlyUsedBlocksAreEvictedTailFirst) {
  PrefixCache cache(/*capacity_blocks=*/3, 2);
  EXPECT_EQ(cache.Visit({1, 2, 3, 4}), 0u);        // MRU: (1,2) (3,4)
  EXPECT_EQ(cache.Visit({1, 2, 3, 4, 5, 6}), 4u);  // MRU: (1,2) (3,4) (5,6)
  EXPECT_EQ(cache.size(), 3u);
  // (7,7) joins; the least recently used (5,6) goes.
  EXPECT_EQ(cache.Visit({1, 2, 7, 7}), 2u);  // MRU: (1,2) (7,7) (3,4)
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.Visit({1, 2, 3, 4, 5, 6}), 4u);  // (5,6) was evicted
  // That visit made (1,2) (3,4) (5,6) the newest: (7,7) went.
  EXPECT_EQ(cache.Visit({1, 2, 7, 7}), 2u);
}

TEST(PrefixCacheTest, APromptLongerThanTheCacheKeepsItsHead) {
  PrefixCache cache(2, 1);
  EXPECT_EQ(cache.Visit({1, 2, 3, 4}), 0u);
  EXPECT_EQ(cache.size(), 2u);
  // Touched last to first: the head (1) (1,2) stayed, the tail went.
  EXPECT_EQ(cache.Visit({1, 2, 3, 4}), 2u);
}

TEST(PrefixCacheTest, TwoPrefixesInACacheOfOneAlternateAndMiss) {
  PrefixCache cache(4, 4);
  const Ids a = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
  const Ids b = {5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8};
  EXPECT_EQ(cache.Visit(a), 0u);
  EXPECT_EQ(cache.Visit(a), 16u);
  EXPECT_EQ(cache.Visit(b), 0u);  // evicts all of a
  EXPECT_EQ(cache.Visit(a), 0u);
  EXPECT_EQ(cache.Visit(a), 16u);
}

TEST(PrefixCacheTest, ChainedIdsDependOnEveryEarlierToken) {
  const Ids x = ChainedBlockIds({1, 2, 3, 4, 5}, 2);
  const Ids y = ChainedBlockIds({1, 9, 3, 4}, 2);
  ASSERT_EQ(x.size(), 2u);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NE(x[0], y[0]);
  EXPECT_NE(x[1], y[1]);
  EXPECT_EQ(ChainedBlockIds({1, 2, 3, 4}, 2), x);
  EXPECT_TRUE(ChainedBlockIds({1}, 2).empty());
}

TEST(PrefixCacheTest, ConcurrentVisitsKeepTheCapacity) {
  PrefixCache cache(8, 1);
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (uint64_t i = 0; i < 500; ++i) cache.Visit({t, i % 7, i % 3});
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.size(), 8u);
}

}  // namespace
}  // namespace surge::simserver
