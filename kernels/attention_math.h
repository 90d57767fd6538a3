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

namespace samebits {

// Max of n >= 1 scores, seeded by the first; a NaN score never replaces the running max.
SAMEBITS_HD float attention_scores_max(const float* scores, int64_t n) {
  float m = scores[0];
  for (int64_t j = 1; j < n; ++j) m = scores[j] > m ? scores[j] : m;
  return m;
}

// Adds one key's weighted value row to a partial: acc[d] += e * v[d], d = 0..head_dim-1.
SAMEBITS_HD void attention_accumulate_value(float e, const bf16* v, float* acc, int head_dim) {
  for (int d = 0; d < head_dim; ++d) {
    float product = e * to_float(v[d]);
    acc[d] = acc[d] + product;
  }
}

// One partial over n >= 1 keys from already-computed scores (which it overwrites with e_j).
// value_row(j) returns the bf16 value row of the range's j-th key. exp_fn is fixed_expf.
// Results: *m, *l, acc[head_dim] (acc is cleared here).
template <typename ValueRow, typename ExpFn>
SAMEBITS_HD void attention_partial_from_scores(float* scores, int64_t n, ValueRow value_row,
                                               ExpFn exp_fn, int head_dim, float* m, float* l,
                                               float* acc) {
  const float max_score = attention_scores_max(scores, n);
  for (int d = 0; d < head_dim; ++d) acc[d] = 0.0f;
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    const float e = exp_fn(scores[j] - max_score);
    sum = sum + e;
    attention_accumulate_value(e, value_row(j), acc, head_dim);
  }
  *m = max_score;
  *l = sum;
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
    for (int d = 0; d < head_dim; ++d) {
      float weighted = acc_i[d] * w;
      scratch_o[d] = scratch_o[d] + weighted;
    }
  }
  for (int d = 0; d < head_dim; ++d) out[d] = to_bf16(scratch_o[d] / total);
}

}  // namespace samebits
