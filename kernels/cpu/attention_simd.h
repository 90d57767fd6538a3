// Attention's vector paths (kernels/cpu/vector_avx2.cpp, vector_avx512.cpp), chosen at run
// time by kernels/cpu/isa.h; attention.cpp holds the portable path and calls these in its place.
// Both compute exactly kernels/attention_math.h's roundings:
//   scores: s[g][j] = dot_lanes(q_g, k_j) * scale, the 16-lane order of kernels/cpu/lanes.h for
//     every (head, key), several keys' and heads' products and lane trees side by side
//     (kernels/cpu/simd_dots.h);
//   values: acc_g[d] = acc_g[d] + e[g][j] * v_j[d] for j in key order (one rounded product, one
//     rounded add), element-wise over d, the accumulators held in registers across the keys.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"

namespace samebits::cpu {

struct AttentionScoresJob {
  const float* q = nullptr;  // `group` rows of q in fp32, row stride q_stride, zero beyond head_dim
  int64_t q_stride = 0;      // head_dim rounded up to a multiple of 16
  int group = 0, head_dim = 0;
  float scale = 0;
  const bf16* const* k_rows = nullptr;  // len key rows
  int64_t len = 0;
  float* scores = nullptr;  // scores[g * len + j]
};

struct AttentionValuesJob {
  const float* e = nullptr;  // e[g * len + j]: the exps of the range's keys
  const bf16* const* v_rows = nullptr;
  int64_t len = 0;
  int group = 0, head_dim = 0;
  float* const* acc = nullptr;  // acc[g]: head g's partial accumulator (head_dim floats)
};

void attention_scores_avx2(const AttentionScoresJob& job);
void attention_scores_avx512(const AttentionScoresJob& job);
void attention_values_avx2(const AttentionValuesJob& job);
void attention_values_avx512(const AttentionValuesJob& job);

}  // namespace samebits::cpu
