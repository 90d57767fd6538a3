// Paged KV blocks: reference counts and one free queue.
//
// A block is free when no request references it (ref count 0). Free blocks wait in one queue:
// blocks that hold nothing reusable sit at the front, blocks that the prefix cache still indexes
// sit behind them in least-recently-freed order. allocate() takes the front block; when that block
// is a cached one, the eviction callback tells the prefix cache to forget it first. A block with
// more than one reference is always a cached (full, read-only) block; a block being written has
// exactly one owner.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace samebits {

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  // Blocks with no reference (uncached ones and evictable cached ones).
  int num_free() const { return num_free_; }
  // Blocks needed to hold `tokens` tokens.
  int blocks_for(int64_t tokens) const { return int((tokens + block_size_ - 1) / block_size_); }

  // Takes a free block with reference count 1, or -1 when none is free. Evicts a cached block
  // (through the callback) only when no uncached free block is left.
  int allocate();
  // Takes the given free block (replay of a recorded schedule); false when it is in use.
  bool take(int block);
  // One more reference to `block` (a prefix-cache hit); a free block leaves the free queue.
  void acquire(int block);
  // One reference fewer; at zero the block returns to the free queue (cached blocks at the back).
  void release(int block);

  int ref_count(int block) const { return ref_[size_t(block)]; }
  bool is_cached(int block) const { return cached_[size_t(block)] != 0; }
  // Marks a block as indexed by the prefix cache (set by PrefixCache, cleared on eviction).
  void set_cached(int block, bool cached) { cached_[size_t(block)] = cached ? 1 : 0; }
  void set_evict_callback(std::function<void(int block)> on_evict) { on_evict_ = std::move(on_evict); }

  // Free-queue order, front first (for tests).
  std::vector<int> free_queue() const;
  // Reference counts non-negative, the free queue holds exactly the blocks with count 0, once
  // each, and num_free() matches. Empty when consistent.
  std::string check_invariants() const;

 private:
  void unlink(int block);
  void push_front(int block);
  void push_back(int block);

  int num_blocks_, block_size_;
  int num_free_ = 0;
  std::vector<int32_t> ref_;
  std::vector<uint8_t> cached_;
  // Intrusive doubly linked free queue; index num_blocks_ is the sentinel.
  std::vector<int32_t> prev_, next_;
  std::function<void(int)> on_evict_;
};

}  // namespace samebits
