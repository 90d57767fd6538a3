// Prefix cache over paged KV blocks. A full block is named by a hash chain: the hash of block i
// is XXH3-64 of its tokens seeded with the hash of block i-1 (kRootHash for block 0), so equal
// hashes mean equal prefixes up to and including that block. Each cached block also keeps its
// parent hash and its tokens, and a match compares them, so a hash collision can never hand out
// the wrong KV. Cached blocks stay in the block manager's free queue when nobody references them
// and are evicted least recently used first.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "harness/engine/block_manager.h"

namespace samebits {

class PrefixCache {
 public:
  static constexpr uint64_t kRootHash = 0x73616d6562697473ull;  // "samebits"

  explicit PrefixCache(BlockManager& blocks);
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  static uint64_t chain_hash(uint64_t parent, std::span<const int32_t> block_tokens);
  // Appends the chain hashes of the full blocks of `tokens` not yet in `hashes`.
  static void extend_hashes(std::span<const int32_t> tokens, int block_size, std::vector<uint64_t>* hashes);

  // Cached blocks holding the longest prefix of `tokens` made of full blocks, at most
  // `max_blocks` of them; `hashes` are the chain hashes of those full blocks.
  std::vector<int32_t> match(std::span<const int32_t> tokens, std::span<const uint64_t> hashes, int max_blocks) const;
  // Indexes `block` (whose KV holds tokens[index*bs, (index+1)*bs)) under hashes[index]. Returns
  // false, changing nothing, when an equal block is already cached under that hash.
  bool insert(std::span<const int32_t> tokens, std::span<const uint64_t> hashes, int index, int block);

  int64_t size() const { return int64_t(block_of_hash_.size()); }
  int64_t evictions() const { return evictions_; }
  // Every indexed block is marked cached in the block manager and vice versa. Empty when consistent.
  std::string check_invariants() const;

 private:
  bool same_block(int block, uint64_t parent, std::span<const int32_t> block_tokens) const;
  void evict(int block);

  BlockManager& blocks_;
  int block_size_;
  absl::flat_hash_map<uint64_t, int32_t> block_of_hash_;
  std::vector<uint64_t> hash_of_block_, parent_of_block_;
  std::vector<int32_t> tokens_of_block_;  // [num_blocks * block_size]
  int64_t evictions_ = 0;
};

}  // namespace samebits
