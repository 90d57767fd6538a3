// Prefill attention on Hopper (sm_90a): the 64-row kernel's arithmetic (kernels/cuda/attention.cu
// states the order of every reduction) on wgmma, warp-specialised. One block per work item of up
// to 128 rows (attention_worklist.cuh, find_work_item with kPrefillTileRows) and kv head; rows are
// (query, head in group) pairs, query-major, as in the 64-row kernel.
//   - warpgroup 2 (producer, 56 registers after setmaxnreg) copies the K and V rows of each 64-key
//     sub-block (through the block table, or this step's k_new / v_new; zeros beyond the context,
//     as the 64-row kernel's copies) by cp.async into a ring of stages (full / empty mbarriers), in
//     the 128-byte swizzled layout wgmma reads; cp.async because paged blocks of 8..256 rows, a
//     context ending inside a block and two key sources do not map onto one TMA box;
//   - warpgroups 0 and 1 (consumers, 224 registers) own 64 rows each: S = Q K^T as wgmma
//     m64n64k16 steps over the head dim in increasing order from +0 (Q from registers; the k16
//     step gives the bits of mma.sync m16n8k16: the invariant matmul's tests compare the two),
//     then the 64-row kernel's
//     softmax (the wgmma accumulator gives each row to a quad of lanes as mma.sync does):
//     attend_softmax itself where a row of the warp has no key in the sub-block, elsewhere its
//     roundings in its order without per-row branches, masking only sub-blocks where a row's
//     range begins or ends (interior_max, interior_exp_sum); o = o * alpha, o += bf16(P) V as four
//     wgmma m64nHDk16 steps with P from registers, keys in increasing order; segment partials
//     folded in index order (fold_scales) into totals kept in shared memory between segments; the
//     outputs bf16(total / l) by OutputRow (the row's reciprocal once, __fdiv_rn's bits).
// Both warpgroups visit the same sub-blocks (the hull of the tile's key ranges per segment); a
// row outside a sub-block's keys gets alpha = 1 and P = 0, as in the 64-row kernel's warps. A
// segment's leading sub-blocks that every row sees whole are visited in a loop of their own
// without the masked paths (walk's interior runs: the code of paths a loop never takes cost it
// 1.1-1.25x, notes/prefill-time.md 2026-12-06); the split-count instantiation at head_dim 128 finds
// the registers for them by reading the tile's values from a shared-memory copy. Two
// instantiations per head dim: for a fixed split size (every invariant plan; a segment's ranges are
// one multiply and a min, fixed_split_range) and for the others (split counts, separate new keys).
// Overlap: the two warpgroups run unsynchronised (only the ring's mbarriers order them), so one's
// softmax and segment fold run while the other's products do; within a warpgroup the next
// sub-block of the segment has its scores issued (into a second buffer) before this one's
// exponentials, and the P V products retire under them. Taking turns to issue the scores' wgmma
// (named barriers, as FA3's ping-pong does) measured 1.01-1.035x the time on the H200
// (bench/cuda/notes/decode-small-batches.md, 2026-12-03 ~09:20): a warpgroup folding at a segment
// end held the other at its next turn.
// Three other orders keep the bits and measured slower (notes/prefill.md, 2026-12-03 ~20:26-20:57):
// sub-blocks in pairs with both softmaxes side by side and nothing in flight under them (1.21-1.35x
// the time; with the P V products in flight they spill at head_dim 128), the max phase under the
// previous P V products, retiring the scores alone with wait_group 1 (1.03-1.08x), and two score
// buffers in turn instead of a copy of the scores out of the accumulators (1.01-1.08x: fewer
// instructions, more barrier and fetch stalls); the scores now leave the accumulators as the
// exponentials' arguments (interior_exp_arguments), the multiply-adds the softmax needs anyway,
// instead of a copy. The producer's cp.async copies measured against two other forms
// (notes/prefill.md, 2026-12-03 ~22:10-23:15): a lane per key row, 32 bytes of 16 rows per copy
// (1.02-1.31x the time), and bulk tensor copies: 0.95-0.99x where a sub-block's 64 rows are
// consecutive, 1.04-1.11x as one box per 16-slot page, 1.13-1.19x for pages apart with cp.async
// beside them (two passes unrolled, or it spills).
#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/cuda/attention_prefill.h"
#include "kernels/cuda/attention_worklist.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/linear_common.cuh"
#include "kernels/cuda/sm90a/prefill_interior_run.h"
#include "kernels/cuda/sm90a/prefill_softmax.cuh"
#include "kernels/cuda/sm90a/tma_ops.cuh"
#include "kernels/cuda/sm90a/wgmma_ops.cuh"

