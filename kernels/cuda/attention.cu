// Paged causal attention on CUDA over a varlen batch (prefill chunks and decodes mixed), GQA.
//
// Segments (key ranges) per query at absolute position p come from the plan, exactly as on the CPU
// (kernels/cpu/attention.cpp):
//   invariant (kFixedSplitSize): [j*split_size, (j+1)*split_size) ∩ [0, p], aligned to absolute
//     positions, every key read from the paged cache (written by kv_write before attention);
//   default (kSplitCount): decode: [0, p] cut into min(split_count, p+1) equal parts (the count
//     comes from the batch); prefill (q_len > 1) with separate_new_keys: [0, cached) from the cache
//     and [cached, p] from this step's k_new/v_new, two partials.
// Order inside one segment, per (query, q head) row: keys in sub-blocks of 64 aligned to absolute
// positions (0, 64, 128, ...), visiting only sub-blocks that hold keys of the row's range; per
// sub-block: s = q . k via mma.sync m16n8k16 (fp32), scale2 = fp32(scale * log2(e)) (log2 units);
// m_blk = (max over the row's keys of s) * scale2 (= the max of the scaled scores: rounding is
// monotone); m' = max(m, m_blk); alpha = ex2(m - m') (0 on the row's first sub-block);
// e_j = ex2(fma(s_j, scale2, -m')) (one rounding); l = l*alpha + sum(e) (sum: each lane over
// its 16 columns in order, then lanes xor 1, xor 2); o = o*alpha + bf16(e) . v (mma.sync). ex2 is
// the SFU's ex2.approx.ftz (attn_exp2, attention_kernel.cuh). A row's bits depend only on its q
// and its keys: rows never share a reduction, and sub-blocks outside its range leave it untouched.
// Merge of the segments of a row, in index order, empty ones skipped: the first partial is taken
// as is; then M' = max(M, m_c), a = ex2(M - M'), b = ex2(m_c - M'),
// L = fma(l_c, b, L*a), O = fma(o_c, b, O*a); out = bf16(O / L). This fold runs either in the block that
// computed all of a tile's segments (attention_64row_kernel.cuh: tiles of 17..64 rows; on compute
// capability 9.0 sm90a/attention_prefill.cu: tiles of up to 128 rows on wgmma, whose k16 steps
// give mma.sync's bits, for calls with a sequence of 128 rows or more), or, for a
// sequence's last tile of 1..16 rows (decodes), in a merge kernel (attention_decode_merge.cuh) over
// partials stored in fp32 by one warp per segment (attention_decode*.cuh): the same operations in
// the same order, so both give the same bits (gpu_tests runs both routes on the same batches and
// compares them bit for bit).
// Which one runs never depends on anything but speed.
// The work (tiles, their segments, the layout checks) is derived on the device from query_start /
// context_lens (attention_worklist.cuh). The host sizes the launches: exactly from the caller's
// host mirrors when given (AttentionArgs::host_query_start / host_context_lens), else from bounds
// on the shapes alone (T, num_seqs, max_blocks_per_seq), which never synchronises and gives the
// same launches for every batch of those shapes (CUDA graphs).
// Invariant mode therefore gives a query the same bits alone or in any batch, chunked or not, in
// prefill or decode, with any block table or block size. Bits differ from the CPU backend's (the
// CPU reduces in 16 fixed lanes, merges with a global max and takes fixed_expf); not promised. No
// atomics on floats.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/attention_host.h"
#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/attention_decode_chain.cuh"
#include "kernels/cuda/attention_decode_merge.cuh"
#include "kernels/cuda/attention_decode_segment.cuh"
#include "kernels/cuda/attention_decode_split.cuh"
#include "kernels/cuda/attention_64row_kernel.cuh"
#include "kernels/cuda/attention_kernel.cuh"
#include "kernels/cuda/attention_prefill.h"
#include "kernels/cuda/attention_worklist.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/linear_common.cuh"

