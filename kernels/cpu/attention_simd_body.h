// Attention's vector bodies (kernels/cpu/attention_simd.h), included by vector_avx2.cpp and
// vector_avx512.cpp after their target pragma; V supplies the instructions.
//   scores: blocks of R heads x C keys (R * C = V::kGroup products), dot_block per block;
//   values: blocks of G heads x NC 16-value slices of head_dim, kept in registers over every key
//     of the range; the key's value slices are widened once for the G heads.
#pragma once

#include "kernels/cpu/attention_simd.h"
#include "kernels/cpu/simd_dots.h"

namespace samebits::cpu::simd {

template <typename V, int R, int C>
inline void score_block(const AttentionScoresJob& jb, int g0, int64_t j0) {
  const typename V::Sums s = dot_block<V, R, C>(jb.q + g0 * jb.q_stride, jb.q_stride, jb.head_dim,
                                                RowColumns<V>{jb.k_rows + j0}, 0, jb.q_stride);
  float out[V::kGroup];
  V::store(out, s);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) jb.scores[(g0 + r) * jb.len + j0 + c] = out[r * C + c] * jb.scale;
}

template <typename V, int R>
inline void score_heads(const AttentionScoresJob& jb, int g0) {
  constexpr int C = V::kGroup / R;
  int64_t j = 0;
  for (; j + C <= jb.len; j += C) score_block<V, R, C>(jb, g0, j);
  for (; j < jb.len; ++j) score_block<V, R, 1>(jb, g0, j);
}

template <typename V>
inline void scores(const AttentionScoresJob& jb) {
  int g = 0;
  for (; g + 2 <= jb.group; g += 2) score_heads<V, 2>(jb, g);  // two heads share each key's widening
  for (; g < jb.group; ++g) score_heads<V, 1>(jb, g);
}

// Heads [g0, g0 + G), dims [d0, d0 + NC * 16) (or the last n < 16 dims when kTail), every key.
template <typename V, int G, int NC, bool kTail>
inline void value_block(const AttentionValuesJob& jb, int g0, int d0, int n) {
  typename V::X acc[G][NC];
  SAMEBITS_UNROLL
  for (int g = 0; g < G; ++g) {
    SAMEBITS_UNROLL
    for (int c = 0; c < NC; ++c)
      acc[g][c] = kTail ? V::load_tail(jb.acc[g0 + g] + d0, n) : V::load(jb.acc[g0 + g] + d0 + 16 * c);
  }
  for (int64_t j = 0; j < jb.len; ++j) {
    if (j + 4 < jb.len) __builtin_prefetch(jb.v_rows[j + 4] + d0);  // paged rows: no stride to follow
    typename V::X v[NC];
    SAMEBITS_UNROLL
    for (int c = 0; c < NC; ++c) v[c] = kTail ? V::widen_tail(jb.v_rows[j] + d0, n) : V::widen(jb.v_rows[j] + d0 + 16 * c);
    SAMEBITS_UNROLL
    for (int g = 0; g < G; ++g) {
      const typename V::X e = V::broadcast(jb.e[(g0 + g) * jb.len + j]);
      SAMEBITS_UNROLL
      for (int c = 0; c < NC; ++c) acc[g][c] = V::add(acc[g][c], V::mul(e, v[c]));
    }
  }
  SAMEBITS_UNROLL
  for (int g = 0; g < G; ++g) {
    SAMEBITS_UNROLL
    for (int c = 0; c < NC; ++c) {
      if (kTail) {
        V::store_tail(jb.acc[g0 + g] + d0, acc[g][c], n);
      } else {
        V::store(jb.acc[g0 + g] + d0 + 16 * c, acc[g][c]);
      }
    }
  }
}

template <typename V, int G, int NC>
inline void value_heads(const AttentionValuesJob& jb, int g0) {
  int d = 0;
  for (; d + 16 * NC <= jb.head_dim; d += 16 * NC) value_block<V, G, NC, false>(jb, g0, d, 16);
  for (; d + 16 <= jb.head_dim; d += 16) value_block<V, G, 1, false>(jb, g0, d, 16);
  if (d < jb.head_dim) value_block<V, G, 1, true>(jb, g0, d, jb.head_dim - d);
}

// NC slices per block: as many accumulators as the registers hold beside the value slices.
template <typename V, int NC>
inline void values(const AttentionValuesJob& jb) {
  int g = 0;
  for (; g + 2 <= jb.group; g += 2) value_heads<V, 2, NC>(jb, g);
  for (; g < jb.group; ++g) value_heads<V, 1, NC>(jb, g);
}

}  // namespace samebits::cpu::simd