namespace samebits::cuda {
namespace {

constexpr int kConsumerThreads = 256;
constexpr int kThreads = kConsumerThreads + 128;
// Registers per thread after setmaxnreg: the consumers hold o (HD / 2 floats), two score buffers
// (32 each), P (16) and Q (HD / 4) besides the row state (at head_dim 128 at the limit, the
// fixed split's interior runs included: the build fails on any spill). The block is launched with
// 168 per thread (__launch_bounds__(384, 1)); setmaxnreg.inc waits until the producer's
// setmaxnreg.dec has released enough of them, so the three must add up to 3 x 168 (more would
// wait forever).
constexpr int kLaunchRegs = 168, kProducerRegs = 56, kConsumerRegs = 224;
static_assert(kProducerRegs + 2 * kConsumerRegs == 3 * kLaunchRegs, "setmaxnreg stays within the launch's registers");

// Shared memory: two Q tiles (one per consumer warpgroup), then the K/V ring, then the mbarriers.
// A tile is 64 rows x HD values as HD / 64 regions of [64 rows][64 values] (8 KiB each, 128-byte
// swizzled rows), the layout of wgmma's K-major operands and of the MN-major V operand alike.
template <int HD>
struct PrefillLayout {
  static constexpr int kTileBytes = 64 * HD * 2;
  static constexpr int kStages = prefill_stages(HD);
  static constexpr int kRing = 2 * kTileBytes;
  static constexpr int kStageBytes = 2 * kTileBytes;  // K, then V
  // The consumers' running totals over segments (ot): HD / 2 floats per consumer thread, as
  // HD / 8 groups of 4 (one n8 tile's accumulator entries), group j of thread i at [j][i]: one
  // 16-byte access per group, eight consecutive threads on 128 consecutive bytes (no bank
  // conflict). Here, to leave registers for two score buffers; read and written once per segment.
  static constexpr int kTotals = kRing + kStages * kStageBytes;
  static constexpr int kBars = kTotals + HD / 2 * kConsumerThreads * 4;
  static_assert(kTotals % 16 == 0, "the totals are read and written 16 bytes at a time");
  static constexpr int kBytes = kBars + 16 * kStages + 1024;  // + room to align the base to 1024
  // Ring stage and mbarrier phase parity of sub-block number i (unsigned, a power-of-two stage
  // count: a mask and a shift).
  static_assert((kStages & (kStages - 1)) == 0, "stage and parity by mask and shift");
  static __device__ __forceinline__ uint32_t stage(int i) { return uint32_t(i) % kStages; }
  static __device__ __forceinline__ uint32_t parity(int i) { return (uint32_t(i) / kStages) & 1u; }
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Byte offset of 16-byte chunk `chunk` (of HD / 8) of row `row` in a tile.
__device__ __forceinline__ uint32_t tile_offset(int row, int chunk) {
  return uint32_t((chunk >> 3) * 8192) + swizzled(row, chunk & 7, 8);
}

// Positions and offsets in 32 bits: context_lens and query_start are int32 (64-bit fields took the
// registers that the split-count walk at head_dim 128 needs for its interior runs).
struct TileInfo {
  int s, nrows, row0, nseg, group;
  int qs, cached, context, p_min, p_max;
  bool reads_new;
  const int32_t* table;
};

__device__ __forceinline__ TileInfo tile_info(const AttnParams& P, const AttnItem& it) {
  TileInfo t;
  t.s = it.seq;
  t.nrows = it.nrows;
  t.row0 = it.row0;
  t.nseg = it.nseg;
  t.group = P.num_q_heads / P.num_kv_heads;
  t.qs = P.query_start[t.s];
  const int64_t q_len = P.query_start[t.s + 1] - t.qs;
  t.context = P.context_lens[t.s];
  t.cached = t.context - q_len;
  t.reads_new = reads_new_keys(P, q_len);
  t.table = P.block_tables + int64_t(t.s) * P.max_blocks_per_seq;
  // (Divisions, not quotient_nonneg's shift: with the shift here the head_dim 64 kernel took 1.01-1.02x
  // the time over cached keys on the H200, bench/cuda/notes/prefill.md 2026-12-04; the rows' own
  // quotients below take the shift.)
  t.p_min = t.cached + t.row0 / t.group;
  t.p_max = t.cached + (t.row0 + t.nrows - 1) / t.group;
  return t;
}

// segment_range's range under a fixed split size (every invariant plan) for a query that sees
// `visible` >= 0 keys: [c * split, min(visible, c * split + split)), empty for 0. The kernel's
// fixed-split instantiation (kFixedSplit) takes it without segment_range's tests of the plan's
// kind, at each segment's start, and compiles none of the other plans' paths (H200: invariant
// prefill 0.89-0.94x the time; the same ranges in the one general instantiation made default mode
// 1.01-1.04x slower: bench/cuda/notes/prefill.md, 2026-12-04). (segment_range keeps its own two
// lines for it: calling this there changed the decode kernels' machine code.)
__device__ __forceinline__ SegRange fixed_split_range(int split, int64_t visible, int c) {
  const int64_t b = int64_t(c) * split;
  return SegRange{b, min(visible, b + split), false};
}

// The keys of segment c that any row of the tile reads: each kind's ranges are empty for a prefix
// of the positions and their ends never decrease with the position, their begins neither among the
// non-empty ones (kernels/plan.h), so the hull runs from the first row with keys in c to p_max's
// end. Sub-blocks of the hull that hold no key of a row leave that row as it was. Under a fixed split
// every non-empty range of segment c begins at its first key: the hull is p_max's range.
template <bool kFixedSplit>
__device__ __forceinline__ SegRange segment_hull(const AttnParams& P, const TileInfo& t, int c) {
  if constexpr (kFixedSplit) return fixed_split_range(P.split_size, t.p_max + 1, c);
  const SegRange hi = segment_range(P, t.reads_new, t.cached, t.p_max, c);
  if (hi.begin >= hi.end) return hi;
  SegRange lo = segment_range(P, t.reads_new, t.cached, t.p_min, c);
  if (lo.begin >= lo.end) lo = segment_range(P, t.reads_new, t.cached, max(t.p_min, c), c);
  const int64_t begin = lo.begin < lo.end ? min(lo.begin, hi.begin) : hi.begin;
  return SegRange{begin, hi.end, hi.from_new};
}

// The sub-blocks of segment c inside every row's key range, for a warpgroup whose rows are all in
// the tile (else none), and p_min's range non-empty (else none): interior_run_end_of
// (prefill_interior_run.h, checked on the host against every row's range) from the end of p_min's
// range and the begin of p_max's. Each warp would take the interior softmax there anyway: the
// walk visits them in a loop of their own whose visit has no other path. (A never-taken masked
// path in the prefill-ceiling rows' visit loop cost it 1.18-1.25x the time at head_dim 128:
// notes/prefill-time.md, 2026-12-06.) Under a fixed split every non-empty range of c begins at
// c * split and p_min's ends at min(p_min + 1, c * split + split): p_min + 1 (pmin1) is all it
// needs. (Key positions fit 32 bits: context_lens are int32.)
static_assert(kInteriorRunKeys == kAttnKeys, "the interior run counts the walk's sub-blocks");
template <bool kFixedSplit>
__device__ __forceinline__ int interior_run_end(const AttnParams& P, const TileInfo& t, int wg, int pmin1, int c,
                                                int first, int last) {
  if (64 * wg + 63 >= t.nrows) return first;
  if constexpr (kFixedSplit) {
    const int64_t begin = int64_t(c) * P.split_size;
    if (pmin1 <= begin) return first;
    return interior_run_end_of(min(int64_t(pmin1), begin + P.split_size), begin, first, last);
  } else {
    const SegRange lo = segment_range(P, t.reads_new, t.cached, t.p_min, c);
    if (lo.begin >= lo.end) return first;
    const SegRange hi = segment_range(P, t.reads_new, t.cached, t.p_max, c);
    return interior_run_end_of(lo.end, hi.begin, first, last);
  }
}

// Producer and consumers walk the same sequence of segments and sub-blocks: start(c) at each
// segment, visit(sb0, from_new, last, interior) per sub-block of its hull, finish() at its end. Two
// forms, the same sequence. Without kInteriorRuns (the producer) one loop, `last` a run-time bool
// (the hull's last sub-block), interior std::false_type. With kInteriorRuns (the consumers):
// enter() first (the segment's first scores), then the interior run (interior_run_end for
// warpgroup wg, from the hull's first sub-block) in a loop of its own (interior std::true_type:
// the visit's masked paths compiled out), the rest in a second loop and the last sub-block apart
// (`last` std::true_type / std::false_type: no test of it in the loops, which issue the next scores
// unconditionally). settle() (wgmma_wait<0>, the scores' registers pinned) runs on both paths before
// they meet at the second loop: no wgmma is then in flight where the compiler copies registers from
// one path's to the other's (with the scores in flight those copies made ptxas serialise every
// wgmma, C7514); the second loop's first visit waits for the same products and scores anyway.

template <bool kFixedSplit, bool kInteriorRuns, typename Start, typename Enter, typename Visit, typename Settle,
          typename Finish>
__device__ __forceinline__ void walk(const AttnParams& P, const TileInfo& t, int wg, int pmin1, Start start,
                                     Enter enter, Visit visit, Settle settle, Finish finish) {
  for (int c = 0; c < t.nseg; ++c) {
    start(c);
    const SegRange h = segment_hull<kFixedSplit>(P, t, c);
    if constexpr (kInteriorRuns) {
      if (h.begin < h.end) {
        const int first = int(h.begin) / kAttnKeys * kAttnKeys, last = int(h.end - 1) / kAttnKeys * kAttnKeys;
        const int i1 = interior_run_end<kFixedSplit>(P, t, wg, pmin1, c, first, last);
        int sb0 = first;
        // (enter() and settle() on each path: where the paths met with the scores in flight, their
        // registers were copied from one path's to the other's, C7514)
        if (i1 > first) {
          enter();
          for (; sb0 < i1; sb0 += kAttnKeys) visit(sb0, h.from_new, std::false_type{}, std::true_type{});
          settle();
        } else {
          enter();
          settle();
        }
        for (; sb0 < last; sb0 += kAttnKeys) visit(sb0, h.from_new, std::false_type{}, std::false_type{});
        visit(last, h.from_new, std::true_type{}, std::false_type{});
      }
    } else {
      for (int64_t sb0 = h.begin < h.end ? h.begin / kAttnKeys * kAttnKeys : h.end; sb0 < h.end; sb0 += kAttnKeys) {
        visit(sb0, h.from_new, sb0 + kAttnKeys >= h.end, std::false_type{});
      }
    }
    finish();
  }
}

template <int HD, bool kFixedSplit>
__device__ __forceinline__ void produce(const AttnParams& P, const TileInfo& t, int g, uint32_t ring, uint32_t full,
                                        uint32_t empty) {
  using L = PrefillLayout<HD>;
  constexpr int CH = HD / 8, kRowsPerPass = 32 / CH, kPasses = 16 / kRowsPerPass;
  // Sub-blocks whose copies may be in flight before the oldest is waited for and handed over: two,
  // so that a sub-block goes to the consumers once the next one's copies are issued. With all stages
  // but one (3 at head_dim 128), the hand-over waited for a stage that the consumers release only
  // just before they need the sub-block: their full-barrier waits retried ~15 times each, and the
  // kernel took 1.03-1.05x the time (H200, bench/cuda/notes/prefill.md).
  constexpr int kInFlight = 2;
  const int lane = threadIdx.x & 31, ch = lane % CH, warp = (threadIdx.x / 32) & 3;
  int n = 0, handed = 0;
  auto hand_over = [&] {  // this lane's copies of sub-block `handed` have landed: to wgmma
    fence_proxy_async();
    mbar_arrive(full + 8 * L::stage(handed));
    ++handed;
  };
  walk<kFixedSplit, false>(
      P, t, 0, 0, [](int) {}, [] {},
      [&](int64_t sb0, bool from_new, auto, auto) {
        const int s = L::stage(n);
        // Warp w copies keys sb0 + 16w .. + 15 (lane l and l + 16 resolve key 16w + l % 16; the
        // block-table read overlaps the wait for the stage), each pass kRowsPerPass rows of
        // 16-byte chunks.
        const KeyRow mine =
            resolve_key_row(P, t.table, t.s, g, HD, t.qs, t.cached, t.context, from_new, sb0 + 16 * warp + (lane & 15));
        mbar_wait(empty + 8 * s, L::parity(n) ^ 1u);
        const uint32_t k_st = ring + s * L::kStageBytes, v_st = k_st + L::kTileBytes;
#pragma unroll
        for (int i = 0; i < kPasses; ++i) {
          const int r = i * kRowsPerPass + lane / CH, row = 16 * warp + r;
          const long long off = __shfl_sync(0xffffffffu, (long long)mine.off, r);
          const int where = __shfl_sync(0xffffffffu, mine.where, r);
          const uint32_t dst = tile_offset(row, ch);
          cp_async_16(k_st + dst, (where == 2 ? P.k_new : P.k_cache) + off + ch * 8, where != 0);
          cp_async_16(v_st + dst, (where == 2 ? P.v_new : P.v_cache) + off + ch * 8, where != 0);
        }
        cp_async_commit();
        ++n;
        if (n - handed == kInFlight) {  // the oldest sub-block in flight, while the others fly
          cp_async_wait<kInFlight - 1>();
          hand_over();
        }
      },
      [] {}, [] {});
  cp_async_wait<0>();
  while (handed < n) hand_over();
}

template <int HD, bool kPlanted, bool kFixedSplit>
__device__ __forceinline__ void consume(const AttnParams& P, const TileInfo& t_regs, const AttnItem* item, int g,
                                        uint32_t base, float* totals, uint32_t full, uint32_t empty) {
  using L = PrefillLayout<HD>;
  constexpr int CH = HD / 8, NTD = HD / 8;
  // The consumers' walk has interior runs (its loop without the masked paths) in every
  // instantiation. The run's visit needs its exponentials' arguments pinned above the next scores'
  // issue (unpinned, ptxas serialised every wgmma, C7514); at head_dim 128 that costs ~10
  // registers. Under a fixed split they come from keeping the rows' positions in one register each
  // for the item (pos1) and reading the outputs' tile values again from the work item (below).
  // The split-count instantiation at 128 (kTileInSmem) needs more (pos1 alone spilled 32-40
  // bytes): it reads the tile's values from a copy in shared memory, written by each warpgroup's
  // first thread before the Q barrier, and recomputes the positions at each segment's start.
  // Time / the one-loop walk's, H100 (notes/prefill-time.md 2026-12-06 ~11:45): default mode at
  // head_dim 128 0.92-0.97 at chunks >= 1024, 1.02 at chunk 256 and in mixed steps with a 512-token
  // chunk. Invariant mode at 128 with runs: 0.94-0.97x over cached keys (~09:10).
  constexpr bool kTileInSmem = HD == 128 && !kFixedSplit;
  constexpr bool kPositionsKept = !kTileInSmem;
  // wg through lane 0: the compiler then knows it is the same in the whole warp and keeps what is
  // computed from it (the shared-memory descriptors below) in uniform registers, as wgmma reads them.
  const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid / 128, 0), lane = tid & 31, warp = (tid / 32) & 3;
  const uint32_t q_s = base + wg * L::kTileBytes, ring = base + L::kRing;
  const uint64_t k_desc0 = smem_desc(ring), v_desc0 = smem_desc_mn(ring + L::kTileBytes, 8192);
  // Ring stage of sub-block number i through lane 0 too, for the descriptors.
  auto stage_of = [](int i) { return int(__shfl_sync(0xffffffffu, L::stage(i), 0)); };