namespace samebits {
namespace {

using cuda::AttnParams;
using cuda::DecodeGrid;

absl::Status invalid(const std::string& what) { return attention_invalid(what); }

// Segments of a tile whose last row sits at position p_max (the device's tile_segment_count).
int tile_segments(const AttentionPlan& plan, int64_t cached, int64_t q_len, int64_t p_max) {
  if (attention_reads_new_keys(plan, q_len)) return cached > 0 ? 2 : 1;
  return num_splits(plan, p_max + 1);
}

// Blocks of `bytes` of dynamic shared memory that one SM holds at once (its shared memory less
// the reserve per block, read once from the device).
int blocks_per_sm_by_smem(int bytes) {
  static const std::pair<int, int> sm = [] {
    int device = 0, per_sm = 0, reserved = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device);
    return std::pair<int, int>{per_sm, reserved};
  }();
  return sm.first / (bytes + sm.second);
}

// Segment slots of a launch (gridDim.x of the decode kernels: slot j takes segments j, j + slots,
// ... of its tile) for `tiles` (sequence, kv head) decode tiles of up to `segments` segments each,
// the same rule with host mirrors (exact segments) and without (the shapes' bound: every step an
// engine captures). Speed only: a segment's arithmetic does not depend on its slot.
//  - head_dim 128: a slot per segment. The decode kernel holds 8 warps per SM (26 KiB of shared
//    memory each), and many short waves balance themselves; fewer slots left a last wave mostly
//    empty or SMs idle.
//  - head_dim 64: the few-warps chain kernel takes most launches (chain_kernel_below_warps), one
//    wave of its blocks (12 per SM) at most, where a block's time follows its segments. So the
//    slots that minimise the most segments one SM runs (ceil(tiles x slots / SMs) warps of
//    ceil(segments / slots) segments each), the most slots of those that tie; one slot where the
//    tiles alone exceed the wave.
// H200, invariant, graph replays (bench/cuda/notes/decode.md, 2026-12-03), against the previous
// rules (a slot per segment with mirrors; min(segments, 8 x SMs / tiles) without): sized from the
// shapes, head_dim 128 batch 16 x 8192 183.7 -> 139.6 us, batch 64 x 2048 / 8192 0.86x, batch 256 x
// 8192 0.97x, head_dim 64 batch 16 x 8192 and 64 x 2048 / 8192 0.74-0.88x; with mirrors (calls)
// head_dim 64 batch 16 x 8192, 64 x 2048 / 8192, 256 x 512-8192 and 4 x 32768 0.78-0.81x; every
// other graph-replay row 0.984-1.018.
int decode_slot_count(int head_dim, int64_t tiles, int segments) {
  if (head_dim == 128 || segments <= 1 || tiles <= 0) return segments;
  const int64_t sms = cuda::device_sm_count();
  const int64_t wave = int64_t(blocks_per_sm_by_smem(cuda::ChainLayout<64, cuda::kChainRingShallow>::kBytes)) * sms;
  int best = 1;
  int64_t best_load = INT64_MAX;
  for (int slots = 1; slots <= segments && tiles * slots <= wave; ++slots) {
    const int64_t load = cuda::ceil_div64(tiles * slots, sms) * cuda::ceil_div64(segments, slots);
    if (load <= best_load) {
      best = slots;
      best_load = load;
    }
  }
  return best;
}

// How much work one call may hold: items of the 64-row kernel (per kv head) and the decode grid.
struct Extents {
  int64_t items = 0;
  int64_t prefill_items = 0;  // items of kPrefillTileRows rows (the wgmma prefill kernel's list)
  int64_t max_rows = 0;       // the most rows of one sequence (a bound without host mirrors)
  DecodeGrid grid{0, 1};
  int decode_slots = 0;      // gridDim.x of the decode kernel
  int64_t decode_tiles = 0;  // tiles of 1..16 rows per kv head (a bound without host mirrors)
};

// Exact, from the host mirrors.
Extents exact_extents(const AttentionArgs& a, const int32_t* qs, const int32_t* cl, AttentionRoute route) {
  const int group = a.num_q_heads / a.num_kv_heads;
  Extents e;
  for (int s = 0; s < a.num_seqs; ++s) {
    const int64_t q_len = int64_t(qs[s + 1]) - qs[s];
    const int64_t cached = int64_t(cl[s]) - q_len;
    const int64_t rows = q_len * group, rem = rows % cuda::kAttnRows;
    e.max_rows = std::max(e.max_rows, rows);
    e.items += rows / cuda::kAttnRows;
    const bool listed = rem > cuda::kDecodeRows || route == AttentionRoute::kGeneralOnly;
    e.prefill_items += (rows - (listed ? 0 : rem) + cuda::kPrefillTileRows - 1) / cuda::kPrefillTileRows;
    if (rem == 0) continue;
    if (listed) {
      ++e.items;
      continue;
    }
    const int nseg = tile_segments(a.plan, cached, q_len, cached + (rows - 1) / group);
    ++e.decode_tiles;
    e.grid.max_segments = std::max(e.grid.max_segments, nseg);
    e.grid.partial_rows = std::max(e.grid.partial_rows, int(rem));
  }
  e.decode_slots = decode_slot_count(a.head_dim, e.decode_tiles * a.num_kv_heads, e.grid.max_segments);
  return e;
}

// Bounds from the shapes alone: contexts up to max_blocks_per_seq * block_size keys, queries up to
// T - num_seqs + 1 tokens per sequence, T * group rows in all.
Extents bound_extents(const AttentionArgs& a, AttentionRoute route) {
  const int group = a.num_q_heads / a.num_kv_heads;
  const int64_t max_context = int64_t(a.max_blocks_per_seq) * a.block_size;
  const int64_t max_q = std::max<int64_t>(1, a.T - a.num_seqs + 1);
  const int64_t rows = a.T * group;
  Extents e;
  e.max_rows = group * max_q;
  if (route == AttentionRoute::kGeneralOnly) {
    e.items = e.prefill_items = std::min<int64_t>(rows, rows / cuda::kAttnRows + a.num_seqs);
    return e;
  }
  // Tiles of the 64-row kernel hold at least 17 rows each; none when every sequence's rows fit one
  // decode tile (a batch of decodes: no list, no 64-row launch).
  e.items = group * max_q <= cuda::kDecodeRows
                ? 0
                : std::min<int64_t>(rows / (cuda::kDecodeRows + 1), rows / cuda::kAttnRows + a.num_seqs);
  e.prefill_items = e.items;
  int64_t segments = 0;
  if (a.plan.kind == AttentionPlan::Kind::kFixedSplitSize) {
    segments = (max_context + a.plan.split_size - 1) / a.plan.split_size;
  } else {
    segments = std::min<int64_t>(a.plan.split_count, max_context);
    if (a.plan.separate_new_keys && max_q > 1) segments = std::max<int64_t>(segments, 2);
  }
  e.grid.max_segments = int(std::max<int64_t>(1, segments));
  e.decode_tiles = a.num_seqs;
  e.grid.partial_rows = int(std::min<int64_t>(cuda::kDecodeRows, group * max_q));
  e.decode_slots = decode_slot_count(a.head_dim, e.decode_tiles * a.num_kv_heads, e.grid.max_segments);
  return e;
}

template <typename Kernel>
absl::Status raise_smem_limit(Kernel kernel, int bytes, bool* done) {
  if (!*done) {
    SAMEBITS_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    *done = true;
  }
  return absl::OkStatus();
}

// The decode kernel with kWarps warps per block: kv heads blockIdx.y * kWarps .. + kWarps - 1 of
// one sequence, each warp on its own (the same work: one sequence's heads have the same keys).
template <int HD, int kHalves, int kWarps, int kExps = cuda::kExpsOwn>
absl::Status launch_decode(const AttnParams& params, const Extents& e, cudaStream_t stream) {
  constexpr int kBytes = cuda::DecodeLayout<HD, kHalves, cuda::kDecodeRing>::kBytes * kWarps;
  static bool smem_set = false;
  SAMEBITS_RETURN_IF_ERROR(
      raise_smem_limit(cuda::attention_decode_kernel<HD, kHalves, kWarps, kExps>, kBytes, &smem_set));
  const dim3 blocks(unsigned(e.decode_slots), unsigned(params.num_kv_heads / kWarps), unsigned(params.num_seqs));
  return cuda::launch_after_previous("attention_decode_kernel", cuda::attention_decode_kernel<HD, kHalves, kWarps, kExps>,
                                     blocks, dim3(32 * kWarps), kBytes, stream, params, e.grid);
}

// Decode tiles of at most 4 rows in every tile of the launch (one token of up to 4 GQA heads) take
// the kernels' shared-exponentials softmax (attention_kernel.cuh, kExpsShared): the same bits.
bool share_exps(const Extents& e) { return e.grid.partial_rows <= 4; }

// The decode kernel with kWarps warps per block, sharing the exponentials where the launch allows
// (tiles of at most 8 rows, kHalves = 1, every one holding at most 4).
template <int HD, int kHalves, int kWarps>
absl::Status launch_decode_exps(const AttnParams& params, const Extents& e, cudaStream_t stream) {
  if constexpr (kHalves == 1) {
    if (share_exps(e)) return launch_decode<HD, kHalves, kWarps, cuda::kExpsShared>(params, e, stream);
  }
  return launch_decode<HD, kHalves, kWarps>(params, e, stream);
}

// Warps per block: the most kv heads of a sequence (8, 4 or 2, dividing num_kv_heads) whose shared
// memory fits one block, if the blocks still number at least two per SM; else one. Blocks of one
// warp each made a large batch of short decodes slow: with warps of different blocks at different
// places in the kernel, half of all stall cycles were instruction fetch (ncu, bench decode-burst:
// 1000 sequences of 17..148 keys); the warps of one block run the same code at about the same
// time. Few wide blocks leave SMs idle instead (batch 1-64: up to 0.6x). max_warps < 8: blocks of
// at most that many warps (launch() says when). Speed only: a warp's arithmetic does not depend on
// its block.
template <int HD, int kHalves>
absl::Status launch_decode_tiles(const AttnParams& params, const Extents& e, bool widest, int max_warps,
                                 cudaStream_t stream) {
  constexpr int kWarpBytes = cuda::DecodeLayout<HD, kHalves, cuda::kDecodeRing>::kBytes;
  constexpr int kMaxBlockBytes = 220 * 1024;
  const int64_t warps = e.decode_tiles * params.num_kv_heads * e.decode_slots;
  auto fits = [&](int w) {
    return w <= max_warps && params.num_kv_heads % w == 0 && w * kWarpBytes <= kMaxBlockBytes &&
           (widest || warps / w >= int64_t(2) * cuda::device_sm_count());
  };
  if (fits(8)) return launch_decode_exps<HD, kHalves, 8>(params, e, stream);
  if (fits(4)) return launch_decode_exps<HD, kHalves, 4>(params, e, stream);
  if (fits(2)) return launch_decode_exps<HD, kHalves, 2>(params, e, stream);
  return launch_decode_exps<HD, kHalves, 1>(params, e, stream);
}

// Decode warps of a launch below which attention_decode_chain_kernel takes its decode tiles (few
// warps per SM: each warp's own chain is the bound), measured on the H200
// (bench/cuda/notes/decode.md, 2026-12-01: at head_dim 128 the chain kernel was ahead up to 512
// warps and behind from 1024 on, at head_dim 64 up to 2048 warps). kDecodeKernelWide always takes
// attention_decode_kernel.
template <int HD>
int64_t chain_kernel_below_warps() {
  return int64_t(HD == 128 ? 4 : 16) * cuda::device_sm_count();
}

template <int HD, int kHalves, int kRing, int kExps = cuda::kExpsOwn>
absl::Status launch_chain(const AttnParams& params, const Extents& e, cudaStream_t stream) {
  constexpr int kBytes = cuda::ChainLayout<HD, kRing>::kBytes;
  static bool smem_set = false;
  SAMEBITS_RETURN_IF_ERROR(
      raise_smem_limit(cuda::attention_decode_chain_kernel<HD, kHalves, kRing, kExps>, kBytes, &smem_set));
  const dim3 blocks(unsigned(e.decode_slots), unsigned(params.num_kv_heads), unsigned(params.num_seqs));
  return cuda::launch_after_previous("attention_decode_chain_kernel",
                                     cuda::attention_decode_chain_kernel<HD, kHalves, kRing, kExps>, blocks, dim3(32),
                                     kBytes, stream, params, e.grid);
}

// The chain kernel with tiles of at most 8 rows (kHalves = 1), sharing the exponentials where
// every tile holds at most 4 rows.
template <int HD, int kRing>
absl::Status launch_chain_8_rows(const AttnParams& params, const Extents& e, cudaStream_t stream) {
  return share_exps(e) ? launch_chain<HD, 1, kRing, cuda::kExpsShared>(params, e, stream)
                       : launch_chain<HD, 1, kRing>(params, e, stream);
}

// The chain kernel with a ring of `ring` items, tiles of up to 8 rows without the mma rows 8..15
// (kHalves = 1: 0.242 -> 0.266 of the copy floor, bench decode-burst hd=64 batch=256, H200), tiles of
// 9..16 rows always with the shallowest ring. kAuto takes the shallowest ring (the depth measured
// before); the deeper ones are forced by the routes kDecodeChainRing4 / 8 until the bench's
// decode-chain-ring rows have been measured side by side
// (bench/cuda/notes/decode-small-batches.md). Speed only: every configuration gives the same bits.
template <int HD>
absl::Status launch_chain_ring(const AttnParams& params, const Extents& e, int ring, cudaStream_t stream) {
  if (e.grid.partial_rows > 8) return launch_chain<HD, 2, cuda::kChainRingShallow>(params, e, stream);
  if (ring == cuda::kChainRingDeep) return launch_chain_8_rows<HD, cuda::kChainRingDeep>(params, e, stream);
  if (ring == cuda::kChainRingMid) return launch_chain_8_rows<HD, cuda::kChainRingMid>(params, e, stream);
  return launch_chain_8_rows<HD, cuda::kChainRingShallow>(params, e, stream);
}

// The ring depth a route forces on the chain kernel (0: none).
int forced_chain_ring(AttentionRoute route) {
  switch (route) {
    case AttentionRoute::kDecodeChainRing2: return cuda::kChainRingShallow;
    case AttentionRoute::kDecodeChainRing4: return cuda::kChainRingMid;
    case AttentionRoute::kDecodeChainRing8: return cuda::kChainRingDeep;
    default: return 0;
  }
}

// The decode tiles (at most 8 rows) on attention_decode_split_kernel: four warps per (segment, kv
// head), a ring of `ring` sub-block items. Its warps share the exponentials by keys, so it takes
// no kExps variant.
template <int HD, int kRing>
absl::Status launch_split(const AttnParams& params, const Extents& e, cudaStream_t stream) {
  constexpr int kBytes = cuda::SplitLayout<HD, kRing>::kBytes;
  static bool smem_set = false;
  SAMEBITS_RETURN_IF_ERROR(raise_smem_limit(cuda::attention_decode_split_kernel<HD, kRing>, kBytes, &smem_set));
  const dim3 blocks(unsigned(e.decode_slots), unsigned(params.num_kv_heads), unsigned(params.num_seqs));
  return cuda::launch_after_previous("attention_decode_split_kernel", cuda::attention_decode_split_kernel<HD, kRing>,
                                     blocks, dim3(32 * cuda::kSplitWarps), kBytes, stream, params, e.grid);
}

template <int HD>
absl::Status launch_split_ring(const AttnParams& params, const Extents& e, int ring, cudaStream_t stream) {
  if (e.grid.partial_rows > 8) return launch_chain<HD, 2, cuda::kChainRingShallow>(params, e, stream);
  if (ring == cuda::kSplitRingDeep) return launch_split<HD, cuda::kSplitRingDeep>(params, e, stream);
  return launch_split<HD, cuda::kSplitRingMid>(params, e, stream);
}

// The decode tiles (at most 8 rows) on attention_decode_segment_kernel: four warps per (segment, kv
// head), the sub-blocks of a round side by side; larger tiles as kDecodeChainRing2.
template <int HD>
absl::Status launch_segment(const AttnParams& params, const Extents& e, cudaStream_t stream) {
  if (e.grid.partial_rows > 8) return launch_chain<HD, 2, cuda::kChainRingShallow>(params, e, stream);
  constexpr int kBytes = cuda::SegmentLayout<HD>::kBytes;
  static bool smem_set = false;
  SAMEBITS_RETURN_IF_ERROR(raise_smem_limit(cuda::attention_decode_segment_kernel<HD>, kBytes, &smem_set));
  const dim3 blocks(unsigned(e.decode_slots), unsigned(params.num_kv_heads), unsigned(params.num_seqs));
  return cuda::launch_after_previous("attention_decode_segment_kernel", cuda::attention_decode_segment_kernel<HD>,
                                     blocks, dim3(32 * cuda::kSegmentWarps), kBytes, stream, params, e.grid);
}

// The ring depth a route forces on the split kernel (0: none).
int forced_split_ring(AttentionRoute route) {
  switch (route) {
    case AttentionRoute::kDecodeSplitRing4: return cuda::kSplitRingMid;
    case AttentionRoute::kDecodeSplitRing8: return cuda::kSplitRingDeep;
    default: return 0;
  }
}

// Whether `units` blocks of `bytes` of shared memory each run in one wave.
bool one_wave(int64_t units, int bytes) {
  return units <= int64_t(blocks_per_sm_by_smem(bytes)) * cuda::device_sm_count();
}

// The ring of attention_decode_split_kernel for a launch of `units` (segment, kv head) units of
// decode tiles of at most 8 rows (0: not that kernel): the deepest ring whose blocks take every
// unit in ONE wave. Ring 8 (a whole segment in flight) fits 1 block per SM at head_dim 128, 3 at
// 64; ring 4 fits 3 and 6. Measured on the H200 (bench/cuda/notes/decode-small-batches.md): ring 8
// at batch 1-4 (16-64 units at head_dim 128, up to 256 at 64) 0.69-0.87x the previous route's time;
// at 256 units and head_dim 128 ring 8 (two waves) was up to 1.3x the chain kernel's time, ring 4
// (one wave) 0.72-0.76x (invariant batch 4 x 2048 and batch 1 x 8192, graph replays, 2026-12-02).
// Larger launches go to the chain kernel, whose single warps fit many per SM, or the decode kernel.
template <int HD>
int split_kernel_ring(int64_t units) {
  if (one_wave(units, cuda::SplitLayout<HD, cuda::kSplitRingDeep>::kBytes)) return cuda::kSplitRingDeep;
  if (one_wave(units, cuda::SplitLayout<HD, cuda::kSplitRingMid>::kBytes)) return cuda::kSplitRingMid;
  return 0;
}

// Which kernel takes the tiles of more than 16 rows (cuda_ops.h, AttentionPrefillPlan).
AttentionPrefillPlan prefill_plan(const AttentionArgs& a, const Extents& e, AttentionRoute route) {
  AttentionPrefillPlan p;
  const bool forced = route == AttentionRoute::kPrefillKernel || route == AttentionRoute::kPrefillKernelPlanted;
  p.wgmma = forced || (route != AttentionRoute::kGeneralOnly && e.max_rows >= cuda::kPrefillTileRows &&
                       cuda::is_hopper_device());
  if (p.wgmma) {
    p.tile_rows = cuda::kPrefillTileRows;
    p.threads = cuda::prefill_threads();
    p.stages = cuda::prefill_stages(a.head_dim);
    p.smem_bytes = cuda::prefill_smem_bytes(a.head_dim);
  } else {
    p.smem_bytes = cuda::attention_kernel_smem_bytes(a.head_dim);
  }
  return p;
}

// A call's launch sizes (exact from the host mirrors, else bounds from the shapes), its prefill
// plan and its route after the automatic reroute below.
struct CallSizing {
  Extents e;
  AttentionPrefillPlan prefill;
  AttentionRoute route;
};

CallSizing size_call(const AttentionArgs& a, AttentionRoute route) {
  const bool mirrors = a.host_query_start && a.host_context_lens;
  auto extents = [&](AttentionRoute r) {
    return mirrors ? exact_extents(a, a.host_query_start, a.host_context_lens, r) : bound_extents(a, r);
  };
  CallSizing c{extents(route), {}, route};
  c.prefill = prefill_plan(a, c.e, route);
  const AttentionPrefillPlan& pp = c.prefill;
  Extents& e = c.e;
  // Decode tiles of one segment each, fewer than two per SM, of more than 8 rows: one whole-context
  // chain per warp of the decode kernel then leaves most of the machine idle, and the 64-row kernel
  // (four warps loading per tile) was a little faster on the H200 (bench/cuda/notes/decode.md,
  // default mode: batch 16, split_count 1: 0.157 vs 0.144 of the copy floor; batch 64: 0.32 vs
  // 0.58, so the decode kernel from there on). Tiles of at most 8 rows stay: the segment and split
  // kernels (four warps per segment) take such launches in one kernel, where the 64-row route takes
  // two (the work list, then the kernel): H200, invariant batch 1-16 x 128 keys, graph replays,
  // 5.0-5.9 us against 12.1-12.8 (bench/cuda/notes/decode-small-batches.md, 2026-12-03). Speed
  // only: every route gives the same bits. Not with the wgmma prefill kernel: it keeps the list of
  // 128-row tiles.
  if (route == AttentionRoute::kAuto && !pp.wgmma && e.grid.max_segments == 1 && e.grid.partial_rows > 8 &&
      e.decode_tiles * a.num_kv_heads < int64_t(2) * cuda::device_sm_count()) {
    e = extents(AttentionRoute::kGeneralOnly);
    c.route = AttentionRoute::kGeneralOnly;
  }
  return c;
}

template <int HD>
absl::Status launch(const AttnParams& base, const Extents& e, AttentionRoute route, const AttentionPrefillPlan& pp,
                    cudaStream_t stream) {
  constexpr int kSmem = cuda::attention_kernel_smem_bytes(HD);
  static bool general_set = false;
  SAMEBITS_RETURN_IF_ERROR(raise_smem_limit(cuda::attention_kernel<HD>, kSmem, &general_set));
  const DecodeGrid& grid = e.grid;
  const int64_t items = pp.wgmma ? e.prefill_items : e.items;
  AttnParams params = base;
  params.decode_tiles_listed = route == AttentionRoute::kGeneralOnly ? 1 : 0;
  if (grid.max_segments > 1) {
    const size_t partial_floats =
        size_t(base.num_seqs) * base.num_kv_heads * grid.max_segments * grid.partial_rows * (HD + 2);
    absl::StatusOr<void*> buf = cuda::scratch(sizeof(float) * partial_floats);
    if (!buf.ok()) return buf.status();
    params.partials = static_cast<float*>(*buf);
  }
  if (items > 0) {
    // Each block finds its own item (attention_worklist.cuh): no list, no launch before these.
    if (pp.wgmma) {
      SAMEBITS_RETURN_IF_ERROR(cuda::launch_attention_prefill(params, items, HD,
                                                              route == AttentionRoute::kPrefillKernelPlanted, stream));
    } else {
      SAMEBITS_RETURN_IF_ERROR(cuda::launch_after_previous("attention_kernel", cuda::attention_kernel<HD>,
                                                           dim3(unsigned(items * base.num_kv_heads)),
                                                           dim3(cuda::kAttnThreads), kSmem, stream, params));
    }
  }
  bool merge_overlaps = false;  // the merge kernel may start before the decode kernel ends
  if (grid.max_segments > 0) {
    // Tiles of at most 8 rows (every decode tile of the launch): the kernel without mma rows 8..15.
    const bool widest = route == AttentionRoute::kDecodeKernelWide;
    const bool four_warps = route == AttentionRoute::kDecodeKernelFourWarps;
    // Tiles of one segment (short contexts, e.g. the burst's 17..148 keys): blocks of at most 4
    // warps, two per SM at head_dim 128, whose set-up and drain overlap each other's work
    // (bench/cuda/notes/decode.md, decode-burst-four-warps vs decode-burst-wide, 1000 sequences:
    // 0.95x the time at both head dims). Longer contexts keep the widest blocks (not measured
    // otherwise).
    const int max_warps = !widest && (four_warps || grid.max_segments == 1) ? 4 : 8;
    const int64_t warps = e.decode_tiles * base.num_kv_heads * e.decode_slots;
    const bool planted = route == AttentionRoute::kDecodeSharedExpsPlanted && share_exps(e);
    // The smallest launches (every unit in one wave of four-warp blocks): the segment kernel where
    // segments are fixed runs of at least four sub-blocks (invariant mode), else the split kernel
    // with the deepest ring that keeps one wave. H200 (bench/cuda/notes/decode-small-batches.md,
    // 2026-12-03): invariant batch 1 x 2048 keys 0.82-0.84x the split kernel's time, batch 1-4 x
    // 512 0.83-0.91x; default mode's segments of a few keys (batch 1-4 x 128-512) 1.2x, hence the
    // split kernel there.
    const bool small_tiles = !widest && !four_warps && grid.partial_rows <= 8;
    const bool whole_rounds = !base.split_count_kind && base.split_size >= cuda::kSegmentWarps * cuda::kAttnKeys;
    const bool auto_segment = small_tiles && whole_rounds && one_wave(warps, cuda::SegmentLayout<HD>::kBytes);
    const int auto_split = small_tiles && !auto_segment ? split_kernel_ring<HD>(warps) : 0;
    const bool auto_chain = !widest && !four_warps && warps < chain_kernel_below_warps<HD>();
    // The kernel that takes the decode tiles: a forced one (the route names at most one, the planted
    // route none), else the automatic choice; split, chain: that kernel's ring (0: not that kernel).
    bool segment = route == AttentionRoute::kDecodeSegment;
    int split = forced_split_ring(route), chain = forced_chain_ring(route);
    if (!planted && !segment && split == 0 && chain == 0) {
      if (auto_segment) {
        segment = true;
      } else if (auto_split > 0) {
        split = auto_split;
      } else if (auto_chain) {
        chain = cuda::kChainRingShallow;
      }
    }
    merge_overlaps = segment || split > 0 || chain > 0;
    const absl::Status st =
        planted     ? launch_decode<HD, 1, 1, cuda::kExpsSharedPlanted>(params, e, stream)
        : segment   ? launch_segment<HD>(params, e, stream)
        : split > 0 ? launch_split_ring<HD>(params, e, split, stream)
        : chain > 0 ? launch_chain_ring<HD>(params, e, chain, stream)
        : grid.partial_rows <= 8 ? launch_decode_tiles<HD, 1>(params, e, widest, max_warps, stream)
                                 : launch_decode_tiles<HD, 2>(params, e, widest, max_warps, stream);
    if (!st.ok()) return st;
  }
  if (grid.max_segments > 1) {
    // After the chain, split or segment kernel (few warps per SM) the merge is their programmatic dependent
    // (cuda_common.h, launch_after_previous): its blocks are scheduled while the decode grid
    // runs and wait on the device for it, which hides the launch between the two. After
    // attention_decode_kernel (SMs full of registers) that was slower, and the merge is an ordinary
    // launch. H200, bench/cuda/notes/checks.md (2026-12-01 ~22:25): 0.87-0.94x the time of ordinary
    // launches where the chain kernel ran (batch 1-16, 256 units), up to 1.21x on the decode kernel.
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(unsigned(base.num_kv_heads), unsigned(base.num_seqs));
    config.blockDim = dim3(unsigned(32 * grid.partial_rows));
    config.stream = stream;
    cudaLaunchAttribute overlap[1] = {cuda::after_previous_kernel()};
    config.attrs = overlap;
    config.numAttrs = merge_overlaps ? 1 : 0;
    // More than 8 segments in tiles of at most 8 rows, at most a block per SM, head_dim 128: the
    // partials loaded 32 at a time, one memory round trip where the 8-segment batches took up to
    // four one after the other. Its registers leave one block per SM, so larger launches keep the
    // 8-segment batch. H200 (bench/cuda/notes/decode-small-batches.md, 2026-12-02): head_dim 128
    // batch 1-4 x 8192-32768 0.89-0.96x the time, batch 16 unchanged; at head_dim 64 batch 4 x
    // 2048-8192 1.06-1.10x (its blocks, waiting behind the chain kernel, hold registers that
    // kernel's warps would use).
    auto merge = cuda::attention_decode_merge_kernel<HD, cuda::kMergeBatch>;
    if constexpr (HD == 128) {
      if (grid.max_segments > cuda::kMergeBatch && grid.partial_rows <= 8 &&
          int64_t(base.num_seqs) * base.num_kv_heads <= cuda::device_sm_count()) {
        merge = cuda::attention_decode_merge_kernel<HD, cuda::kMergeBatchWide>;
      }
    }
    SAMEBITS_CUDA_TRY(cudaLaunchKernelEx(&config, merge, params, grid));
    SAMEBITS_RETURN_IF_ERROR(cuda::check_launch("attention_decode_merge_kernel"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status cuda_attention(const ExecContext& ctx, const AttentionArgs& a) {
  return cuda_attention_routed(ctx, a, AttentionRoute::kAuto);
}

std::string AttentionPrefillPlan::describe() const {
  return absl::StrCat("prefill{", wgmma ? "wgmma" : "64-row", " tile_rows=", tile_rows, " threads=", threads,
                      " stages=", stages, " smem=", smem_bytes, "}");
}

AttentionPrefillPlan cuda_attention_prefill_plan(const AttentionArgs& a, AttentionRoute route) {
  return size_call(a, route).prefill;
}

std::string AttentionDecodePlan::describe() const {
  return absl::StrCat("decode{tiles=", tiles, " segments=", segments, " slots=", slots, "}");
}

AttentionDecodePlan cuda_attention_decode_plan(const AttentionArgs& a) {
  const Extents e = size_call(a, AttentionRoute::kAuto).e;
  AttentionDecodePlan p;
  if (e.grid.max_segments > 0) {
    p.tiles = e.decode_tiles * a.num_kv_heads;
    p.segments = e.grid.max_segments;
    p.slots = e.decode_slots;
  }
  return p;
}

absl::Status cuda_attention_routed(const ExecContext& ctx, const AttentionArgs& a, AttentionRoute route) {
  SAMEBITS_RETURN_IF_ERROR(check_attention_shape(a));
  if (a.head_dim != 64 && a.head_dim != 128) {
    return absl::UnimplementedError(absl::StrCat("attention: head_dim = ", a.head_dim,
                                                 " (the CUDA kernels support 64 and 128)"));
  }
  if (a.num_seqs == 0 || a.T == 0) return absl::OkStatus();
  if (a.num_seqs > 65535 || a.num_kv_heads > 65535) {
    return invalid(absl::StrCat("num_seqs = ", a.num_seqs, " and num_kv_heads = ", a.num_kv_heads,
                                " must each be at most 65535"));
  }
  if (!a.k_new || !a.v_new) {
    // Without host mirrors the device cannot tell the host which sequences read this step's keys.
    const bool may_read_new = a.plan.kind == AttentionPlan::Kind::kSplitCount && a.plan.separate_new_keys &&
                              a.T > a.num_seqs;
    if (may_read_new && (!a.host_query_start || !a.host_context_lens)) {
      return invalid(std::string("the plan reads this step's keys but ") + (a.k_new ? "v_new" : "k_new") +
                     " is null");
    }
  }
  if (a.host_query_start && a.host_context_lens) {
    SAMEBITS_RETURN_IF_ERROR(check_attention_sequences(a, a.host_query_start, a.host_context_lens, nullptr));
  }
  const CallSizing sized = size_call(a, route);
  const Extents& e = sized.e;
  const AttentionPrefillPlan& pp = sized.prefill;
  route = sized.route;
  if (e.items * a.num_kv_heads > INT32_MAX) return invalid("too many work items");

  AttnParams params{};
  params.q = a.q;
  params.k_new = a.k_new;
  params.v_new = a.v_new;
  params.k_cache = a.k_cache;
  params.v_cache = a.v_cache;
  params.query_start = a.query_start;
  params.context_lens = a.context_lens;
  params.block_tables = a.block_tables;
  params.num_seqs = a.num_seqs;
  params.T = a.T;
  params.max_blocks_per_seq = a.max_blocks_per_seq;
  params.num_q_heads = a.num_q_heads;
  params.num_kv_heads = a.num_kv_heads;
  params.block_size = a.block_size;
  params.num_blocks = a.num_blocks;
  // Scores in log2 units, for attn_exp2: one host rounding, the same float in every kernel.
  params.scale = a.scale * fixed_math_detail::kLog2e;
  params.split_count_kind = a.plan.kind == AttentionPlan::Kind::kSplitCount ? 1 : 0;
  params.split_size = a.plan.split_size;
  params.split_count = a.plan.split_count;
  params.separate_new_keys = a.plan.separate_new_keys ? 1 : 0;
  params.out = a.out;
  params.mailbox = cuda::device_error_mailbox();
  cudaStream_t stream = cuda::stream_of(ctx);
  if (a.head_dim == 64) return launch<64>(params, e, route, pp, stream);
  return launch<128>(params, e, route, pp, stream);
}

}  // namespace samebits
