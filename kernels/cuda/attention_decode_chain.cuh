// The decode kernel for launches of few warps (kernels/cuda/attention.cu chooses): one warp per
// block and (segment, kv head, sequence), the K and V rows of whole sub-blocks (64 keys, 16 KiB
// at head_dim 128) through a ring of kRing buffers in the order K0, V0, K1, V1, ... over all of the
// warp's segments, every step of a sub-block unrolled into straight-line code. With few warps per
// SM a warp's own chain of copies and arithmetic is the bound, and this kernel runs it with fewer
// waits and branches than attention_decode_kernel (attention_decode.cuh: half sub-blocks, a loop
// over the parts, several warps per block), which is faster where many warps share an SM (large
// batches, short contexts) and slower here (H200, bench/cuda/notes/decode.md).
// The smallest launches (one wave of four-warp blocks) go to attention_decode_segment.cuh (a
// segment's sub-blocks side by side) or attention_decode_split.cuh (each sub-block shared by four
// warps).
// Ring depth: the deeper the ring, the more of a segment's rows are in flight at once (a 256-key
// segment at head_dim 128 is 8 items: with kRing = 8 all of it), so that the copies' latency would
// be paid once per segment rather than once per sub-block, where the blocks still all fit the SMs'
// shared memory. attention.cu's automatic route keeps kRing = 2 (the depth measured before); 4 and
// 8 are forced routes (AttentionRoute::kDecodeChainRing*) timed by the bench's decode-chain-ring
// rows.
// Copies: each lane first resolves two key rows through the block table, once per sub-block for
// its K and its V rows (resolve_sub_block_rows), then the warp copies the whole sub-block's rows
// (copy_sub_block_rows: runs of 16 keys where the rows allow). The grid is implicit, as
// attention_decode_kernel's, and so is the set-up and the end of a segment (decode_tile_setup,
// finish_decode_segment; the same merge kernel).
// kHalves = 1: tiles of at most 8 rows, at head_dim 128 on the swapped products of
// attention_decode_swapped.cuh as attention_decode_kernel's. Bits: the same arithmetic
// (attend_score_keys or its swapped form, attend_softmax, attend_value_keys or its swapped form), so
// the same bits; gpu_tests compares every route and ring depth bit for bit.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_decode.cuh"

