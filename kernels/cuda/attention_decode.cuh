// Decode-shaped tiles of paged attention: the last tile of a sequence's rows when it holds 1..16
// rows (a decode's GQA heads, or the last query tokens of a chunk), one warp per (tile, segment).
//
// Why: such a tile fills one warp's 16 mma rows at most, so the 64-row kernel (attention_kernel.cuh)
// left three of its four warps idle and kept one sub-block in flight per 80 KiB of shared memory.
// Here a block is one warp that owns segments of one (sequence, kv head): its own ring of K/V
// sub-blocks, two stages, each filled by the bulk copy engine (one cp.async.bulk per key row of
// K and of V, read through the block table, into rows padded by 16 bytes for conflict-free
// ldmatrix; keys beyond the context are zero-filled), so three (head_dim 128) or five (64) warps
// per SM each keep a 32 KiB (16 KiB) sub-block in flight while computing the previous one. (With
// cp.async, one 16-byte chunk per lane and key, the same warp streamed ~2 GB/s.) The grid is
// implicit, (segment slot, kv head, sequence): every block reads query_start / context_lens on the
// device, computes segments slot, slot + gridDim.x, ... of its tile, and leaves when there are
// none, so no work list is built or copied.
//
// Bits: every row goes through exactly the arithmetic of attention_kernel.cuh (same sub-blocks of
// 64 keys aligned to absolute positions, same mma.sync shapes and orders, same softmax order, same
// fold of the segments in index order by attention_decode_merge_kernel, or bf16(o / l) directly
// when the tile has one segment). gpu_tests compares both kernels bit for bit.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_worklist.cuh"

