#include "harness/engine/prefix_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "xxhash.h"

namespace samebits {

static_assert(std::endian::native == std::endian::little, "block hashes read token ids as little-endian bytes");

PrefixCache::PrefixCache(BlockManager& blocks)
    : blocks_(blocks),
      block_size_(blocks.block_size()),
      hash_of_block_(size_t(blocks.num_blocks()), 0),
      parent_of_block_(size_t(blocks.num_blocks()), 0),
      tokens_of_block_(size_t(blocks.num_blocks()) * size_t(std::max(blocks.block_size(), 0)), 0) {
  blocks_.set_evict_callback([this](int block) { evict(block); });
}

uint64_t PrefixCache::chain_hash(uint64_t parent, std::span<const int32_t> block_tokens) {
  return XXH3_64bits_withSeed(block_tokens.data(), block_tokens.size_bytes(), parent);
}

void PrefixCache::extend_hashes(std::span<const int32_t> tokens, int block_size, std::vector<uint64_t>* hashes) {
  const size_t full = tokens.size() / size_t(block_size);
  while (hashes->size() < full) {
    const size_t i = hashes->size();
    const uint64_t parent = i == 0 ? kRootHash : (*hashes)[i - 1];
    hashes->push_back(chain_hash(parent, tokens.subspan(i * size_t(block_size), size_t(block_size))));
  }
}

bool PrefixCache::same_block(int block, uint64_t parent, std::span<const int32_t> block_tokens) const {
  return parent_of_block_[size_t(block)] == parent &&
         std::memcmp(&tokens_of_block_[size_t(block) * size_t(block_size_)], block_tokens.data(),
                     block_tokens.size_bytes()) == 0;
}

std::vector<int32_t> PrefixCache::match(std::span<const int32_t> tokens, std::span<const uint64_t> hashes,
                                        int max_blocks) const {
  std::vector<int32_t> hit;
  const int n = std::min<int>(max_blocks, int(hashes.size()));
  for (int i = 0; i < n; ++i) {
    auto it = block_of_hash_.find(hashes[size_t(i)]);
    if (it == block_of_hash_.end()) break;
    const uint64_t parent = i == 0 ? kRootHash : hashes[size_t(i) - 1];
    if (!same_block(it->second, parent, tokens.subspan(size_t(i) * size_t(block_size_), size_t(block_size_)))) break;
    hit.push_back(it->second);
  }
  return hit;
}

bool PrefixCache::insert(std::span<const int32_t> tokens, std::span<const uint64_t> hashes, int index, int block) {
  const uint64_t hash = hashes[size_t(index)];
  if (block_of_hash_.contains(hash) || blocks_.is_cached(block)) return false;
  block_of_hash_.emplace(hash, block);
  hash_of_block_[size_t(block)] = hash;
  parent_of_block_[size_t(block)] = index == 0 ? kRootHash : hashes[size_t(index) - 1];
  std::memcpy(&tokens_of_block_[size_t(block) * size_t(block_size_)], &tokens[size_t(index) * size_t(block_size_)],
              size_t(block_size_) * sizeof(int32_t));
  blocks_.set_cached(block, true);
  return true;
}

void PrefixCache::evict(int block) {
  block_of_hash_.erase(hash_of_block_[size_t(block)]);
  ++evictions_;
}

std::string PrefixCache::check_invariants() const {
  int64_t marked = 0;
  for (int b = 0; b < blocks_.num_blocks(); ++b) marked += blocks_.is_cached(b) ? 1 : 0;
  if (marked != size()) return absl::StrCat("prefix cache indexes ", size(), " blocks but ", marked, " are marked cached");
  for (const auto& [hash, block] : block_of_hash_) {
    if (!blocks_.is_cached(block)) return absl::StrCat("prefix cache indexes block ", block, " which is not marked cached");
    if (hash_of_block_[size_t(block)] != hash) return absl::StrCat("block ", block, " is indexed under a stale hash");
  }
  return "";
}

}  // namespace samebits
