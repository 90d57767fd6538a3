#include "harness/engine/block_manager.h"

#include "absl/strings/str_cat.h"

namespace samebits {

BlockManager::BlockManager(int num_blocks, int block_size)
    : num_blocks_(num_blocks < 0 ? 0 : num_blocks),
      block_size_(block_size),
      ref_(size_t(num_blocks_), 0),
      cached_(size_t(num_blocks_), 0),
      prev_(size_t(num_blocks_) + 1),
      next_(size_t(num_blocks_) + 1) {
  const int sentinel = num_blocks_;
  prev_[size_t(sentinel)] = next_[size_t(sentinel)] = sentinel;
  for (int b = 0; b < num_blocks_; ++b) push_back(b);  // lowest ids first
  num_free_ = num_blocks_;
}

void BlockManager::unlink(int b) {
  next_[size_t(prev_[size_t(b)])] = next_[size_t(b)];
  prev_[size_t(next_[size_t(b)])] = prev_[size_t(b)];
  prev_[size_t(b)] = next_[size_t(b)] = -1;
}

void BlockManager::push_front(int b) {
  const int s = num_blocks_;
  const int first = next_[size_t(s)];
  prev_[size_t(b)] = s;
  next_[size_t(b)] = first;
  prev_[size_t(first)] = b;
  next_[size_t(s)] = b;
}

void BlockManager::push_back(int b) {
  const int s = num_blocks_;
  const int last = prev_[size_t(s)];
  next_[size_t(b)] = s;
  prev_[size_t(b)] = last;
  next_[size_t(last)] = b;
  prev_[size_t(s)] = b;
}

int BlockManager::allocate() {
  const int b = next_[size_t(num_blocks_)];
  if (b == num_blocks_) return -1;
  take(b);
  return b;
}

bool BlockManager::take(int b) {
  if (b < 0 || b >= num_blocks_ || ref_[size_t(b)] != 0) return false;
  unlink(b);
  --num_free_;
  if (cached_[size_t(b)]) {
    if (on_evict_) on_evict_(b);
    cached_[size_t(b)] = 0;
  }
  ref_[size_t(b)] = 1;
  return true;
}

void BlockManager::acquire(int b) {
  if (ref_[size_t(b)]++ == 0) {
    unlink(b);
    --num_free_;
  }
}

void BlockManager::release(int b) {
  if (--ref_[size_t(b)] != 0) return;
  // Uncached blocks hold nothing worth keeping: hand them out first. Cached ones queue in the
  // order they became free, so the least recently used is evicted first.
  if (cached_[size_t(b)]) {
    push_back(b);
  } else {
    push_front(b);
  }
  ++num_free_;
}

std::vector<int> BlockManager::free_queue() const {
  std::vector<int> order;
  for (int b = next_[size_t(num_blocks_)]; b != num_blocks_ && int(order.size()) <= num_blocks_;
       b = next_[size_t(b)]) {
    order.push_back(b);
  }
  return order;
}

std::string BlockManager::check_invariants() const {
  std::vector<uint8_t> seen(size_t(num_blocks_), 0);
  int queued = 0;
  for (int b : free_queue()) {
    if (b < 0 || b >= num_blocks_) return absl::StrCat("free queue holds invalid block ", b);
    if (seen[size_t(b)]++) return absl::StrCat("block ", b, " is twice in the free queue");
    if (ref_[size_t(b)] != 0) return absl::StrCat("block ", b, " is in the free queue with ", ref_[size_t(b)], " references");
    ++queued;
  }
  for (int b = 0; b < num_blocks_; ++b) {
    if (ref_[size_t(b)] < 0) return absl::StrCat("block ", b, " has a negative reference count ", ref_[size_t(b)]);
    if (ref_[size_t(b)] == 0 && !seen[size_t(b)]) return absl::StrCat("block ", b, " is unreferenced but not free");
  }
  if (queued != num_free_) return absl::StrCat("free count ", num_free_, " but ", queued, " blocks queued");
  return "";
}

}  // namespace samebits
