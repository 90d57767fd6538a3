#include "kernels/plan.h"

#include <algorithm>
#include <cstdio>

namespace samebits {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t floor_pow2(int64_t x) {
  int64_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

}  // namespace

std::string MatmulPlan::describe() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "matmul{%s split_k=%d}", kind == Kind::kLibrary ? "library" : "fixed_order", split_k);
  return buf;
}

std::string RowReducePlan::describe() const { return "row_reduce{parts=" + std::to_string(parts) + "}"; }

std::string AttentionPlan::describe() const {
  char buf[128];
  if (kind == Kind::kSplitCount) {
    std::snprintf(buf, sizeof buf, "attention{split_count=%d separate_new_keys=%d}", split_count,
                  int(separate_new_keys));
  } else {
    std::snprintf(buf, sizeof buf, "attention{split_size=%d}", split_size);
  }
  return buf;
}

MatmulPlan plan_matmul(Mode mode, int64_t M, int64_t N, int64_t K, int parallel_units) {
  MatmulPlan plan;
  if (mode == Mode::kInvariant) return plan;  // fixed order, one part, for every M
  // Default: the library's choice. Modelled as a GPU library makes it: tiles of 64 columns and an
  // M bucket of rows; when the tiles cannot fill the machine the K dimension is split to make more
  // work items (as cuBLAS does for small M). Parts hold at least 32 values of K.
  plan.kind = MatmulPlan::Kind::kLibrary;
  const int64_t tile_m = M <= 8 ? 8 : M <= 32 ? 32 : M <= 128 ? 64 : 128, tile_n = 64;
  int64_t tiles = ceil_div(M, tile_m) * ceil_div(N, tile_n);
  int64_t want = std::max<int64_t>(1, parallel_units / std::max<int64_t>(1, tiles));
  int64_t max_parts = std::max<int64_t>(1, K / 32);
  plan.split_k = int(std::min(floor_pow2(want), floor_pow2(max_parts)));
  return plan;
}

RowReducePlan plan_row_reduce(Mode mode, int64_t rows, int64_t dim, int parallel_units) {
  RowReducePlan plan;
  if (mode == Mode::kInvariant) return plan;  // one row per worker, one order
  int64_t want = std::max<int64_t>(1, parallel_units / std::max<int64_t>(1, rows));
  int64_t max_parts = std::max<int64_t>(1, dim / 32);
  plan.parts = int(std::min(floor_pow2(want), floor_pow2(max_parts)));
  return plan;
}

AttentionPlan plan_attention(Mode mode, int num_seqs, int num_kv_heads, int64_t max_context,
                             int parallel_units) {
  AttentionPlan plan;
  if (mode == Mode::kInvariant) {
    plan.kind = AttentionPlan::Kind::kFixedSplitSize;
    plan.split_size = kInvariantAttentionSplit;
    plan.separate_new_keys = false;
    return plan;
  }
  // FlashDecoding-style: as many (sequence, kv head, split) items as give every parallel unit
  // kDefaultSplitItemsPerUnit of them, at most (one wave: all the splits of one length run at
  // once; rounding up left a second, short wave, measured 0.58 vs 0.78 of the copy floor at batch
  // 64 on the H200), each split of at least kDefaultMinSplitKeys keys. Counted per unit, not one
  // per unit: a split is one warp of the CUDA decode kernel, and an SM holds eight of them at
  // head_dim 128; one per SM left 7/8 of the machine idle at batch 4-64.
  plan.kind = AttentionPlan::Kind::kSplitCount;
  const int64_t work = std::max<int64_t>(1, int64_t(num_seqs) * num_kv_heads);
  const int64_t want =
      std::max<int64_t>(1, int64_t(kDefaultSplitItemsPerUnit) * std::max(1, parallel_units) / work);
  const int64_t max_splits = std::max<int64_t>(1, ceil_div(max_context, kDefaultMinSplitKeys));
  int64_t count = std::min(want, max_splits);
  // Short splits only where they are what fills the machine: each split costs its own set-up,
  // partial result and merge segment whatever its length, and where the launch has more than
  // kDefaultShortSplitItemsPerUnit items per unit the units are full anyway. There the count is
  // cut to that many items per unit, or to splits of kDefaultLongSplitKeys keys if those are more
  // (measured on the H200, head_dim 128: batch 1 x 8192 as 128 splits of 64 keys 0.23 of the copy
  // floor, as 32 of 256 0.41; batch 4 x 2048 as 32 of 64 0.39, as 8 of 256 0.49).
  const int64_t short_units = int64_t(kDefaultShortSplitItemsPerUnit) * std::max(1, parallel_units);
  if (count * work > short_units && count * kDefaultLongSplitKeys > max_context) {
    count = std::max(std::max<int64_t>(1, short_units / work), ceil_div(max_context, kDefaultLongSplitKeys));
  }
  // Splits longer than a sub-block: the count of splits of the longest context's share rounded up
  // to whole sub-blocks (kSplitAlignKeys), so that its equal parts are whole sub-blocks where the
  // context allows (8192 keys, 33 wanted: 32 of 256, not 33 of 249, each reading 5 sub-blocks).
  const int64_t chunk = ceil_div(max_context, count);
  if (chunk > kSplitAlignKeys) count = ceil_div(max_context, ceil_div(chunk, kSplitAlignKeys) * kSplitAlignKeys);
  plan.split_count = int(count);
  plan.separate_new_keys = true;
  return plan;
}

int num_splits(const AttentionPlan& plan, int64_t visible) {
  if (visible <= 0) return 0;
  if (plan.kind == AttentionPlan::Kind::kFixedSplitSize) return int(ceil_div(visible, plan.split_size));
  return int(std::min<int64_t>(plan.split_count, visible));
}

KeyRange split_range(const AttentionPlan& plan, int64_t visible, int index) {
  if (plan.kind == AttentionPlan::Kind::kFixedSplitSize) {
    int64_t b = int64_t(index) * plan.split_size;
    return {b, std::min<int64_t>(visible, b + plan.split_size)};
  }
  int n = num_splits(plan, visible);
  int64_t chunk = ceil_div(visible, n);
  int64_t b = std::min<int64_t>(visible, int64_t(index) * chunk);
  return {b, std::min<int64_t>(visible, b + chunk)};
}

}  // namespace samebits
