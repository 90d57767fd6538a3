// The wgmma prefill's row arithmetic: the softmax for an interior sub-block (every row of the warp
// has keys in it), in the order of attend_softmax<2>, and the fold of a segment's partial into the
// rows' totals at its end. kernels/cuda/sm90a/attention_prefill.cu calls both, and the
// prefill-ceiling rows (bench/cuda/prefill_ceiling.cu) time them on a pipeline without the
// kernel's other work. Plain device code (no sm_90 instruction), one thread's two rows h = 0, 1 of
// a wgmma m64 accumulator: scores sc[n8 tile][4] as mma.sync's C fragment.
#pragma once

#include "kernels/cuda/attention_kernel.cuh"

namespace samebits::cuda {
// attend_softmax<2> (attention_kernel.cuh) for a sub-block that holds keys of every row of the
// warp: the same roundings in the same order (the gpu tests compare this kernel with the 64-row
// kernel bit for bit), in fewer instructions per score, in two phases so that the caller can
// rescale o (by alpha, known after the first) before it issues the next wgmma.
//  - Masking only where a row's range ends or begins inside the sub-block (the causal diagonal, a
//    segment's edges: mask_outside_ranges below), as attend_softmax masks: -inf
//    in place of the score. With every row active, attend_softmax's per-row choices (alpha 1 and
//    the state kept for an inactive row) never apply; a warp with a row that has no key in the
//    sub-block takes attend_softmax. (Masked this way, the diagonal sub-blocks took 0.93-0.97x the time of a
//    fresh prefill of 64-1024 tokens on the H200, with the first segment's fold below:
//    bench/cuda/notes/prefill.md, 2026-12-04.)
//  - p = exp2(fma(s, scale, -mu)) with mu = m_new, or +0 where m_new = -inf, without
//    attend_softmax's per-score select (s != -inf ? exp2(fma(s, scale, -m_new)) : 0). Same bits:
//    s = -inf gives -inf (mu finite or +inf), whose attn_exp2 is +0; m_new = -inf means no score
//    above -inf, so s is -inf (exp2(-inf) = +0) or NaN (NaN either way).
// The scores `in` with columns outside each row's key range replaced by -inf (softmax_masked), into
// `out`: a sub-block where every row has keys, some not all (the prefill's masked path before
// interior_max).
__device__ __forceinline__ void mask_outside_ranges(int64_t sb0, const SegRange (&rg)[2], const float (&in)[8][4],
                                                    float (&out)[8][4]) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    int lo, hi;
    softmax_columns(sb0, rg[h], &lo, &hi);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        out[nt][2 * h + e] = softmax_masked(in[nt][2 * h + e], nt * 8 + (lane & 3) * 2 + e, lo, hi);
      }
  }
}

struct InteriorMax {
  float m_new[2], mu[2], scale;
};
// Both phases work on the two rows (h) of a thread side by side and take maxima as trees: the
// kernel runs two consumer warps per scheduler, so its time goes to waiting on chains of dependent
// instructions (ncu: "wait" the first stall reason) more than to issuing them. A max is exact in any
// order (a +0 / -0 tie could only change m's sign, which enters the bits only through exponentials
// of differences); the sums keep attend_softmax's order, each row its own chain.
// Phase 1: the running max (of the unscaled scores, then scaled: softmax_scaled_max), alpha.
__device__ __forceinline__ InteriorMax interior_max(float scale, const float (&sc)[8][4], float (&alpha)[2],
                                                   const float (&m)[2], const bool (&first)[2]) {
  InteriorMax r;
  r.scale = scale;
  float mx[2][8];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int h = 0; h < 2; ++h) mx[h][nt] = fmaxf(sc[nt][2 * h], sc[nt][2 * h + 1]);
#pragma unroll
  for (int w = 4; w >= 1; w /= 2)
