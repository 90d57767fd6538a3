// The tile loop shared by the vector paths of linear (included by linear_avx2.cpp and
// linear_avx512.cpp after their target pragma; V supplies the instructions). Register blocking:
// kRows rows x kCols columns of outputs per pass over a part; every weight vector widened once is
// used by kRows rows, every x vector by kCols columns. Blocking changes which outputs share a pass,
// never one output's operations.
#pragma once

#include "kernels/cpu/linear_simd.h"

namespace samebits::cpu::simd {

// sums[r * C + c] = part [k0, k0 + len) of output (row r, column c), from +0, in lane order.
template <typename V, int R, int C>
inline void part_sums(const LinearTile& t, const float* x, const bf16* w, int64_t k0, int64_t len, float* sums) {
  typename V::Acc acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = V::zero();
  int64_t k = k0;
  const int64_t end = k0 + len;
  for (; k + 16 <= end; k += 16) {
    typename V::X xv[R];
    for (int r = 0; r < R; ++r) xv[r] = V::load_x(x + r * t.K + k);
    for (int c = 0; c < C; ++c) {
      const typename V::X wv = V::widen_w(w + c * t.K + k);
      for (int r = 0; r < R; ++r) V::add_product(acc[r][c], xv[r], wv);
    }
  }
  if (k < end) {
    const int n = int(end - k);
    typename V::X xv[R];
    for (int r = 0; r < R; ++r) xv[r] = V::load_x_tail(x + r * t.K + k, n);
    for (int c = 0; c < C; ++c) {
      const typename V::X wv = V::widen_w_tail(w + c * t.K + k, n);
      for (int r = 0; r < R; ++r) V::add_product(acc[r][c], xv[r], wv);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) sums[r * C + c] = V::tree(acc[r][c]);
}

// Outputs of rows [r0, r0+R) x columns [c0, c0+C): the part sums added in part order.
template <typename V, int R, int C>
inline void block(const LinearTile& t, int64_t r0, int64_t c0) {
  const float* x = t.x + r0 * t.K;
  const bf16* w = t.w + c0 * t.K;
  float total[R * C], sums[R * C];
  part_sums<V, R, C>(t, x, w, 0, std::min(t.part_len, t.K), total);
  for (int64_t k0 = t.part_len; k0 < t.K; k0 += t.part_len) {
    part_sums<V, R, C>(t, x, w, k0, std::min(t.part_len, t.K - k0), sums);
    for (int i = 0; i < R * C; ++i) total[i] = total[i] + sums[i];
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) t.out[(r0 + r) * t.cols + c0 + c] = total[r * C + c];
}

template <typename V, int R, int C>
inline void tile(const LinearTile& t) {
  int64_t c0 = 0;
  for (; c0 + C <= t.cols; c0 += C) {
    int64_t r0 = 0;
    for (; r0 + R <= t.rows; r0 += R) block<V, R, C>(t, r0, c0);
    for (; r0 < t.rows; ++r0) block<V, 1, C>(t, r0, c0);
  }
  for (; c0 < t.cols; ++c0) {
    int64_t r0 = 0;
    for (; r0 + R <= t.rows; r0 += R) block<V, R, 1>(t, r0, c0);
    for (; r0 < t.rows; ++r0) block<V, 1, 1>(t, r0, c0);
  }
}

}  // namespace samebits::cpu::simd