namespace samebits::cuda {

constexpr int kDecodeStages = 2;  // K/V sub-blocks per warp (the one computed + one in flight)

template <int HD>
struct DecodeLayout {
  static constexpr int kRowBytes = HD * 2 + 16;  // a key row, padded
  static constexpr int kStageBytes = 2 * kAttnKeys * kRowBytes;  // K rows, then V rows
  static constexpr int kQ = 128;  // the stages' mbarriers first
  static constexpr int kStages = kQ + kDecodeRows * HD * 2;
  static constexpr int kBytes = kStages + kDecodeStages * kStageBytes;
};

// Shape of the implicit grid and of the partials it writes (host: attention.cu).
struct DecodeGrid {
  int max_segments;  // >= the segments of every decode tile (the partials' stride)
  int partial_rows;  // rows reserved per (sequence, kv head, segment) in the partials, >= its rows
};

// Offset (floats) of row r of segment c of (sequence s, kv head g) in the partials.
template <int HD>
__device__ __forceinline__ int64_t decode_partial_offset(const AttnParams& P, const DecodeGrid& grid, int s, int g,
                                                         int c, int r) {
  return ((int64_t(s) * P.num_kv_heads + g) * grid.max_segments + c) * grid.partial_rows * (HD + 2) +
         int64_t(r) * (HD + 2);
}

template <int HD>
__global__ void __launch_bounds__(32) attention_decode_kernel(AttnParams P, DecodeGrid grid) {
  using L = DecodeLayout<HD>;
  constexpr int CH = HD / 8;   // 16-byte chunks per row
  constexpr int NTD = HD / 8;  // n8 tiles over head_dim
  constexpr uint32_t kRowCopy = HD * 2;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t bars = smem_addr(smem);
  const uint32_t q_s = bars + L::kQ;
  const uint32_t stages = bars + L::kStages;

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

  if (lane == 0) {
    for (int st = 0; st < kDecodeStages; ++st) mbar_init(bars + 8 * st, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  // Q tile (rows beyond nrows are zero).
  for (int i = lane; i < kDecodeRows * CH; i += 32) {
    const int r = i / CH, ch = i % CH;
    const bool valid = r < nrows;
    const int row = row0 + r;
    const bf16* src = P.q;
    if (valid) src = P.q + ((qs + row / group) * P.num_q_heads + g * group + row % group) * HD + ch * 8;
    cp_async_16(q_s + swizzled(r, ch, CH), src, valid);
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncwarp();

  int64_t pos[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = (lane >> 2) + h * 8;
    pos[h] = r < nrows ? cached + (row0 + r) / group : -1;
  }
  int used = 0;  // sub-blocks this warp has loaded so far: stage used % 2, phase (used / 2) & 1

  for (int c = blockIdx.x; c < nseg; c += gridDim.x) {
    SegRange rg[2];
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    bool from_new = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      rg[h] = segment_range(P, reads_new, cached, pos[h], c);
      if (rg[h].begin < rg[h].end) {
        lo = min(lo, rg[h].begin);
        hi = max(hi, rg[h].end);
        from_new = rg[h].from_new;
      }
    }
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) {
      lo = min(lo, (int64_t)__shfl_xor_sync(0xffffffffu, (long long)lo, o));
      hi = max(hi, (int64_t)__shfl_xor_sync(0xffffffffu, (long long)hi, o));
    }
    const bool seg_new = __any_sync(0xffffffffu, from_new);

    float o[NTD][4];
#pragma unroll
    for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[nt][e] = 0.0f;
    float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
    bool first[2] = {true, true};

    if (lo < hi) {
      const int64_t sb_first = (lo / kAttnKeys) * kAttnKeys;
      const int nsb = int((hi - sb_first + kAttnKeys - 1) / kAttnKeys);
      // Keys [sb0, sb0 + 64) of K and V into stage `st`: lane copies keys lane and lane + 32.
      auto load_kv = [&](int st, int64_t sb0) {
        const uint32_t bar = bars + 8 * st;
        const uint32_t k_rows = stages + st * L::kStageBytes, v_rows = k_rows + kAttnKeys * L::kRowBytes;
        const bf16* ksrc[2];
        const bf16* vsrc[2];
        bool valid[2];
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          const int64_t j = sb0 + lane + 32 * t;
          ksrc[t] = vsrc[t] = nullptr;
          valid[t] = j < context;
          if (valid[t] && seg_new && j >= cached) {
            const int64_t off = ((qs + (j - cached)) * P.num_kv_heads + g) * HD;
            ksrc[t] = P.k_new + off;
            vsrc[t] = P.v_new + off;
          } else if (valid[t]) {
            const int jj = int(j);
            const int32_t blk = table[jj / P.block_size];
            if (blk < 0 || blk >= P.num_blocks) {
              report_device_error(P.mailbox, kErrAttentionBlock, s, blk, P.num_blocks);
              valid[t] = false;
            } else {
              const int64_t slot = int64_t(blk) * P.block_size + jj % P.block_size;
              const int64_t off = (slot * P.num_kv_heads + g) * HD;
              ksrc[t] = P.k_cache + off;
              vsrc[t] = P.v_cache + off;
            }
          }
        }
        const int copies = __popc(__ballot_sync(0xffffffffu, valid[0])) + __popc(__ballot_sync(0xffffffffu, valid[1]));
        fence_proxy_async();  // earlier generic accesses of this stage before the copies below
        if (lane == 0) mbar_expect_tx(bar, uint32_t(copies) * 2u * kRowCopy);
        __syncwarp();
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          const int r = lane + 32 * t;
          if (valid[t]) {
            bulk_copy(k_rows + r * L::kRowBytes, ksrc[t], kRowCopy, bar);
            bulk_copy(v_rows + r * L::kRowBytes, vsrc[t], kRowCopy, bar);
          } else {
            for (int ch = 0; ch < CH; ++ch) {
              asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(k_rows + r * L::kRowBytes + ch * 16), "r"(0)
                           : "memory");
              asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(v_rows + r * L::kRowBytes + ch * 16), "r"(0)
                           : "memory");
            }
          }
        }
      };

