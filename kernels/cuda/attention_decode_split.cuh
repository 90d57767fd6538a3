// The decode kernel for small launches that the segment kernel (attention_decode_segment.cuh) does
// not take: default mode's segments of a few keys, and invariant launches too large for one wave
// of the segment kernel's blocks (kernels/cuda/attention.cu chooses). FOUR warps per (segment slot,
// kv head, sequence), one block each, for decode tiles of at most 8 rows.
// Why: invariant mode's segment is 256 fixed keys, so at batch 1-4 a launch has only tens of
// (segment, kv head) units; one warp each (attention_decode_chain.cuh) walks its sub-blocks as one
// dependent chain of copies and arithmetic and leaves the SMs nearly idle (H200: 64 warps for 132
// SMs at batch 1 x 2048 keys, 1.6% occupancy). Four warps share each sub-block's work, split only
// along dimensions that are not reduction chains, so every value is computed by the same
// operations in the same order as in the one-warp kernels:
// - S = Q K^T by KEYS: warp w computes the scores of keys 16w .. 16w + 15 of the sub-block (each
//   score's k16 chain over head_dim unchanged: attend_score_keys on one key pair);
// - the softmax by KEYS as well: warp w masks and scales the scores of its keys and takes each
//   row's max over them (softmax_masked, quad_max); the rows' maxima over the sub-block come from
//   the four warps' through shared memory (a max is exact in any order); every warp then computes
//   m, alpha (the same values in each) and the exponentials of its own keys, stores them in the
//   mma accumulator layout, and after a barrier reads all 64 back and sums them in
//   attend_softmax's order (softmax_exp, quad_sum, softmax_update: the same steps). Each warp
//   thus computes a quarter of the sub-block's exponentials (every warp computed all of them
//   before: the softmax was most of the kernel's instructions, which bound it at batch 1-4);
// - O += P V by OUTPUT DIMS: warp w owns n8 tiles w * NTW .. (w + 1) * NTW - 1 of head_dim (each
//   output column's chain over the keys unchanged: attend_value_tiles), and writes those columns
//   of the partial (warp 0 also m and l) or of the output.
// Copies: warp w resolves and copies the K and V rows of keys 16w .. 16w + 15 of each sub-block
// (16-byte cp.async chunks, row offsets passed by shuffles, zero-filled beyond the context) into a
// ring of kRing items (K or V rows of one 64-key sub-block) in the order K0, V0, K1, V1, ... over
// the block's segments; a block barrier makes every warp's rows visible before an item is read, and
// another lets an item be refilled only after every warp has read it. kRing = 8 holds a whole
// 256-key segment in flight, which the grids routed here leave room for.
// Set-up, segment walk and end are the chain kernel's (decode_tile_setup, decode_segment,
// finish_decode_segment, the same merge kernel). gpu_tests compares it bit for bit with the other
// routes.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_decode.cuh"