  // This warpgroup's Q rows (zeros beyond nrows).
  for (int c = tid % 128; c < 64 * CH; c += 128) {
    const int r = c / CH, ch = c % CH, row = 64 * wg + r;
    const bool valid = row < t_regs.nrows;
    const bf16* src = P.q;
    if (valid) {
      src = P.q + query_row_offset(P, t_regs.qs, g, t_regs.group, t_regs.row0 + row, HD) + ch * 8;
    }
    cp_async_16(q_s + tile_offset(r, ch), src, valid);
  }
  // (kTileInSmem) The tile's values for the walk, one copy per warpgroup, visible after the Q
  // barrier below; t_regs serves the Q copies above.
  __shared__ TileInfo tile_copy[2];
  if constexpr (kTileInSmem) {
    if (tid % 128 == 0) tile_copy[wg] = t_regs;
  }
  cp_async_commit();
  cp_async_wait<0>();
  fence_proxy_async();
  named_barrier_sync(1 + wg, 128);
  const TileInfo& t = kTileInSmem ? tile_copy[wg] : t_regs;
  // Q in registers for the scores' products (mma.sync's A fragments, by ldmatrix): read from
  // shared memory once per item instead of by every sub-block's wgmma (H200: head_dim 64 over
  // cached keys 0.96-0.998x the time in two calls, bench/cuda/notes/prefill.md 2026-12-04). At
  // head_dim 128 their 32 registers fit because the row positions are not carried through the walk
  // and sc_next is redefined at each segment's start (both below; notes/prefill-time.md 2026-12-04
  // ~23:15). ptxas must keep these registers for the whole item: a form without the scores issued
  // ahead (measured, not kept) came out with them reused by the softmax after the first sub-block,
  // wrong outputs that the gpu tests caught.
  uint32_t qf[HD / 16][4];
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    ldmatrix_x4(qf[kk], q_s + tile_offset(warp * 16 + (lane & 15), 2 * kk + (lane >> 4)));  // as attend_score_keys
  }

