// Blocked fixed-lane dot products for the CPU kernels' vector bodies (linear and attention),
// included after a target pragma; V is simd::Avx2 or simd::Avx512 (kernels/cpu/simd_*.h).
//
// dot_block computes R x C dot products at once: rows of x (fp32, zero-padded to a multiple of 16)
// against C columns (bf16 rows, widened as they are read, or an fp32 panel). Each product keeps
// its own 16 lanes (kernels/cpu/lanes.h: lane l takes k = l, l+16, ... from +0, one rounded
// product then one rounded add) in one register (pair), and V::trees combines the R * C lane sets
// side by side, each in lanes.h's pairwise order. Blocking changes which products share an
// instruction, never one product's operations. The 16-value group that ends at K is read with a
// bound and zeros after it, adding 0*0 = +0, which leaves a lane sum unchanged (it is never -0).
#pragma once
#include "kernels/cpu/simd_unroll.h"

namespace samebits::cpu::simd {

// Columns in an fp32 panel, zero-padded: every 16-value group is whole.
template <typename V>
struct PanelColumns {
  const float* panel;
  int64_t ld;
  typename V::X load(int c, int64_t k) const { return V::load(panel + c * ld + k); }
  typename V::X load_tail(int c, int64_t k, int) const { return load(c, k); }
};

// Columns as bf16 rows a fixed stride apart (a weight matrix).
template <typename V>
struct StridedColumns {
  const bf16* first;
  int64_t stride;
  typename V::X load(int c, int64_t k) const { return V::widen(first + c * stride + k); }
  typename V::X load_tail(int c, int64_t k, int n) const { return V::widen_tail(first + c * stride + k, n); }
};

// Columns as bf16 rows anywhere (keys of a paged cache).
template <typename V>
struct RowColumns {
  const bf16* const* rows;
  typename V::X load(int c, int64_t k) const { return V::widen(rows[c] + k); }
  typename V::X load_tail(int c, int64_t k, int n) const { return V::widen_tail(rows[c] + k, n); }
};

// Element r * C + c: sum over k in [k0, end) of x[r * ldx + k] * column c [k], in lane order from
// +0. k0 is a multiple of 16; end is a multiple of 16 or the padded end of a row of length K.
template <typename V, int R, int C, typename Cols>
inline typename V::Sums dot_block(const float* x, int64_t ldx, int64_t K, const Cols& cols, int64_t k0,
                                  int64_t end) {
  static_assert(R * C <= V::kGroup, "one tree group per block");
  typename V::Acc acc[V::kGroup];
  SAMEBITS_UNROLL
  for (int i = 0; i < V::kGroup; ++i) acc[i] = V::zero();
  auto step = [&](int64_t k, auto load_column) {
    typename V::X xv[R];
    SAMEBITS_UNROLL
    for (int r = 0; r < R; ++r) xv[r] = V::load(x + r * ldx + k);
    SAMEBITS_UNROLL
    for (int c = 0; c < C; ++c) {
      const typename V::X wv = load_column(c);
      SAMEBITS_UNROLL
      for (int r = 0; r < R; ++r) V::add_product(acc[r * C + c], xv[r], wv);
    }
  };
  const int64_t whole_end = std::min(end, K / 16 * 16);
  int64_t k = k0;
  for (; k < whole_end; k += 16) step(k, [&](int c) { return cols.load(c, k); });
  if (k < end && k < K) step(k, [&](int c) { return cols.load_tail(c, k, int(K - k)); });
  return V::trees(acc);
}

}  // namespace samebits::cpu::simd
