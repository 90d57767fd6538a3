// PrefixCache: hash chains, longest-prefix matches, collisions, eviction through the block manager.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "harness/engine/prefix_cache.h"

namespace samebits {
namespace {

std::vector<int32_t> iota_tokens(int n, int first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<uint64_t> hashes_of(const std::vector<int32_t>& tokens, int bs) {
  std::vector<uint64_t> h;
  PrefixCache::extend_hashes(tokens, bs, &h);
  return h;
}

TEST(PrefixCache, HashChainCoversTheParent) {
  const std::vector<int32_t> block = iota_tokens(4);
  EXPECT_NE(PrefixCache::chain_hash(1, block), PrefixCache::chain_hash(2, block));
  // Same second block after different first blocks: different hashes.
  std::vector<int32_t> a = iota_tokens(8), b = iota_tokens(8);
  b[0] = 99;
  EXPECT_NE(hashes_of(a, 4)[1], hashes_of(b, 4)[1]);
  EXPECT_EQ(hashes_of(a, 4).size(), 2u);
  EXPECT_EQ(hashes_of(iota_tokens(7), 4).size(), 1u);  // only full blocks
}

TEST(PrefixCache, MatchesTheLongestCachedPrefixOfFullBlocks) {
  const int bs = 4;
  BlockManager bm(8, bs);
  PrefixCache cache(bm);
  const std::vector<int32_t> tokens = iota_tokens(14);
  const std::vector<uint64_t> h = hashes_of(tokens, bs);
  std::vector<int32_t> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(bm.allocate());
  EXPECT_TRUE(cache.insert(tokens, h, 0, blocks[0]));
  EXPECT_TRUE(cache.insert(tokens, h, 1, blocks[1]));
  EXPECT_EQ(cache.size(), 2);
  EXPECT_EQ(cache.match(tokens, h, 3), (std::vector<int32_t>{blocks[0], blocks[1]}));
  EXPECT_EQ(cache.match(tokens, h, 1), (std::vector<int32_t>{blocks[0]}));
  EXPECT_TRUE(cache.match(tokens, h, 0).empty());
  // A different first block: no hit at all, even though block 1's tokens come later.
  std::vector<int32_t> other = tokens;
  other[1] = 200;
  EXPECT_TRUE(cache.match(other, hashes_of(other, bs), 3).empty());
  // Diverging in block 1: hit of one block.
  other = tokens;
  other[5] = 200;
  EXPECT_EQ(cache.match(other, hashes_of(other, bs), 3).size(), 1u);
  EXPECT_EQ(cache.check_invariants(), "");
}

TEST(PrefixCache, DuplicateHashIsNotIndexedTwice) {
  const int bs = 4;
  BlockManager bm(4, bs);
  PrefixCache cache(bm);
  const std::vector<int32_t> tokens = iota_tokens(4);
  const std::vector<uint64_t> h = hashes_of(tokens, bs);
  int a = bm.allocate(), b = bm.allocate();
  EXPECT_TRUE(cache.insert(tokens, h, 0, a));
  EXPECT_FALSE(cache.insert(tokens, h, 0, b));
  EXPECT_FALSE(bm.is_cached(b));
  EXPECT_EQ(cache.size(), 1);
}

TEST(PrefixCache, ForgedHashWithOtherTokensNeverMatches) {
  const int bs = 4;
  BlockManager bm(4, bs);
  PrefixCache cache(bm);
  const std::vector<int32_t> tokens = iota_tokens(4);
  const std::vector<uint64_t> h = hashes_of(tokens, bs);
  ASSERT_TRUE(cache.insert(tokens, h, 0, bm.allocate()));
  std::vector<int32_t> other = tokens;
  other[3] = 77;
  // As if XXH3 had collided: the stored tokens are compared too.
  EXPECT_TRUE(cache.match(other, h, 1).empty());
}

TEST(PrefixCache, EvictionOfAFreeCachedBlockForgetsIt) {
  const int bs = 2;
  BlockManager bm(2, bs);
  PrefixCache cache(bm);
  const std::vector<int32_t> tokens = iota_tokens(4);
  const std::vector<uint64_t> h = hashes_of(tokens, bs);
  int a = bm.allocate(), b = bm.allocate();
  cache.insert(tokens, h, 0, a);
  cache.insert(tokens, h, 1, b);
  bm.release(b);
  bm.release(a);  // LRU order now: b, a
  EXPECT_EQ(bm.allocate(), b);
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_EQ(cache.size(), 1);
  EXPECT_EQ(cache.match(tokens, h, 2), std::vector<int32_t>{a});
  EXPECT_EQ(cache.check_invariants(), "");
  EXPECT_EQ(bm.check_invariants(), "");
}

}  // namespace
}  // namespace samebits
