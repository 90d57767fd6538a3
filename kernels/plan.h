// Host-side plans: every shape-dependent decision a kernel makes, made here, once, in the open.
//
// Default mode mimics production heuristics (cuBLAS split-K, FlashDecoding's split count): the
// choice depends on the whole batch, parameterised by the number of parallel units (SMs on a GPU,
// a virtual count on the CPU, 132 as on an H200), so the CPU backend makes the choices a GPU would.
// Invariant mode returns one plan for every shape. Both backends execute these plans; tests inspect
// them directly.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/mode.h"

namespace samebits {

inline constexpr int kDefaultParallelUnits = 132;  // SMs of an H200

// The K dimension of every reduction is summed in this many interleaved lanes (lane l takes
// k = l, l+16, ...), combined in a fixed pairwise tree. Fixed lanes make the order independent of
// the vector ISA the compiler picks.
inline constexpr int kReductionLanes = 16;

// Length of each contiguous part when [0, n) is cut into `parts` parts: ceil(n / parts) rounded up
// to a multiple of kReductionLanes, so every part begins on a lane boundary; trailing parts may be
// empty. Split-K matmul plans cut K so and split row-reduce plans cut a row so, on every backend.
inline int64_t lane_part_size(int64_t n, int parts) {
  const int64_t per = (n + parts - 1) / parts;
  return (per + kReductionLanes - 1) / kReductionLanes * kReductionLanes;
}

// How one linear call reduces K. Carried in LinearArgs; the model builds it with plan_matmul.
struct MatmulPlan {
  // kFixedOrder: the project's own kernel, split_k contiguous parts in a fixed order.
  // kLibrary: the default-mode choice of a device's vendor library, which picks its own algorithm
  //   from the shape (cuBLASLt heuristics on CUDA). A backend without such a library (the CPU)
  //   executes split_k, the planner's model of the library's split-K.
  enum class Kind { kFixedOrder, kLibrary };
  Kind kind = Kind::kFixedOrder;
  int split_k = 1;  // contiguous K parts, each reduced on its own, then added in part order
  std::string describe() const;
};
MatmulPlan plan_matmul(Mode mode, int64_t M, int64_t N, int64_t K, int parallel_units);

// How one rmsnorm call reduces each row's sum of squares. Carried in RmsNormArgs; the model builds
// it with plan_row_reduce.
struct RowReducePlan {
  int parts = 1;  // contiguous parts of one row's sum of squares, added in part order
  std::string describe() const;
};
RowReducePlan plan_row_reduce(Mode mode, int64_t rows, int64_t dim, int parallel_units);

// Split-KV attention. FlashInfer-style: either a split COUNT per query (default: chosen from the
// batch and the longest context, so the same query splits differently in another batch) or a
// fixed split SIZE in absolute key positions (invariant: split j always holds keys
// [j*split_size, (j+1)*split_size), merged in index order).
struct AttentionPlan {
  enum class Kind { kSplitCount, kFixedSplitSize };
  Kind kind = Kind::kFixedSplitSize;
  int split_count = 1;    // kSplitCount: keys 0..p of a query cut into this many equal parts
  int split_size = 256;   // kFixedSplitSize: keys per split, aligned to absolute positions
  // Default mode, prefill over a cached prefix: cached keys (read from the paged cache) and the
  // step's new keys (read from the step's K/V) are reduced as two partial results, then merged.
  // Invariant mode: every key is read from the cache, after the step's KV write.
  bool separate_new_keys = false;
  std::string describe() const;
};
inline constexpr int kInvariantAttentionSplit = 256;
// Default mode's split count (plan_attention): (sequence, kv head, split) items per parallel unit
// wanted, and the fewest keys per split; splits shorter than kDefaultLongSplitKeys only while the
// launch has at most kDefaultShortSplitItemsPerUnit items per parallel unit.
inline constexpr int kDefaultSplitItemsPerUnit = 8;
inline constexpr int kDefaultMinSplitKeys = 64;
inline constexpr int kDefaultShortSplitItemsPerUnit = 2;
inline constexpr int kDefaultLongSplitKeys = 256;
// The kernels' sub-block of keys (aligned to absolute positions): plan_attention picks split
// counts whose parts of the longest context are multiples of it where possible.
inline constexpr int kSplitAlignKeys = 64;
AttentionPlan plan_attention(Mode mode, int num_seqs, int num_kv_heads, int64_t max_context,
                             int parallel_units);

// Keys [begin, end) of split `index` for a query that sees keys [0, visible) under `plan`.
struct KeyRange {
  int64_t begin = 0, end = 0;
};
int num_splits(const AttentionPlan& plan, int64_t visible);
KeyRange split_range(const AttentionPlan& plan, int64_t visible, int index);

}  // namespace samebits
