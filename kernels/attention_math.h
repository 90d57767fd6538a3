// Split-KV attention arithmetic shared by every backend: one partial result per key range, and the
// merge of partials in index order. This header is the specification of the bits; the CPU kernel
// (kernels/cpu/attention.cpp) calls exactly these helpers, and a CUDA kernel that performs the same
// roundings in the same order reproduces them (host + device: SAMEBITS_HD, no FMA contraction).
//
// For one query token q (bf16, widened to fp32 once) and one q head:
//   partial over keys [a, b), b > a, in increasing key order j:
//     s_j  = dot_lanes(q, k_j) * scale            (16 fixed lanes, kernels/cpu/lanes.h; fp32)
//     m    = max_j s_j                            (first key seeds it; NaN never wins)
//     e_j  = exp(s_j - m)                         (fixed_expf, one rounded subtraction first)
//     l    = ((0 + e_a) + e_{a+1}) + ...          (plain sequential sum, key order)
//     acc[d] = ((0 + e_a*v_a[d]) + e_{a+1}*v_{a+1}[d]) + ...   (multiply rounded, then add)
//   merge of partials i = 0..n-1 (empty ranges are skipped; a single partial is merged too):
//     M    = max_i m_i
//     for i in index order: w = exp(m_i - M); L = L + l_i*w; O[d] = O[d] + acc_i[d]*w
//     (L and O start at +0.0f)
//     out[d] = bf16(O[d] / L)                     (IEEE division, round to nearest even)
// Which key ranges a query gets is the plan's business (kernels/plan.h and attention.cpp's header).
#pragma once
#include <cstdint>

#include "kernels/bf16.h"

// Loops over head_dim are element-wise (no reduction), so vectorising them cannot change a bit.
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
#define SAMEBITS_ELEMENTWISE_SIMD _Pragma("omp simd")
#else
#define SAMEBITS_ELEMENTWISE_SIMD
#endif

namespace samebits {

// Max of n >= 1 scores, seeded by the first; a NaN score never replaces the running max.
SAMEBITS_HD float attention_scores_max(const float* scores, int64_t n) {
  float m = scores[0];
  for (int64_t j = 1; j < n; ++j) m = scores[j] > m ? scores[j] : m;
  return m;
}

// Adds one key's weighted value row to a partial: acc[d] += e * v[d], d = 0..head_dim-1.
SAMEBITS_HD void attention_accumulate_value(float e, const bf16* v, float* acc, int head_dim) {
  SAMEBITS_ELEMENTWISE_SIMD
  for (int d = 0; d < head_dim; ++d) {
    float product = e * to_float(v[d]);
    acc[d] = acc[d] + product;
  }
}

// A partial in progress: keys are added one at a time, in key order, after its max is known. A
// kernel may interleave several heads' partials (GQA heads sharing one K/V row); each partial still
// sees exactly this sequence of roundings.
struct AttentionPartialState {
  float m;  // max score of the range
  float l;  // running sum of e_j
};

SAMEBITS_HD AttentionPartialState attention_partial_begin(float max_score, float* acc, int head_dim) {
  for (int d = 0; d < head_dim; ++d) acc[d] = 0.0f;
  return {max_score, 0.0f};
}

// Adds one key whose e = exp(score - st.m) is already computed (a kernel may compute the exps of
// many keys at once, e.g. in vector registers).
SAMEBITS_HD void attention_partial_add_exp(AttentionPartialState& st, float e, const bf16* v, float* acc,
                                           int head_dim) {
  st.l = st.l + e;
  attention_accumulate_value(e, v, acc, head_dim);
}

template <typename ExpFn>
SAMEBITS_HD void attention_partial_add_key(AttentionPartialState& st, float score, const bf16* v,
                                           float* acc, int head_dim, ExpFn exp_fn) {
  attention_partial_add_exp(st, exp_fn(score - st.m), v, acc, head_dim);
}

// One partial over n >= 1 keys from already-computed scores. value_row(j) returns the bf16 value
// row of the range's j-th key. exp_fn is fixed_expf. Results: *m, *l, acc[head_dim].
template <typename ValueRow, typename ExpFn>
SAMEBITS_HD void attention_partial_from_scores(const float* scores, int64_t n, ValueRow value_row,
                                               ExpFn exp_fn, int head_dim, float* m, float* l,
                                               float* acc) {
  AttentionPartialState st = attention_partial_begin(attention_scores_max(scores, n), acc, head_dim);
  for (int64_t j = 0; j < n; ++j) attention_partial_add_key(st, scores[j], value_row(j), acc, head_dim, exp_fn);
  *m = st.m;
  *l = st.l;
}

// Merges n partials (m[i], l[i], acc[i*head_dim .. +head_dim)) in index order and writes the bf16
// output row. Partials with l[i] == 0 hold no keys and are skipped (split-count plans can produce
// empty trailing ranges). At least one partial must hold keys.
template <typename ExpFn>
SAMEBITS_HD void attention_merge_partials(const float* m, const float* l, const float* acc, int n,
                                          int head_dim, ExpFn exp_fn, float* scratch_o, bf16* out) {
  float global_max = 0.0f;
  bool seeded = false;
  for (int i = 0; i < n; ++i) {
    if (l[i] == 0.0f) continue;
    if (!seeded || m[i] > global_max) global_max = m[i];
    seeded = true;
  }
  for (int d = 0; d < head_dim; ++d) scratch_o[d] = 0.0f;
  float total = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (l[i] == 0.0f) continue;
    const float w = exp_fn(m[i] - global_max);
    total = total + l[i] * w;
    const float* acc_i = acc + int64_t(i) * head_dim;
    SAMEBITS_ELEMENTWISE_SIMD
    for (int d = 0; d < head_dim; ++d) {
      float weighted = acc_i[d] * w;
      scratch_o[d] = scratch_o[d] + weighted;
    }
  }
  for (int d = 0; d < head_dim; ++d) out[d] = to_bf16(scratch_o[d] / total);
}

}  // namespace samebits
