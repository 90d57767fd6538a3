// linear's AVX2 panel path (tiles of kLinearPanelMinRows rows or more), included by
// kernels/cpu/vector_avx2.cpp after its target pragma.
//
// Design: AVX2 has 16 ymm registers, and one output's 16 lanes fill two of them (lanes 0-7 and
// 8-15). Blocks of 1 row x 4 columns (8 accumulators) need 10 loads per 64 multiply-adds, and the
// whole panel of a long K (4 columns of K = 2048: 32 KB) leaves L1, so loads set the speed. The
// two halves of a lane set are independent reductions (lanes 0-7 take k mod 16 < 8, lanes 8-15
// the others), so this path runs them one after the other: blocks of 2 rows x 4 columns x one
// half (8 accumulators, 2 + 4 loads per 64 multiply-adds). The panel is taken K chunk by K chunk
// (kKChunk values: 16 KB of panel, which stays in L1 while every row of the tile passes over it;
// each row's chunk of x serves both halves). Rows of x and of the panel start on 64-byte
// boundaries (linear.cpp), so no load straddles two cache lines. The accumulators are kept in
// memory between chunks, each output's tree is taken at the end of each split-K part, and the
// part sums are added in part order.
#pragma once

#include "kernels/cpu/linear_simd.h"
#include "kernels/cpu/linear_simd_body.h"
#include "kernels/cpu/simd_avx2.h"
#include "kernels/cpu/simd_unroll.h"

namespace samebits::cpu::simd {

namespace avx2_panel {

inline constexpr int64_t kKChunk = 1024;
inline constexpr int kHalf = 8;  // lanes per ymm

// The lanes of one row's outputs against the panel's columns: [column][half].
struct RowLanes {
  __m256 v[kLinearPanelColumns][2];
};

// acc[r][c] += x row r [k] * panel column c [k] for k in [k0, k1), one half of the lanes (k0 is
// the first k of the half: a multiple of 16, plus 8 for lanes 8-15).
template <int R, int C>
[[gnu::always_inline]] inline void half_pass(__m256 (&acc)[R][C], const float* x, const float* panel, int64_t ld,
                                            int64_t k0, int64_t k1) {
  for (int64_t k = k0; k < k1; k += 16) {
    __m256 xv[R];
    SAMEBITS_UNROLL
    for (int r = 0; r < R; ++r) xv[r] = _mm256_loadu_ps(x + r * ld + k);
    SAMEBITS_UNROLL
    for (int c = 0; c < C; ++c) {
      __m256 wv = _mm256_loadu_ps(panel + c * ld + k);
      asm("" : "+x"(wv));  // one load per column, held in a register for the R rows
      SAMEBITS_UNROLL
      for (int r = 0; r < R; ++r) acc[r][c] = _mm256_add_ps(acc[r][c], _mm256_mul_ps(xv[r], wv));
    }
  }
}

// Rows [r0, r0 + R) x the panel's C columns over [k0, k1), both halves.
template <int R, int C>
inline void block(const LinearTile& t, RowLanes* lanes, int64_t r0, int64_t k0, int64_t k1) {
  for (int h = 0; h < 2; ++h) {
    __m256 acc[R][C];
    SAMEBITS_UNROLL
    for (int r = 0; r < R; ++r) {
      SAMEBITS_UNROLL
      for (int c = 0; c < C; ++c) acc[r][c] = lanes[r0 + r].v[c][h];
    }
    half_pass<R, C>(acc, t.x + r0 * t.padded_K, t.panel, t.padded_K, k0 + h * kHalf, k1);
    SAMEBITS_UNROLL
    for (int r = 0; r < R; ++r) {
      SAMEBITS_UNROLL
      for (int c = 0; c < C; ++c) lanes[r0 + r].v[c][h] = acc[r][c];
    }
  }
}

// Every row of the tile against the panel's C columns (those from c0), into t.sums.
template <int C>
inline void panel_rows(const LinearTile& t, int64_t c0) {
  static_assert(kLinearPanelColumns == Avx2::kGroup, "one tree group per row");
  RowLanes lanes[kLinearTileRows];
  Avx2::Sums total[kLinearTileRows];
  const int64_t ld = t.padded_K;
  for (int64_t p0 = 0; p0 == 0 || p0 < t.K; p0 += t.part_len) {
    const int64_t p_end = std::min(p0 + t.part_len, ld);
    for (int64_t r = 0; r < t.rows; ++r)
      for (int c = 0; c < kLinearPanelColumns; ++c) lanes[r].v[c][0] = lanes[r].v[c][1] = _mm256_setzero_ps();
    for (int64_t k0 = p0; k0 < p_end; k0 += kKChunk) {
      const int64_t k1 = std::min(k0 + kKChunk, p_end);
      int64_t r = 0;
      for (; r + 2 <= t.rows; r += 2) block<2, C>(t, lanes, r, k0, k1);
      if (r < t.rows) block<1, C>(t, lanes, r, k0, k1);
    }
    for (int64_t r = 0; r < t.rows; ++r) {
      Avx2::Acc group[Avx2::kGroup];
      for (int c = 0; c < Avx2::kGroup; ++c) group[c] = {lanes[r].v[c][0], lanes[r].v[c][1]};
      const Avx2::Sums s = Avx2::trees(group);
      total[r] = p0 == 0 ? s : Avx2::sum(total[r], s);
    }
  }
  for (int64_t r = 0; r < t.rows; ++r) {
    float out[Avx2::kGroup];
    Avx2::store(out, total[r]);
    for (int c = 0; c < C; ++c) t.sums[r * t.cols + c0 + c] = out[c];
  }
}

}  // namespace avx2_panel

// The tile's sums through the panel, kLinearPanelColumns columns at a time (fewer at its edge).
inline void panel_tile_avx2(const LinearTile& t) {
  static_assert(kLinearPanelColumns == 4, "the switch below spells out 1..4 columns");
  for (int64_t c0 = 0; c0 < t.cols; c0 += kLinearPanelColumns) {
    const int n = int(std::min<int64_t>(kLinearPanelColumns, t.cols - c0));
    widen_panel<Avx2>(t, c0, n);
    switch (n) {
      case 4: avx2_panel::panel_rows<4>(t, c0); break;
      case 3: avx2_panel::panel_rows<3>(t, c0); break;
      case 2: avx2_panel::panel_rows<2>(t, c0); break;
      default: avx2_panel::panel_rows<1>(t, c0); break;
    }
  }
}

}  // namespace samebits::cpu::simd