  // The two rows' query positions, computed at each segment's start (position) instead of kept
  // in four registers through the walk (as 64-bit values): ptxas needed ~32 registers fewer at
  // head_dim 128 for it (with sc_next's redefinition), which is Q's room. Where the walk has
  // interior runs they are kept after all, + 1 (0 beyond the tile) in one 32-bit register each
  // (pos1): recomputing them kept the tile's cached length, first row and group live through the
  // walk, which the runs' pinned arguments need at head_dim 128. The split-count instantiation at
  // 128 recomputes them from the tile's shared-memory copy (kTileInSmem), whose values take no
  // registers through the walk.
  // tile_row(h): the item's row (of up to 128) that this lane's row half h holds.
  auto tile_row = [&](int h) { return 64 * wg + warp * 16 + (lane >> 2) + h * 8; };
  bool in_tile[2];
  auto position = [&](int h) -> int64_t {
    const int r = tile_row(h);
    return r < t.nrows ? t.cached + quotient_nonneg(t.row0 + r, t.group) : -1;
  };
#pragma unroll
  for (int h = 0; h < 2; ++h) in_tile[h] = tile_row(h) < t.nrows;
  int pos1[2];
  if constexpr (kPositionsKept) {
#pragma unroll
    for (int h = 0; h < 2; ++h) pos1[h] = int(position(h)) + 1;
  }
  float o[NTD][4];
  float tot_m[2] = {0.0f, 0.0f}, tot_l[2] = {0.0f, 0.0f}, m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
  bool has_total[2] = {false, false}, first[2] = {true, true};  // (set again at each segment's start)
  SegRange rg[2];
  // The totals in shared memory: written at the end of every segment but the last, read by the
  // next segment's fold (the first segment's totals are formed in registers).
  auto total = [&](int nt) -> float4& { return reinterpret_cast<float4*>(totals)[nt * kConsumerThreads + tid]; };
  int n = 0, pending_stage = -1;
  uint32_t a[4][4];  // P (bf16 pairs), the A operand of the P V products: read until they retire
  // After wgmma_wait: o is final for the last issued P V products; their stage goes back to the
  // producer.
  auto retire_values = [&] {
    if (pending_stage < 0) return;
    float(&of)[HD / 2] = reinterpret_cast<float(&)[HD / 2]>(o);
#pragma unroll
    for (int i = 0; i < HD / 2; ++i) asm volatile("" : "+f"(of[i])::"memory");
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[kk][i])::"memory");
    mbar_arrive(empty + 8 * pending_stage);
    pending_stage = -1;
  };
  // S = Q K^T of sub-block number i into sc, issued now, left in flight.
  // (Its first k16 step overwrites the accumulators: sc_next's values are never read, they are
  // defined at each segment's start for the compiler's sake. A second buffer instead of sc
  // below, the sub-blocks alternating between the two, spilled at head_dim 128: the softmax cannot
  // work in a buffer that a wgmma writes (ptxas serialises every wgmma, C7515), so it held a third.)
  float sc_next[8][4];
  auto issue_scores = [&](float(&sc)[8][4], int i) {
    const int s = stage_of(i);
    const uint64_t k_desc = desc_advance(k_desc0, s * L::kStageBytes);
    float(&scf)[32] = reinterpret_cast<float(&)[32]>(sc);
    mbar_wait(full + 8 * s, L::parity(i));
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < HD / 16; ++step) {
      const int kk = kPlanted ? HD / 16 - 1 - step : step;
      const uint32_t off = (kk >> 2) * 8192 + (kk & 3) * 32;
      // (a zero score's sign changes no bit: scores enter as maxima and x - m)
      if (step == 0) {
        wgmma_m64k16_rs</*kTransB=*/false, /*kAccumulate=*/false>(scf, qf[kk], desc_advance(k_desc, off));
      } else {
        wgmma_m64k16_rs</*kTransB=*/false>(scf, qf[kk], desc_advance(k_desc, off));
      }
    }
    wgmma_commit();
  };
  // The outputs bf16(total / l), from the last fold's registers. A row with a value outside
  // OutputRow's range is written again by __fdiv_rn (rare: a loop, not unrolled) from the totals,
  // stored to shared memory for it (a dynamic index into registers would go to local memory).
  // Where the walk has interior runs, the tile's query start, group and first row are read again
  // from the work item in shared memory for the outputs: TileInfo's copies would stay live through
  // the walk for this one use.
  auto output_offset = [&](int h) -> int64_t {
    if constexpr (kPositionsKept) {
      return query_row_offset(P, P.query_start[item->seq], g, P.num_q_heads / P.num_kv_heads,
                              item->row0 + tile_row(h), HD);
    } else {
      return query_row_offset(P, t.qs, g, t.group, t.row0 + tile_row(h), HD);
    }
  };
  auto write_outputs = [&](const float(&ot)[NTD][4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!in_tile[h] || !has_total[h]) continue;
      bf16* dst = P.out + output_offset(h);
      OutputRow row(tot_l[h]);
#pragma unroll
      for (int nt = 0; nt < NTD; ++nt) {
        const uint32_t word = row.pair(ot[nt][2 * h], ot[nt][2 * h + 1], nt);
        *reinterpret_cast<uint32_t*>(dst + nt * 8 + (lane & 3) * 2) = word;
      }
      if (!row.in_range()) {
#pragma unroll
        for (int nt = 0; nt < NTD; ++nt) total(nt) = make_float4(ot[nt][0], ot[nt][1], ot[nt][2], ot[nt][3]);
#pragma unroll 1
        for (int nt = 0; nt < NTD; ++nt) {
          const float4 v = total(nt);
          *reinterpret_cast<uint32_t*>(dst + nt * 8 + (lane & 3) * 2) =
              attention_output_pair(h == 0 ? v.x : v.z, h == 0 ? v.y : v.w, tot_l[h]);
        }
      }
    }
  };
  bool first_segment = true, last_segment = false;
  walk<kFixedSplit, /*kInteriorRuns=*/true>(
      P, t, wg, int(t.p_min) + 1,
      [&](int c) {
        first_segment = c == 0;
        last_segment = c == t.nseg - 1;
        // sc_next redefined (never read: the segment's first scores overwrite it). Without this its
        // 32 registers stay live through the previous segment's fold: the compiler does not see
        // that a segment's last sub-block (no scores issued ahead) is followed by a first one
        // (scores issued at its start). (Redefining it on the last sub-block's path instead made
        // ptxas serialise every wgmma, C7515: notes/prefill-time.md 2026-12-04 ~23:15.)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) asm volatile("mov.b32 %0, 0;" : "=f"(sc_next[nt][e]));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          // (a row beyond the tile, position -1, gets an empty range either way)
          if constexpr (kFixedSplit) {  // (positions kept: kTileInSmem is split counts only)
            rg[h] = fixed_split_range(P.split_size, pos1[h], c);
          } else {
            rg[h] = segment_range(P, t.reads_new, t.cached, kPositionsKept ? pos1[h] - 1 : position(h), c);
          }
          m[h] = l[h] = 0.0f;
          first[h] = true;
        }
        // o zeroed by volatile moves, which stay before the segment's first scores' issue (enter):
        // plain stores may be moved past it, and an accumulator defined while a wgmma is in flight
        // makes ptxas serialise every wgmma (C7515).
#pragma unroll
        for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) asm volatile("mov.b32 %0, 0;" : "=f"(o[nt][e]));
      },
      [&] { issue_scores(sc_next, n); },  // the segment's first scores (the others: a visit ahead)
      [&](int64_t sb0, bool, auto last, auto interior_only) {
        const int s = stage_of(n);
        const uint64_t v_desc = desc_advance(v_desc0, s * L::kStageBytes);
        // active: the row has keys in the sub-block (max(begin, sb0) < min(end, sb0 + 64)); inside:
        // all of them. In 32 bits: key positions are below 2^31 (context_lens are int32) and
        // ranges are >= 0, so begin - 64 and end - 64 do not wrap (half the instructions of the
        // 64-bit compares, which take two each).
        // (In an interior run every row has all the sub-block's keys: no test.)
        constexpr bool kInteriorOnly = decltype(interior_only)::value;
        const int j = int(sb0);
        bool active[2], inside = true;
        if constexpr (kInteriorOnly) {
          active[0] = active[1] = true;
        } else {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int b = int(rg[h].begin), e = int(rg[h].end);
            active[h] = b < e && j < e && j > b - kAttnKeys;
            inside = inside && b <= j && j <= e - kAttnKeys;
          }
        }
        // This sub-block's scores: issued under the previous sub-block's softmax (into sc_next),
        // or at the segment's start (enter). Their wait also retires the previous P V products,
        // whose stage is released.
        wgmma_wait<0>();
        // (The scores are read only after the wait: the compiler sees them defined here.)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(sc_next[nt][e])::"memory");
        retire_values();
        // The next sub-block's scores (same segment) are issued once o is rescaled (ptxas serialises
        // the wgmma if o changes while they are in flight), and run under this one's exponentials.
        const bool was_first[2] = {first[0], first[1]};
        // interior: no score of the warp is masked; every_row: each row has keys here (masked).
        const bool interior = kInteriorOnly || __all_sync(0xffffffffu, inside);
        const bool every_row = interior || __all_sync(0xffffffffu, active[0] && active[1]);
        // sc: the scores out of the accumulators, which the next sub-block's scores are issued
        // into below: the exponentials' arguments (interior_exp_arguments), or a copy that
        // attend_softmax turns into P.
        float alpha[2], sc[8][4];
        InteriorMax r;
        if (interior) {
          r = interior_max(P.scale, sc_next, alpha, m, first);
          interior_exp_arguments(r, sc_next, sc);
          if constexpr (kInteriorOnly) {
            // The arguments formed here, before the next scores are issued into sc_next: in the
            // general visit the branch to the masked paths keeps them above that issue; without
            // it their multiply-adds sank below it (reading accumulators in flight: C7514).
#pragma unroll
            for (int nt = 0; nt < 8; ++nt)
#pragma unroll
              for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(sc[nt][e]));
          }
        } else if (every_row) {
          mask_outside_ranges(sb0, rg, sc_next, sc);
          r = interior_max(P.scale, sc, alpha, m, first);
          interior_exp_arguments(r, sc, sc);
        } else {
#pragma unroll
          for (int nt = 0; nt < 8; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) sc[nt][e] = sc_next[nt][e];
          attend_softmax<2>(sb0, rg, active, P.scale, sc, alpha, m, l, first);
        }
        // o = o * alpha, skipped where it changes no value in the warp: alpha = 1, or the row's first
        // sub-block of the segment (o still +0: +0 * 0 = +0).
        const bool unchanged = (alpha[0] == 1.0f || was_first[0]) && (alpha[1] == 1.0f || was_first[1]);
        if (!__all_sync(0xffffffffu, unchanged)) {
#pragma unroll
          for (int nt = 0; nt < NTD; ++nt) {
            o[nt][0] = o[nt][0] * alpha[0];
            o[nt][1] = o[nt][1] * alpha[0];
            o[nt][2] = o[nt][2] * alpha[1];
            o[nt][3] = o[nt][3] * alpha[1];
          }
        }
        if constexpr (!decltype(last)::value) issue_scores(sc_next, n + 1);
        if (every_row) interior_exp_sum(r, sc, alpha, m, l, first);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          a[kk][0] = pack_bf16x2(sc[2 * kk][0], sc[2 * kk][1]);
          a[kk][1] = pack_bf16x2(sc[2 * kk][2], sc[2 * kk][3]);
          a[kk][2] = pack_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
          a[kk][3] = pack_bf16x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
        }
        float(&of)[HD / 2] = reinterpret_cast<float(&)[HD / 2]>(o);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) wgmma_m64k16_rs</*kTransB=*/true>(of, a[kk], desc_advance(v_desc, kk * 2048));
        wgmma_commit();
        pending_stage = s;
        ++n;
      },
      [&] {  // (walk's settle)
        wgmma_wait<0>();
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(sc_next[nt][e])::"memory");
      },
      [&] {  // the segment's partial, folded into the row's total in segment order
        wgmma_wait<0>();
        retire_values();
        float ot[NTD][4];
        const bool folds[2] = {in_tile[0] && !first[0], in_tile[1] && !first[1]};
        fold_segment_partial<NTD>(first_segment, folds, o, m, l, reinterpret_cast<const float4*>(totals) + tid,
                                  kConsumerThreads, ot, tot_m, tot_l, has_total);
        // The last segment's totals go to the outputs from registers (block-uniform: every thread
        // walks the item's segments), the others back to shared memory.
        if (last_segment) {
          write_outputs(ot);
          return;
        }
#pragma unroll
        for (int nt = 0; nt < NTD; ++nt) total(nt) = make_float4(ot[nt][0], ot[nt][1], ot[nt][2], ot[nt][3]);
      });

}