#pragma unroll
    for (int i = 0; i < w; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) mx[h][i] = fmaxf(mx[h][i], mx[h][i + w]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // fmaxf with -inf: the chain's start, so that a thread whose scores are all NaN gives -inf too
    r.m_new[h] = softmax_new_max(first[h], m[h], softmax_scaled_max(quad_max(fmaxf(-INFINITY, mx[h][0])), scale));
    alpha[h] = softmax_alpha(true, first[h], m[h], r.m_new[h]);
    r.mu[h] = r.m_new[h] == -INFINITY ? 0.0f : r.m_new[h];
  }
  return r;
}
// Phase 2a, before the next sub-block's scores are issued: the exponentials' arguments
// fma(s, scale, -mu), softmax_exp2_scaled's one rounding, from the accumulators (or the masked
// scores) into `x`. Written where the scores leave the accumulators, so that these multiply-adds
// are the copy that the next wgmma's issue into the accumulators needs (32 moves fewer a visit).
__device__ __forceinline__ void interior_exp_arguments(const InteriorMax& r, const float (&sc)[8][4],
                                                       float (&x)[8][4]) {
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int h = 0; h < 2; ++h) x[nt][2 * h + e] = __fmaf_rn(sc[nt][2 * h + e], r.scale, -r.mu[h]);
}
// Phase 2b, under the next sub-block's scores: the exponentials of the arguments in place, their
// sum, the row state (attn_exp2 of phase 2a's values: softmax_exp2_scaled's bits).
__device__ __forceinline__ void interior_exp_sum(const InteriorMax& r, float (&sc)[8][4], const float (&alpha)[2],
                                                 float (&m)[2], float (&l)[2], bool (&first)[2]) {
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float p = attn_exp2(sc[nt][2 * h + e]);
        sc[nt][2 * h + e] = p;
        sum[h] = sum[h] + p;
      }
#pragma unroll
  for (int h = 0; h < 2; ++h) softmax_update(true, alpha[h], r.m_new[h], quad_sum(sum[h]), m[h], l[h], first[h]);
}

// A segment's end: the partial (o, m, l) of the rows that fold (folds[h]: the row is in the tile and
// has keys in the segment) folded into their totals in segment order, into ot. The totals of the
// earlier segments are read from shared memory, HD / 8 float4 groups a thread, group nt at
// totals[nt * stride] (the caller's thread's first group); the caller writes ot back or to the
// outputs.
template <int NTD>
__device__ __forceinline__ void fold_segment_partial(bool first_segment, const bool (&folds)[2],
                                                     const float (&o)[NTD][4], const float (&m)[2],
                                                     const float (&l)[2], const float4* totals, int stride,
                                                     float (&ot)[NTD][4], float (&tot_m)[2], float (&tot_l)[2],
                                                     bool (&has_total)[2]) {
  if (first_segment) {
    // (block-uniform) A row's first fold gives its partial itself (fold_row_partial from a -0
    // total: fma(v, 1, -0 * 0) = v, a NaN's payload aside, which no output keeps; l and m as
    // they are), so the first segment's totals are o, or -0 for a row without keys yet: no
    // loads, no arithmetic.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int nt = 0; nt < NTD; ++nt) {
        ot[nt][2 * h] = folds[h] ? o[nt][2 * h] : -0.0f;
        ot[nt][2 * h + 1] = folds[h] ? o[nt][2 * h + 1] : -0.0f;
      }
      if (folds[h]) {
        tot_m[h] = m[h];
        tot_l[h] = l[h];
        has_total[h] = true;
      }
    }
    return;
  }
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt) {
    const float4 v = totals[nt * stride];
    ot[nt][0] = v.x;
    ot[nt][1] = v.y;
    ot[nt][2] = v.z;
    ot[nt][3] = v.w;
  }
  // Where every row of the warp folds, without a branch per row (a row's total is -0 until its
  // first fold).
  if (__all_sync(0xffffffffu, folds[0] && folds[1])) {
#pragma unroll
    for (int h = 0; h < 2; ++h) fold_row_partial<NTD, true>(h, o, m[h], l[h], ot, tot_m[h], tot_l[h], has_total[h]);
  } else {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (folds[h]) fold_row_partial<NTD>(h, o, m[h], l[h], ot, tot_m[h], tot_l[h], has_total[h]);
    }
  }
}

}  // namespace samebits::cuda