namespace samebits::cuda {

// Ring depths (items: K or V rows of one sub-block) that attention.cu instantiates; tiles of 9..16
// rows (prefill chunks' last tiles) take the shallowest.
constexpr int kChainRingShallow = 2, kChainRingMid = 4, kChainRingDeep = 8;

template <int HD, int kRing>
struct ChainLayout {
  static constexpr int kRowsBytes = kAttnKeys * HD * 2;  // the K (or V) rows of a sub-block
  static constexpr int kBuffers = kDecodeRows * HD * 2;  // after the Q tile
  static constexpr int kBytes = kBuffers + kRing * kRowsBytes;
};

// Launch bounds: at least one block per SM, i.e. every register a thread may have. Without a
// minimum ptxas aimed at more blocks per SM and spilled (head_dim 64: 8-40 bytes at 168 registers);
// this kernel takes launches of few warps (attention.cu), where one warp's chain is the bound.
template <int HD, int kHalves, int kRing, int kExps = kExpsOwn>
__global__ void __launch_bounds__(32, 1) attention_decode_chain_kernel(AttnParams P, DecodeGrid grid) {
  using L = ChainLayout<HD, kRing>;
  constexpr int NTD = HD / 8;  // n8 tiles over head_dim
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t q_s = smem_addr(smem);
  const uint32_t buffers = q_s + L::kBuffers;
  const int lane = threadIdx.x;
  wait_for_previous_kernel();
  allow_next_kernel();  // the merge kernel, if any, may then be scheduled (attention.cu)
  DecodeTile t;
  if (!decode_tile_setup(P, int(blockIdx.z), int(blockIdx.y), lane, &t)) return;
  const int nseg = t.nseg;
  load_decode_q<HD, 8 * kHalves>(P, t, q_s, lane);
  int64_t pos[2];
  decode_positions<kHalves>(t, lane, pos);

  // The next rows to load: part (0: K, 1: V) of sub-block i of segment c, whose sub-blocks start at
  // sb_first (c >= nseg: none left); row: this lane's two key rows of that sub-block, resolved with
  // its K part. Segments without a sub-block are passed over.
  struct Cursor : SegmentPosition {
    int i, part;
    KeyRow row[2];
  };
  auto seek = [&](Cursor& k, int c) {
    k.i = k.part = 0;
    seek_segment_with_keys(P, t, pos, c, &k);
  };
  Cursor next_load;
  seek(next_load, int(blockIdx.x));

  // Issues the rows at the cursor into buffer `buf` as one cp.async group (an empty group when
  // nothing is left, so that every item is one group) and advances the cursor; the rows are
  // resolved with the K part (resolve_sub_block_rows) and copied by copy_sub_block_rows.
  auto issue = [&](int buf) {
    if (next_load.c < nseg) {
      if (next_load.part == 0) {
        const int64_t sb0 = next_load.sb_first + int64_t(next_load.i) * kAttnKeys;
        resolve_sub_block_rows<HD>(P, t, next_load.from_new, sb0, lane, next_load.row);
      }
      copy_sub_block_rows<HD>(P, next_load.row, next_load.part == 0, buffers + buf * L::kRowsBytes, lane);
      if (++next_load.part == 2) {
        next_load.part = 0;
        if (++next_load.i == next_load.nsb) seek(next_load, next_load.c + int(gridDim.x));
      }
    }
    cp_async_commit();
  };

  // Items (K or V rows of one sub-block) in order n = 0, 1, ...: item n sits in buffer n % kRing;
  // before item n is read, items up to n + kRing - 1 are issued.
  int consumed = 0;
#pragma unroll 1
  for (int b = 0; b < kRing; ++b) issue(b);
  auto wait_item = [&]() {
    cp_async_wait<kRing - 1>();
    __syncwarp();  // the other lanes' copies (and the Q tile) are in
    return buffers + (consumed % kRing) * L::kRowsBytes;
  };
  auto release_item = [&]() {
    __syncwarp();  // every lane is done with the buffer before it is refilled
    issue(consumed % kRing);
    ++consumed;
  };

  // Swapped products where the decode kernel has them (kSwappedProducts): Q's columns into
  // registers once its copy (the oldest group) is in.
  constexpr bool kSwapped = kSwappedProducts<HD, kHalves>;
  static_assert(L::kBuffers >= kSwappedScoreBytes, "the scores are staged in the Q tile's place");
  uint32_t qb[kSwapped ? HD / 16 : 1][2];
  float* const staged = reinterpret_cast<float*>(smem);
  if constexpr (kSwapped) hold_q_columns<HD, kRing>(q_s, qb);

  for (int c = blockIdx.x; c < nseg; c += gridDim.x) {
    const DecodeSegment cur = decode_segment(P, t.reads_new, t.cached, pos, c);
    float o[kSwapped ? HD / 16 : NTD][4];  // O^T when swapped, else O
    zero_fragments(o);
    float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
    bool first[2] = {true, true};

    for (int i = 0; i < cur.nsb; ++i) {
      const int64_t sb0 = cur.sb_first + int64_t(i) * kAttnKeys;
      bool active[2];
      const bool any = sub_block_active(cur, sb0, active);
      float sc[8][4], alpha[2], alpha_q[2];
      const uint32_t k_rows = wait_item();
      if constexpr (kSwapped) {
        if (any) {
          float st[4][4];  // S^T
          zero_fragments(st);
          score_keys_swapped<HD, 0, 4>(k_rows, SwizzledRows<HD>{}, qb, st);
          swapped_scores_to_rows(staged, st, sc);
          attend_softmax<kHalves, kExps>(sb0, cur.rg, active, P.scale, sc, alpha, m, l, first);
          swapped_row_values(alpha[0], alpha_q);
        }
      } else {
        zero_fragments(sc);
        if (any) {
          attend_score_keys<HD, kHalves, 0, 4>(q_s, 0, k_rows, SwizzledRows<HD>{}, sc);
          attend_softmax<kHalves, kExps>(sb0, cur.rg, active, P.scale, sc, alpha, m, l, first);
        }
      }
      release_item();
      const uint32_t v_rows = wait_item();
      if (any) {
        if constexpr (kSwapped) {
          value_keys_swapped<HD, 0, kAttnKeys / 16, true>(v_rows, SwizzledRows<HD>{}, sc, alpha_q, o);
        } else {
          attend_value_keys<HD, kHalves, 0, kAttnKeys / 16, true>(v_rows, SwizzledRows<HD>{}, sc, alpha, o);
        }
      }
      release_item();
    }
    if constexpr (kSwapped) {
      finish_swapped_segment<HD>(P, grid, t, c, lane, o, m, l, first);
    } else {
      finish_decode_segment<HD, kHalves>(P, grid, t, c, lane, o, m, l, first);
    }
  }
  cp_async_wait<0>();  // nothing in flight when the warp leaves
}

}  // namespace samebits::cuda