#endif

// kFixedSplit: the plan is a fixed split size (every invariant plan), known on the host.
template <int HD, bool kPlanted, bool kFixedSplit>
__global__ void __launch_bounds__(kThreads, 1) attention_prefill_kernel(AttnParams P) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = PrefillLayout<HD>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t full = base + L::kBars, empty = full + 8 * L::kStages;
  // The ring's barriers, the block's item and its tile are set up before the wait for the previous
  // kernel (the item and tile come from the layout, which the host wrote: cuda_common.h).
  if (threadIdx.x == 0) {
    for (int s = 0; s < L::kStages; ++s) {
      mbar_init(full + 8 * s, 128);                // every producer thread, after its copies landed
      mbar_init(empty + 8 * s, kConsumerThreads);  // every consumer thread, its wgmma retired
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  // Block = item * num_kv_heads + kv head, as in the 64-row kernel (find_work_item's barriers
  // also order the barriers' set-up before their use).
  const int item = int(blockIdx.x) / P.num_kv_heads, g = int(blockIdx.x) % P.num_kv_heads;
  const AttnItem* found = find_work_item_or_report<kThreads, kPrefillTileRows>(P, item);
  if (found == nullptr) return;
  wait_for_previous_kernel();
  if (reports_attention_layout()) report_attention_layout(P, kThreads);
  const TileInfo t = tile_info(P, *found);
  if (threadIdx.x >= kConsumerThreads) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    produce<HD, kFixedSplit>(P, t, g, base + L::kRing, full, empty);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    float* totals = reinterpret_cast<float*>(smem_raw + (base - smem_addr(smem_raw)) + L::kTotals);
    consume<HD, kPlanted, kFixedSplit>(P, t, found, g, base, totals, full, empty);
  }
#endif
}