namespace samebits::cuda {

constexpr int kSplitWarps = 4;
constexpr int kSplitRingMid = 4, kSplitRingDeep = 8;  // the ring depths attention.cu instantiates

template <int HD, int kRing>
struct SplitLayout {
  static constexpr int kRowsBytes = kAttnKeys * HD * 2;  // the K (or V) rows of a sub-block
  static constexpr int kQBytes = 8 * HD * 2;             // the Q tile, rows 0..7
  static constexpr int kScoreBytes = 8 * 32 * 2 * 4;     // a sub-block's exponentials: [n8 tile][lane][2] fp32
  static constexpr int kMaxBytes = kSplitWarps * 8 * 4;  // each warp's max of rows 0..7 over its keys
  static constexpr int kBytes = kQBytes + kScoreBytes + kMaxBytes + kRing * kRowsBytes;
};

// Launch bounds: one block per SM at least (its launches are one wave, attention.cu); without the
// minimum ptxas aimed at more and spilled 28 bytes at 80-96 registers.
template <int HD, int kRing>
__global__ void __launch_bounds__(32 * kSplitWarps, 1) attention_decode_split_kernel(AttnParams P, DecodeGrid grid) {
  constexpr int kHalves = 1;
  using L = SplitLayout<HD, kRing>;
  constexpr int CH = HD / 8;                             // 16-byte chunks per row
  constexpr int NTW = HD / 8 / kSplitWarps;              // n8 output tiles per warp
  constexpr int kKeysPerWarp = kAttnKeys / kSplitWarps;  // one 16-key pair of the mma
  constexpr int kRowsPerCopy = 32 / CH;                  // key rows one warp instruction copies
  static_assert(kKeysPerWarp == 16 && NTW % 2 == 0, "one key pair and whole n16 pairs of tiles per warp");
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t q_s = smem_addr(smem);
  float* scores = reinterpret_cast<float*>(smem + L::kQBytes);
  float* row_max = reinterpret_cast<float*>(smem + L::kQBytes + L::kScoreBytes);
  const uint32_t buffers = q_s + L::kQBytes + L::kScoreBytes + L::kMaxBytes;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // The set-up, and the ring's first items where they lie in the first segment below `cached`,
  // before the wait for the previous kernel (as in attention_decode_segment_kernel, which says why).
  DecodeTile t;
  const bool has_work = decode_tile_setup(P, int(blockIdx.z), int(blockIdx.y), int(threadIdx.x), &t, false);
  const int nseg = has_work ? t.nseg : 0;
  int64_t pos[2] = {-1, -1};

  // The next rows to load, as in the chain kernel; row: this lane's key (lanes 0..15: key
  // 16 * warp + lane of the sub-block), resolved with its K part.
  struct Cursor : SegmentPosition {
    int i, part;
    KeyRow row;
  };
  auto seek = [&](Cursor& k, int c) {
    k.i = k.part = 0;
    seek_segment_with_keys(P, t, pos, c, &k);
  };
  Cursor next_load = {};

  // This warp's 16 rows of the item at the cursor into buffer `buf`, one cp.async group (empty when
  // nothing is left), then the cursor advances (every warp's cursor alike).
  auto issue = [&](int buf) {
    if (next_load.c < nseg) {
      if (next_load.part == 0) {
        const int64_t key = next_load.sb_first + int64_t(next_load.i) * kAttnKeys + warp * kKeysPerWarp + lane;
        next_load.row = lane < kKeysPerWarp ? resolve_key_row(P, t.table, t.s, t.g, HD, t.qs, t.cached, t.context,
                                                              next_load.from_new, key)
                                            : KeyRow{0, 0};
      }
      const bf16* own = next_load.part == 0 ? key_row_source(next_load.row, P.k_cache, P.k_new)
                                            : key_row_source(next_load.row, P.v_cache, P.v_new);
      const uint32_t dst = buffers + buf * L::kRowsBytes;
      const int ch = lane % CH, sub = lane / CH;
#pragma unroll
      for (int i = 0; i < kKeysPerWarp / kRowsPerCopy; ++i) {
        const int r = i * kRowsPerCopy + sub;
        const bf16* src = shfl_row_source(own, r);
        const int w = __shfl_sync(0xffffffffu, next_load.row.where, r);
        cp_async_16(dst + swizzled(warp * kKeysPerWarp + r, ch, CH), src + ch * 8, w != 0);
      }
      if (++next_load.part == 2) {
        next_load.part = 0;
        if (++next_load.i == next_load.nsb) seek(next_load, next_load.c + int(gridDim.x));
      }
    }
    cp_async_commit();
  };

  // The ring's first kRing items: K and V of the first segment's first kRing / 2 sub-blocks.
  constexpr int kFirstSubBlocks = kRing / 2;
  bool early = false;  // those copied before the wait
  if (has_work) {
    decode_positions<kHalves>(t, lane, pos);
    seek(next_load, int(blockIdx.x));
    // (with fewer sub-blocks in its first segment the ring's first items would reach the next one)
    early = next_load.nsb >= kFirstSubBlocks && copies_precede_wait(t, next_load, kFirstSubBlocks);
    if (early) {
#pragma unroll 1
      for (int b = 0; b < kRing; ++b) issue(b);
    }
  }
  wait_for_previous_kernel();
  allow_next_kernel();  // the merge kernel, if any, may then be scheduled (attention.cu)
  // Thread 0 alone is the block's reporter (decode_tile_setup reports from "lane" 0).
  decode_tile_report(P, int(blockIdx.z), int(blockIdx.y), int(threadIdx.x));
  if (!has_work) return;
  // Q by warp 0: one cp.async group ahead of the ring's, or, where the ring's first items are in
  // flight already, by ordinary loads (a cp.async group after them would wait for them).
  if (early) {
    if (warp == 0) load_decode_q_now<HD, 8>(P, t, q_s, lane);
  } else {
    if (warp == 0) {
      load_decode_q<HD, 8>(P, t, q_s, lane);
    } else {
      cp_async_commit();  // every thread counts the same groups
    }
#pragma unroll 1
    for (int b = 0; b < kRing; ++b) issue(b);
  }

  int consumed = 0;
  auto wait_item = [&]() {
    cp_async_wait<kRing - 1>();
    __syncthreads();  // every warp's rows (and the Q tile) are in
    return buffers + (consumed % kRing) * L::kRowsBytes;
  };
  auto release_item = [&]() {
    __syncthreads();  // every warp is done with the buffer before it is refilled
    issue(consumed % kRing);
    ++consumed;
  };

  for (int c = blockIdx.x; c < nseg; c += gridDim.x) {
    const DecodeSegment cur = decode_segment(P, t.reads_new, t.cached, pos, c);
    float o[NTW][4];
    zero_fragments(o);
    float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
    bool first[2] = {true, true};

    for (int i = 0; i < cur.nsb; ++i) {
      const int64_t sb0 = cur.sb_first + int64_t(i) * kAttnKeys;
      bool active[2];
      // The same in every warp (the lanes' rows do not depend on the warp): barriers stay uniform.
      const bool any = sub_block_active(cur, sb0, active);
      float sc[8][4], alpha[2] = {1.0f, 1.0f}, m_new = 0.0f;
      zero_fragments(sc);
      const uint32_t k_rows = wait_item();
      if (any) {
        // Keys 16w .. 16w + 15 (n8 tiles 2w, 2w + 1): key pair 0 of the rows from 16w (the swizzle
        // depends on key & 7), masked, and each row's max over them (scaled once it is known).
        attend_score_keys<HD, kHalves, 0, 1>(q_s, 0, k_rows + warp * kKeysPerWarp * HD * 2, SwizzledRows<HD>{}, sc);
        int col_lo, col_hi;
        softmax_columns(sb0, cur.rg[0], &col_lo, &col_hi);
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            sc[j][e] = softmax_masked(sc[j][e], (2 * warp + j) * 8 + (lane & 3) * 2 + e, col_lo, col_hi);
            mx = fmaxf(mx, sc[j][e]);
          }
        mx = quad_max(mx);
        if ((lane & 3) == 0) row_max[warp * 8 + lane / 4] = mx;
      }
      release_item();  // also: every warp's row maxima are in shared memory
      if (any) {
        float mx = row_max[lane / 4];
#pragma unroll
        for (int w = 1; w < kSplitWarps; ++w) mx = fmaxf(mx, row_max[w * 8 + lane / 4]);
        m_new = softmax_new_max(first[0], m[0], softmax_scaled_max(mx, P.scale));
        alpha[0] = softmax_alpha(active[0], first[0], m[0], m_new);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float p0 = softmax_exp(active[0], sc[j][0], P.scale, m_new);
          const float p1 = softmax_exp(active[0], sc[j][1], P.scale, m_new);
          *reinterpret_cast<float2*>(scores + ((2 * warp + j) * 32 + lane) * 2) = make_float2(p0, p1);
        }
      }
      __syncthreads();  // every warp's exponentials are in (and every warp has read the maxima)
      if (any) {
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
          const float2 v = *reinterpret_cast<const float2*>(scores + (nt * 32 + lane) * 2);
          sc[nt][0] = v.x;
          sc[nt][1] = v.y;
          sum = sum + v.x;
          sum = sum + v.y;
        }
        softmax_update(active[0], alpha[0], m_new, quad_sum(sum), m[0], l[0], first[0]);
      }
      // Its barrier also keeps the exponentials until every warp has read them.
      const uint32_t v_rows = wait_item();
      if (any) {
        attend_value_tiles<NTW, kHalves, 0, kAttnKeys / 16, true>(v_rows, SwizzledRows<HD>{}, warp * NTW, sc, alpha,
                                                                   o);
      }
      release_item();
    }
    finish_decode_segment<HD, kHalves, NTW>(P, grid, t, c, lane, o, m, l, first, warp * NTW, warp == 0);
  }
  cp_async_wait<0>();  // nothing in flight when the block leaves
}

}  // namespace samebits::cuda
