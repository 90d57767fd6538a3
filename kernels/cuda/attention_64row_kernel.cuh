// The 64-row paged attention kernel (kernels/cuda/attention.cu states the order of every
// reduction; attention_kernel.cuh holds its steps). One block (4 warps, 64 rows) per work item
// (attention_worklist.cuh) and kv head: the rows are (query token, q head) pairs of one sequence
// and one kv head, query-major (row = query * group + head in group), so GQA heads share every
// key load. For each of the item's segments (a key range per row, from the plan), keys are
// visited in sub-blocks of 64 aligned to absolute positions; S = Q K^T and O += P V run on
// mma.sync m16n8k16 (bf16 in, fp32 accumulate), the softmax statistics per row in fp32; the
// segments' partials are folded in index order in the block.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_kernel.cuh"
#include "kernels/cuda/attention_worklist.cuh"

namespace samebits::cuda {

// At head_dim 64 ptxas's own register target (168, three blocks per SM) spills; two blocks per SM
// give it room (202, none). At 128 it takes 254 with no bound (0), and spills under a bound of 1.
template <int HD>
__global__ void __launch_bounds__(kAttnThreads, HD == 64 ? 2 : 0) attention_kernel(AttnParams P) {
  constexpr int CH = HD / 8;   // 16-byte chunks per row
  constexpr int NTD = HD / 8;  // n8 tiles over head_dim
  constexpr int KV_BYTES = kAttnKeys * HD * 2;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t q_s = smem_addr(smem);
  const uint32_t k_s = q_s + kAttnRows * HD * 2;  // [2] buffers
  const uint32_t v_s = k_s + 2 * KV_BYTES;        // [2] buffers
  __shared__ int range_lo[4], range_hi[4];

  // Block = item * num_kv_heads + kv head: the kv heads of one tile run side by side, so the
  // longest tiles come first. The item comes from the layout alone, before the wait (the host
  // wrote it: cuda_common.h); a block without one leaves there, unless it reports. The reporting
  // block reports at its end (its loop here made ptxas spill at head_dim 128).
  const int item = int(blockIdx.x) / P.num_kv_heads, g = int(blockIdx.x) % P.num_kv_heads;
  const AttnItem* found = find_work_item_or_report<kAttnThreads, kAttnRows>(P, item);
  if (found == nullptr) return;
  wait_for_previous_kernel();
  const AttnItem it = *found;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int s = it.seq;
  const int group = P.num_q_heads / P.num_kv_heads;
  const int64_t qs = P.query_start[s];
  const int64_t q_len = P.query_start[s + 1] - qs;
  const int64_t context = P.context_lens[s];
  const int64_t cached = context - q_len;
  const bool reads_new = reads_new_keys(P, q_len);
  const int32_t* table = P.block_tables + int64_t(s) * P.max_blocks_per_seq;

  // Q tile (rows beyond nrows are zero).
  for (int c = tid; c < kAttnRows * CH; c += kAttnThreads) {
    const int r = c / CH, ch = c % CH;
    const bool valid = r < it.nrows;
    const int row = it.row0 + r;
    const bf16* src = P.q;
    if (valid) src = P.q + query_row_offset(P, qs, g, group, row, HD) + ch * 8;
    cp_async_16(q_s + swizzled(r, ch, CH), src, valid);
  }
  cp_async_commit();

  // This thread's two rows (of the mma layout) and their absolute positions (-1: padding row).
  int64_t pos[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = warp * 16 + (lane >> 2) + h * 8;
    pos[h] = r < it.nrows ? cached + quotient_nonneg(it.row0 + r, group) : -1;
  }

  float ot[NTD][4];
  float tot_m[2] = {0.0f, 0.0f}, tot_l[2] = {0.0f, 0.0f};
  bool has_total[2] = {false, false};
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) ot[nt][e] = 0.0f;

  for (int c = 0; c < it.nseg; ++c) {
    SegRange rg[2];
    bool from_new = false;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      rg[h] = segment_range(P, reads_new, cached, pos[h], c);
      if (rg[h].begin < rg[h].end) {
        lo = min(lo, rg[h].begin);
        hi = max(hi, rg[h].end);
        from_new = rg[h].from_new;
      }
    }
    // Block-wide key range of this segment (integer min/max: exact in any order).
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) {
      lo = min(lo, (int64_t)__shfl_xor_sync(0xffffffffu, (long long)lo, o));
      hi = max(hi, (int64_t)__shfl_xor_sync(0xffffffffu, (long long)hi, o));
    }
    const int any_new = __any_sync(0xffffffffu, from_new);
    if (lane == 0) {
      range_lo[warp] = lo == INT64_MAX ? INT32_MAX : int(lo);
      range_hi[warp] = hi == INT64_MIN ? INT32_MIN : int(hi);
    }
    __shared__ int new_flags[4];
    if (lane == 0) new_flags[warp] = any_new;
    __syncthreads();
    int kb = range_lo[0], ke = range_hi[0];
    bool seg_new = new_flags[0];
