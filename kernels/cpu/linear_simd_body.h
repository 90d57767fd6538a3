// The tile loop shared by the vector paths of linear (included by vector_avx2.cpp and
// vector_avx512.cpp after their target pragma; V supplies the instructions).
//
// Weight reuse: kLinearPanelColumns columns of the weight are widened to fp32 once (the panel) and
// used by every row of the tile. Register blocking: R rows x C columns of outputs per pass over a
// part; every panel vector is used by R rows, every x vector by C columns. The R*C outputs' lane
// trees then run side by side (V::trees: one output per vector element, each output's own tree,
// operands in lanes.h's order), and their part sums are added in part order as one vector.
// Blocking and side-by-side trees change which outputs share an instruction, never one output's
// operations.
#pragma once

#include "kernels/cpu/bf16_lanes.h"
#include "kernels/cpu/linear_simd.h"
#include "kernels/cpu/simd_dots.h"

namespace samebits::cpu::simd {

// A bf16 row of K values widened into dst and zero-padded to the next multiple of 16.
template <typename V>
inline void widen_row(const bf16* src, int64_t K, float* dst) {
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) V::store(dst + k, V::widen(src + k));
  if (k < K) V::store(dst + k, V::widen_tail(src + k, int(K - k)));
}

// Columns [c0, c0 + n) of the weight, widened into the panel and zero-padded to padded_K.
template <typename V>
inline void widen_panel(const LinearTile& t, int64_t c0, int n) {
  for (int c = 0; c < n; ++c) widen_row<V>(t.w + (c0 + c) * t.K, t.K, t.panel + c * t.padded_K);
}

// Outputs of rows [r0, r0 + R) x columns [c0, c0 + C): the part sums added in part order (parts
// beginning at or past K are empty and skipped, as in linear.cpp).
template <typename V, int R, int C, typename Cols>
inline void block(const LinearTile& t, const Cols& cols, int64_t r0, int64_t c0) {
  const float* x = t.x + r0 * t.padded_K;
  const int64_t ld = t.padded_K;
  typename V::Sums total = dot_block<V, R, C>(x, ld, t.K, cols, 0, std::min(t.part_len, ld));
  for (int64_t k0 = t.part_len; k0 < t.K; k0 += t.part_len)
    total = V::sum(total, dot_block<V, R, C>(x, ld, t.K, cols, k0, std::min(k0 + t.part_len, ld)));
  float out[V::kGroup];
  V::store(out, total);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) t.sums[(r0 + r) * t.cols + c0 + c] = out[r * C + c];
}

template <typename V, int R, int C>
inline void panel_rows(const LinearTile& t, int64_t c0) {
  const PanelColumns<V> cols{t.panel, t.padded_K};
  int64_t r0 = 0;
  for (; r0 + R <= t.rows; r0 += R) block<V, R, C>(t, cols, r0, c0);
  for (; r0 < t.rows; ++r0) block<V, 1, C>(t, cols, r0, c0);
}

// Fewer rows than a block: each row reads the bf16 weight directly, V::kGroup columns at a time.
template <typename V, bool kPrefetch>
inline void rows_without_panel(const LinearTile& t) {
  for (int64_t r0 = 0; r0 < t.rows; ++r0) {
    int64_t c0 = 0;
    for (; c0 + V::kGroup <= t.cols; c0 += V::kGroup)
      block<V, 1, V::kGroup>(t, StridedColumns<V, kPrefetch>{t.w + c0 * t.K, t.K}, r0, c0);
    for (; c0 + 4 <= t.cols; c0 += 4) block<V, 1, 4>(t, StridedColumns<V>{t.w + c0 * t.K, t.K}, r0, c0);
    for (; c0 < t.cols; ++c0) block<V, 1, 1>(t, StridedColumns<V>{t.w + c0 * t.K, t.K}, r0, c0);
  }
}

// Blocks of R rows x the panel's kLinearPanelColumns columns (fewer at the tile's edge).
template <typename V, int R>
inline void tile(const LinearTile& t) {
  static_assert(kLinearPanelColumns == 4, "the switch below spells out 1..4 columns");
  if (t.rows < kLinearPanelMinRows) {
    return t.prefetch_weight ? rows_without_panel<V, true>(t) : rows_without_panel<V, false>(t);
  }
  for (int64_t c0 = 0; c0 < t.cols; c0 += kLinearPanelColumns) {
    const int n = int(std::min<int64_t>(kLinearPanelColumns, t.cols - c0));
    widen_panel<V>(t, c0, n);
    switch (n) {
      case 4: panel_rows<V, R, 4>(t, c0); break;
      case 3: panel_rows<V, R, 3>(t, c0); break;
      case 2: panel_rows<V, R, 2>(t, c0); break;
      default: panel_rows<V, R, 1>(t, c0); break;
    }
  }
}

// The tile's outputs from its sums, W = sizeof(vf) / 4 at a time: LinearOutputs::store lane by
// lane (sum + bias as one fp32 add, then bf16 by round to nearest even, or fp32 as it is).
template <typename vf, typename vi>
inline void finish_tile(const LinearTile& t) {
  constexpr int64_t W = sizeof(vf) / sizeof(float);
  const LinearOutputs& o = t.out;
  for (int64_t r = 0; r < t.rows; ++r) {
    const float* sums = t.sums + r * t.cols;
    int64_t c = 0;
    for (; c + W <= t.cols; c += W) {
      vf v;
      std::memcpy(&v, sums + c, sizeof v);
      if (o.bias != nullptr) v = v + load_bf16_lanes<vf, vi>(o.bias + c);
      if (o.y != nullptr) {
        store_bf16_lanes<vf, vi>(o.y + r * o.ldy + c, narrow_bf16_lanes<vf, vi>(v));
      } else {
        std::memcpy(o.y_f32 + r * o.ldy + c, &v, sizeof v);
      }
    }
    for (; c < t.cols; ++c) o.store(r, c, sums[c]);
  }
}

}  // namespace samebits::cpu::simd