      load_kv(used % kDecodeStages, sb_first);
      for (int i = 0; i < nsb; ++i) {
        const int64_t sb0 = sb_first + int64_t(i) * kAttnKeys;
        const int st = (used + i) % kDecodeStages;
        if (i + 1 < nsb) load_kv((used + i + 1) % kDecodeStages, sb0 + kAttnKeys);
        mbar_wait(bars + 8 * st, uint32_t((used + i) / kDecodeStages) & 1u);
        __syncwarp();  // the zero fills of other lanes
        bool active[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) active[h] = max(rg[h].begin, sb0) < min(rg[h].end, sb0 + kAttnKeys);
        if (__any_sync(0xffffffffu, active[0] || active[1])) {
          const uint32_t kb_s = stages + st * L::kStageBytes, vb_s = kb_s + kAttnKeys * L::kRowBytes;
          attend_sub_block<HD>(q_s, 0, kb_s, vb_s, PaddedRows<HD>{}, sb0, rg, active, P.scale, o, m, l, first);
        }
        __syncwarp();  // every lane is done with stage st before a later load refills it
      }
      used += nsb;
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
}

// One warp per row of a small tile with several segments: the fold of attention_kernel.cuh over
// the stored partials in segment order. The next segment's values are loaded before the current
// one is folded, so the loads of a long row overlap.
template <int HD>
__global__ void attention_decode_merge_kernel(AttnParams P, DecodeGrid grid) {
  const int g = blockIdx.x, s = blockIdx.y;
  const int r = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (!attention_sequence_ok(P, s, false)) return;
  const int group = P.num_q_heads / P.num_kv_heads;
  const int64_t qs = P.query_start[s];
  const int64_t q_len = P.query_start[s + 1] - qs;
  int row0 = 0, nrows = 0;
  if (!decode_tile(q_len * group, &row0, &nrows) || r >= nrows) return;
  const int64_t cached = P.context_lens[s] - q_len;
  const bool reads_new = P.split_count_kind && P.separate_new_keys && q_len > 1;
  const int nseg = tile_segment_count(P, reads_new, cached, cached + (row0 + nrows - 1) / group);
  if (nseg <= 1) return;
  constexpr int PER = HD / 32;
  const int64_t stride = int64_t(grid.partial_rows) * (HD + 2);
  const float* src = P.partials + decode_partial_offset<HD>(P, grid, s, g, 0, r);
  float ot[PER], cur[PER], nxt[PER];
  float tot_m = 0.0f, tot_l = 0.0f;
  bool has_total = false;
#pragma unroll
  for (int i = 0; i < PER; ++i) cur[i] = src[lane + 32 * i];
  float cur_m = src[HD], cur_l = src[HD + 1];
  for (int c = 0; c < nseg; ++c) {
    const float* next_src = src + stride * (c + 1 < nseg ? c + 1 : c);
    float nxt_m = next_src[HD], nxt_l = next_src[HD + 1];
#pragma unroll
    for (int i = 0; i < PER; ++i) nxt[i] = next_src[lane + 32 * i];
    if (cur_l != 0.0f) {
      float new_m, a, b;
      fold_scales(has_total, tot_m, cur_m, &new_m, &a, &b);
#pragma unroll
      for (int i = 0; i < PER; ++i) ot[i] = fold_value(has_total, ot[i], a, cur[i], b);
      tot_l = fold_value(has_total, tot_l, a, cur_l, b);
      tot_m = new_m;
      has_total = true;
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) cur[i] = nxt[i];
    cur_m = nxt_m;
    cur_l = nxt_l;
  }
  if (!has_total) return;
  const int row = row0 + r;
  bf16* dst = P.out + ((qs + row / group) * P.num_q_heads + g * group + row % group) * HD;
#pragma unroll
  for (int i = 0; i < PER; ++i) dst[lane + 32 * i] = to_bf16(__fdiv_rn(ot[i], tot_l));
}

}  // namespace samebits::cuda