#pragma unroll
    for (int w = 1; w < 4; ++w) {
      kb = min(kb, range_lo[w]);
      ke = max(ke, range_hi[w]);
      seg_new = seg_new || new_flags[w];
    }

    // Segment state per row.
    float o[NTD][4];
#pragma unroll
    for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[nt][e] = 0.0f;
    float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
    bool first[2] = {true, true};

    if (kb < ke) {
      const int64_t sb_first = (int64_t(kb) / kAttnKeys) * kAttnKeys;
      const int nsb = int((int64_t(ke) - sb_first + kAttnKeys - 1) / kAttnKeys);
      // Loads keys [sb0, sb0 + 64) of K and V into buffer `buf` (zero beyond the context). Every
      // row address is resolved first (the block-table loads overlap), then the copies are issued.
      auto load_kv = [&](int buf, int64_t sb0) {
        constexpr int kKeysPerPass = kAttnThreads / CH;
        constexpr int kPasses = kAttnKeys / kKeysPerPass;
        const int ch = tid % CH;
        KeyRow row[kPasses];
#pragma unroll
        for (int kk = 0; kk < kPasses; ++kk) {
          row[kk] = resolve_key_row(P, table, s, g, HD, qs, cached, context, seg_new, sb0 + tid / CH + kk * kKeysPerPass);
        }
#pragma unroll
        for (int kk = 0; kk < kPasses; ++kk) {
          const int r = tid / CH + kk * kKeysPerPass;
          const bf16* kb = key_row_source(row[kk], P.k_cache, P.k_new);
          const bf16* vb = key_row_source(row[kk], P.v_cache, P.v_new);
          cp_async_16(k_s + buf * KV_BYTES + swizzled(r, ch, CH), kb + ch * 8, row[kk].where != 0);
          cp_async_16(v_s + buf * KV_BYTES + swizzled(r, ch, CH), vb + ch * 8, row[kk].where != 0);
        }
      };

      load_kv(0, sb_first);
      cp_async_commit();
      for (int i = 0; i < nsb; ++i) {
        const int64_t sb0 = sb_first + int64_t(i) * kAttnKeys;
        if (i + 1 < nsb) {
          load_kv((i + 1) & 1, sb0 + kAttnKeys);
          cp_async_commit();
          cp_async_wait<1>();
        } else {
          cp_async_wait<0>();
        }
        __syncthreads();
        // Rows with at least one key of this sub-block in their range.
        bool active[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          active[h] = max(rg[h].begin, sb0) < min(rg[h].end, sb0 + kAttnKeys);
        }
        if (__any_sync(0xffffffffu, active[0] || active[1])) {
          const uint32_t kb_s = k_s + (i & 1) * KV_BYTES, vb_s = v_s + (i & 1) * KV_BYTES;
          attend_sub_block<HD>(q_s, warp * 16, kb_s, vb_s, SwizzledRows<HD>{}, sb0, rg, active, P.scale, o, m, l,
                               first);
        }
        __syncthreads();  // buffer i & 1 is refilled by the next iteration's load
      }
    }

    // End of segment: the row's partial, folded into its total in segment order.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp * 16 + (lane >> 2) + h * 8;
      if (r >= it.nrows || first[h]) continue;
      fold_row_partial<NTD>(h, o, m[h], l[h], ot, tot_m[h], tot_l[h], has_total[h]);
    }
    __syncthreads();  // range_lo / range_hi are rewritten by the next segment
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = warp * 16 + (lane >> 2) + h * 8;
    if (r >= it.nrows || !has_total[h]) continue;
    const int row = it.row0 + r;
    bf16* dst = P.out + query_row_offset(P, qs, g, group, row, HD);
#pragma unroll
    for (int nt = 0; nt < NTD; ++nt) {
      const int d = nt * 8 + (lane & 3) * 2;
      *reinterpret_cast<uint32_t*>(dst + d) = attention_output_pair(ot[nt][2 * h], ot[nt][2 * h + 1], tot_l[h]);
    }
  }
  if (reports_attention_layout()) report_attention_layout(P, kAttnThreads);
}

}  // namespace samebits::cuda
