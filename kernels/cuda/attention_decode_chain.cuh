// The decode kernel for launches of few warps (kernels/cuda/attention.cu chooses): one warp per
// block and (segment, kv head, sequence), the K and V rows of whole sub-blocks (64 keys, 16 KiB
// at head_dim 128) through a ring of two buffers in the order K0, V0, K1, V1, ... over all of the
// warp's segments, every step of a sub-block unrolled into straight-line code. With few warps per
// SM a warp's own chain of copies and arithmetic is the bound, and this kernel runs it with fewer
// waits and branches than attention_decode_kernel (attention_decode.cuh: half sub-blocks, a loop
// over the parts, several warps per block), which is faster where many warps share an SM (large
// batches, short contexts) and slower here (H200, bench/cuda/NOTES.md).
// Copies: each lane first resolves two key rows through the block table (keys lane and lane + 32:
// the table loads overlap), then the rows are copied in 16-byte cp.async chunks, CH lanes per
// row, the row offsets passed by shuffles; keys beyond the context are zero-filled. The grid is
// implicit, as attention_decode_kernel's. Bits: the same arithmetic (attend_scores, then
// attend_values of attention_kernel.cuh, the same merge kernel), so the same bits; gpu_tests
// compares every route bit for bit.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_decode.cuh"

namespace samebits::cuda {

constexpr int kChainBuffers = 2;  // K or V rows of one sub-block each (the one read + one loading)

template <int HD>
struct ChainLayout {
  static constexpr int kRowsBytes = kAttnKeys * HD * 2;  // the K (or V) rows of a sub-block
  static constexpr int kBuffers = kDecodeRows * HD * 2;  // after the Q tile
  static constexpr int kBytes = kBuffers + kChainBuffers * kRowsBytes;
};

template <int HD>
__global__ void __launch_bounds__(32) attention_decode_chain_kernel(AttnParams P, DecodeGrid grid) {
  using L = ChainLayout<HD>;
  constexpr int CH = HD / 8;             // 16-byte chunks per row
  constexpr int NTD = HD / 8;            // n8 tiles over head_dim
  constexpr int kRowsPerCopy = 32 / CH;  // key rows one warp instruction copies
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t q_s = smem_addr(smem);
  const uint32_t buffers = q_s + L::kBuffers;

  const int lane = threadIdx.x;
  const int g = blockIdx.y, s = blockIdx.z;
  const bool reporter = blockIdx.x == 0 && g == 0 && lane == 0;
  if (reporter && s == 0) attention_report_bad_ends(P);
  if (!attention_sequence_ok(P, s, reporter)) return;
  const int group = P.num_q_heads / P.num_kv_heads;
  const int64_t qs = P.query_start[s];
  const int64_t q_len = P.query_start[s + 1] - qs;
  int row0 = 0, nrows = 0;
  if (!decode_tile(q_len * group, &row0, &nrows)) return;
  const int64_t context = P.context_lens[s];
  const int64_t cached = context - q_len;
  const bool reads_new = P.split_count_kind && P.separate_new_keys && q_len > 1;
  const int nseg = tile_segment_count(P, reads_new, cached, cached + (row0 + nrows - 1) / group);
  if (int(blockIdx.x) >= nseg) return;
  const int32_t* table = P.block_tables + int64_t(s) * P.max_blocks_per_seq;

  // Q tile (rows beyond nrows are zero): the first cp.async group.
  for (int i = lane; i < kDecodeRows * CH; i += 32) {
    const int r = i / CH, ch = i % CH;
    const bool valid = r < nrows;
    const int row = row0 + r;
    const bf16* src = P.q;
    if (valid) src = P.q + ((qs + row / group) * P.num_q_heads + g * group + row % group) * HD + ch * 8;
    cp_async_16(q_s + swizzled(r, ch, CH), src, valid);
  }
  cp_async_commit();

  int64_t pos[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = (lane >> 2) + h * 8;
    pos[h] = r < nrows ? cached + (row0 + r) / group : -1;
  }

  // The next rows to load: part (0: K, 1: V) of sub-block i of segment c, whose sub-blocks start at
  // sb_first (c >= nseg: none left). Segments without a sub-block are passed over.
  struct Cursor {
    int c, i, nsb, part;
    int64_t sb_first;
    bool from_new;
  };
  auto seek = [&](Cursor& k, int c) {  // the first segment >= c (in this block's stride) with keys
    k.c = c;
    k.i = k.part = k.nsb = 0;
    for (; k.c < nseg; k.c += int(gridDim.x)) {
      const DecodeSegment d = decode_segment(P, reads_new, cached, pos, k.c);
      if (d.nsb == 0) continue;
      k.nsb = d.nsb;
      k.sb_first = d.sb_first;
      k.from_new = d.from_new;
      return;
    }
  };
  Cursor next_load;
  seek(next_load, int(blockIdx.x));

  // Issues the rows at the cursor into buffer `buf` as one cp.async group (an empty group when
  // nothing is left, so that every item is one group) and advances the cursor. Lane l resolves
  // keys l and l + 32 (resolve_key_row); each copy instruction takes its row from them by shuffles.
  auto issue = [&](int buf) {
    if (next_load.c < nseg) {
      const int64_t sb0 = next_load.sb_first + int64_t(next_load.i) * kAttnKeys;
      KeyRow row[2];
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        row[t] = resolve_key_row(P, table, s, g, HD, qs, cached, context, next_load.from_new, sb0 + lane + 32 * t);
      }
      const bf16* cache = next_load.part == 0 ? P.k_cache : P.v_cache;
      const bf16* fresh = next_load.part == 0 ? P.k_new : P.v_new;
      const uint32_t dst = buffers + buf * L::kRowsBytes;
      const int ch = lane % CH, sub = lane / CH;
#pragma unroll 8
      for (int i = 0; i < kAttnKeys / kRowsPerCopy; ++i) {
        const int r = i * kRowsPerCopy + sub;
        const bool high = r >= 32;  // the key is held in slot 1 of lane r - 32
        const long long o = __shfl_sync(0xffffffffu, (long long)(high ? row[1].off : row[0].off), r & 31);
        const int w = __shfl_sync(0xffffffffu, high ? row[1].where : row[0].where, r & 31);
        cp_async_16(dst + swizzled(r, ch, CH), (w == 2 ? fresh : cache) + o + ch * 8, w != 0);
      }
      if (++next_load.part == 2) {
        next_load.part = 0;
        if (++next_load.i == next_load.nsb) seek(next_load, next_load.c + int(gridDim.x));
      }
    }
    cp_async_commit();
  };

