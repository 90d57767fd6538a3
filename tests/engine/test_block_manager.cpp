// BlockManager: reference counts, free queue order, eviction of cached blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "harness/engine/block_manager.h"

namespace samebits {
namespace {

TEST(BlockManager, AllocatesEveryBlockOnceThenReportsNone) {
  for (int num_blocks : {1, 2, 7, 64}) {
    SCOPED_TRACE(::testing::Message() << "num_blocks=" << num_blocks);
    BlockManager bm(num_blocks, 16);
    std::vector<int> got;
    for (int i = 0; i < num_blocks; ++i) got.push_back(bm.allocate());
    EXPECT_EQ(bm.allocate(), -1);
    EXPECT_EQ(bm.num_free(), 0);
    std::sort(got.begin(), got.end());
    for (int i = 0; i < num_blocks; ++i) EXPECT_EQ(got[size_t(i)], i);
    for (int b : got) EXPECT_EQ(bm.ref_count(b), 1);
    EXPECT_EQ(bm.check_invariants(), "");
    for (int b : got) bm.release(b);
    EXPECT_EQ(bm.num_free(), num_blocks);
    EXPECT_EQ(bm.check_invariants(), "");
  }
}

TEST(BlockManager, ZeroBlocksNeverAllocates) {
  BlockManager bm(0, 16);
  EXPECT_EQ(bm.allocate(), -1);
  EXPECT_EQ(bm.num_free(), 0);
  EXPECT_EQ(bm.check_invariants(), "");
}

TEST(BlockManager, BlocksFor) {
  BlockManager bm(4, 16);
  EXPECT_EQ(bm.blocks_for(0), 0);
  EXPECT_EQ(bm.blocks_for(1), 1);
  EXPECT_EQ(bm.blocks_for(16), 1);
  EXPECT_EQ(bm.blocks_for(17), 2);
}

TEST(BlockManager, SharedBlockReturnsOnlyAfterLastRelease) {
  BlockManager bm(4, 16);
  int b = bm.allocate();
  bm.set_cached(b, true);
  bm.acquire(b);
  EXPECT_EQ(bm.ref_count(b), 2);
  bm.release(b);
  EXPECT_EQ(bm.num_free(), 3);
  bm.release(b);
  EXPECT_EQ(bm.num_free(), 4);
  EXPECT_EQ(bm.ref_count(b), 0);
  EXPECT_EQ(bm.check_invariants(), "");
}

TEST(BlockManager, UncachedFreeBlocksGoFirstThenLeastRecentlyFreedCached) {
  BlockManager bm(4, 16);
  std::vector<int> evicted;
  bm.set_evict_callback([&](int b) { evicted.push_back(b); });
  int a = bm.allocate(), b = bm.allocate(), c = bm.allocate(), d = bm.allocate();
  bm.set_cached(a, true);
  bm.set_cached(c, true);
  bm.release(c);  // cached, freed first: least recently used
  bm.release(a);  // cached
  bm.release(b);  // uncached: front
  bm.release(d);  // uncached: front
  EXPECT_EQ(bm.free_queue(), (std::vector<int>{d, b, c, a}));
  EXPECT_EQ(bm.allocate(), d);
  EXPECT_EQ(bm.allocate(), b);
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(bm.allocate(), c);
  EXPECT_EQ(evicted, std::vector<int>{c});
  EXPECT_FALSE(bm.is_cached(c));
  EXPECT_EQ(bm.check_invariants(), "");
}

TEST(BlockManager, AcquireTakesACachedBlockOutOfTheFreeQueue) {
  BlockManager bm(3, 16);
  int a = bm.allocate();
  bm.set_cached(a, true);
  bm.release(a);
  EXPECT_EQ(bm.num_free(), 3);
  bm.acquire(a);  // prefix-cache hit on a free cached block
  EXPECT_EQ(bm.num_free(), 2);
  EXPECT_EQ(bm.ref_count(a), 1);
  EXPECT_TRUE(bm.is_cached(a));
  const std::vector<int> queue = bm.free_queue();
  EXPECT_EQ(std::count(queue.begin(), queue.end(), a), 0);
  EXPECT_EQ(bm.check_invariants(), "");
}

TEST(BlockManager, TakeGivesASpecificFreeBlockOnly) {
  BlockManager bm(3, 16);
  EXPECT_TRUE(bm.take(2));
  EXPECT_FALSE(bm.take(2));
  EXPECT_FALSE(bm.take(3));
  EXPECT_FALSE(bm.take(-1));
  EXPECT_EQ(bm.ref_count(2), 1);
  EXPECT_EQ(bm.num_free(), 2);
  EXPECT_EQ(bm.check_invariants(), "");
}

TEST(BlockManager, InvariantCheckSeesADoubleRelease) {
  BlockManager bm(2, 16);
  int a = bm.allocate();
  bm.release(a);
  bm.release(a);  // a bug in a caller: the count goes negative and the check must say so
  EXPECT_NE(bm.check_invariants(), "");
}

}  // namespace
}  // namespace samebits