template <int HD, bool kPlanted, bool kFixedSplit>
absl::Status launch(const AttnParams& params, int64_t items, cudaStream_t stream) {
  using L = PrefillLayout<HD>;
  static bool smem_set = false;
  if (!smem_set) {
    SAMEBITS_CUDA_TRY(cudaFuncSetAttribute(attention_prefill_kernel<HD, kPlanted, kFixedSplit>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, L::kBytes));
    smem_set = true;
  }
  return launch_after_previous("attention_prefill_kernel", attention_prefill_kernel<HD, kPlanted, kFixedSplit>,
                               dim3(unsigned(items * params.num_kv_heads)), dim3(kThreads), L::kBytes, stream, params);
}

// The fixed-split instantiation wherever the plan is a fixed split size, planted or not.
template <int HD>
absl::Status launch_for_plan(const AttnParams& params, int64_t items, bool planted, cudaStream_t stream) {
  if (!params.split_count_kind) {
    return planted ? launch<HD, true, true>(params, items, stream) : launch<HD, false, true>(params, items, stream);
  }
  return planted ? launch<HD, true, false>(params, items, stream) : launch<HD, false, false>(params, items, stream);
}

}  // namespace

int prefill_smem_bytes(int head_dim) {
  return head_dim == 64 ? PrefillLayout<64>::kBytes : PrefillLayout<128>::kBytes;
}
int prefill_threads() { return kThreads; }

absl::Status launch_attention_prefill(const AttnParams& params, int64_t items, int head_dim, bool planted,
                                      cudaStream_t stream) {
  if (!is_hopper_device()) {
    return absl::UnimplementedError("attention: the wgmma prefill kernel needs compute capability 9.0");
  }
  if (items <= 0) return absl::OkStatus();
  return head_dim == 64 ? launch_for_plan<64>(params, items, planted, stream)
                        : launch_for_plan<128>(params, items, planted, stream);
}

}  // namespace samebits::cuda