  // Items (K or V rows of one sub-block) in order n = 0, 1, ...: item n sits in buffer
  // n % kChainBuffers; before item n is read, items up to n + kChainBuffers - 1 are issued.
  int consumed = 0;
#pragma unroll
  for (int b = 0; b < kChainBuffers; ++b) issue(b);
  auto wait_item = [&]() {
    cp_async_wait<kChainBuffers - 1>();
    __syncwarp();  // the other lanes' copies (and the Q tile) are in
    return buffers + (consumed % kChainBuffers) * L::kRowsBytes;
  };
  auto release_item = [&]() {
    __syncwarp();  // every lane is done with the buffer before it is refilled
    issue(consumed % kChainBuffers);
    ++consumed;
  };

  for (int c = blockIdx.x; c < nseg; c += gridDim.x) {
    const DecodeSegment cur = decode_segment(P, reads_new, cached, pos, c);
    float o[NTD][4];
#pragma unroll
    for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[nt][e] = 0.0f;
    float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
    bool first[2] = {true, true};

    for (int i = 0; i < cur.nsb; ++i) {
      const int64_t sb0 = cur.sb_first + int64_t(i) * kAttnKeys;
      bool active[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) active[h] = max(cur.rg[h].begin, sb0) < min(cur.rg[h].end, sb0 + kAttnKeys);
      const bool any = __any_sync(0xffffffffu, active[0] || active[1]);
      float sc[8][4], alpha[2];
      const uint32_t k_rows = wait_item();
      if (any) attend_scores<HD>(q_s, 0, k_rows, SwizzledRows<HD>{}, sb0, cur.rg, active, P.scale, sc, alpha, m, l, first);
      release_item();
      const uint32_t v_rows = wait_item();
      if (any) attend_values<HD>(v_rows, SwizzledRows<HD>{}, sc, alpha, o);
      release_item();
    }

    // One segment: the output itself (the fold of a single partial is that partial). Several: the
    // partial, stored for the merge kernel (l = 0 marks an empty one).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = (lane >> 2) + h * 8;
      if (r >= nrows) continue;
      if (nseg == 1) {
        if (first[h]) continue;
        const int row = row0 + r;
        bf16* dst = P.out + ((qs + row / group) * P.num_q_heads + g * group + row % group) * HD;
#pragma unroll
        for (int nt = 0; nt < NTD; ++nt) {
          const int d = nt * 8 + (lane & 3) * 2;
          dst[d] = to_bf16(__fdiv_rn(o[nt][2 * h], l[h]));
          dst[d + 1] = to_bf16(__fdiv_rn(o[nt][2 * h + 1], l[h]));
        }
        continue;
      }
      float* dst = P.partials + decode_partial_offset<HD>(P, grid, s, g, c, r);
#pragma unroll
      for (int nt = 0; nt < NTD; ++nt) {
        const int d = nt * 8 + (lane & 3) * 2;
        *reinterpret_cast<float2*>(dst + d) =
            make_float2(first[h] ? 0.0f : o[nt][2 * h], first[h] ? 0.0f : o[nt][2 * h + 1]);
      }
      if ((lane & 3) == 0) {
        dst[HD] = first[h] ? 0.0f : m[h];
        dst[HD + 1] = first[h] ? 0.0f : l[h];
      }
    }
  }
  cp_async_wait<0>();  // nothing in flight when the warp leaves
}

}  // namespace samebits::cuda
