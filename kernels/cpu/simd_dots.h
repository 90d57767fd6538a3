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
  void prefetch_after(int, int, int64_t) const {}
};

// Columns as bf16 rows a fixed stride apart (a weight matrix). With kPrefetch, a pass over columns
// [c_end - n, c_end) brings the next n columns (contiguous when stride is the row length) towards
// the core at the rate it reads its own: n / 2 cache lines per 16-value step.
template <typename V, bool kPrefetch = false>
struct StridedColumns {
  const bf16* first;
  int64_t stride;
  typename V::X load(int c, int64_t k) const { return V::widen(first + c * stride + k); }
  typename V::X load_tail(int c, int64_t k, int n) const { return V::widen_tail(first + c * stride + k, n); }
  // Inlined always: GCC takes a function that only prefetches for one without effects, and drops
  // its calls.
  [[gnu::always_inline]] void prefetch_after(int c_end, int n, int64_t k) const {
    if constexpr (kPrefetch) {
      const char* next = reinterpret_cast<const char*>(first + c_end * stride) + k * 2 * n;
      SAMEBITS_UNROLL
      for (int line = 0; line < n * 32; line += 64) _mm_prefetch(next + line, _MM_HINT_T1);
    }
  }
};

// Columns as bf16 rows anywhere (keys of a paged cache).
template <typename V>
struct RowColumns {
  const bf16* const* rows;
  typename V::X load(int c, int64_t k) const { return V::widen(rows[c] + k); }
  typename V::X load_tail(int c, int64_t k, int n) const { return V::widen_tail(rows[c] + k, n); }
  void prefetch_after(int, int, int64_t) const {}
};

// Columns whose dots one pass over k computes: every column of a pass keeps its own address in a
// register (16 columns at once would spill them, and the loop would reload addresses).
inline constexpr int kColumnsPerPass = 8;

// acc[r * C + c] for columns c in [C0, C1): sum over k in [k0, end) of x[r * ldx + k] * column c [k],
// in lane order, added to acc's lanes. Inlined always, so that acc stays in registers.
template <typename V, int R, int C, int C0, int C1, typename Cols>
[[gnu::always_inline]] inline void dot_pass(typename V::Acc* acc, const float* x, int64_t ldx, int64_t K, const Cols& cols, int64_t k0,
                     int64_t end) {
  auto step = [&](int64_t k, auto load_column) {
    typename V::X xv[R];
    SAMEBITS_UNROLL
    for (int r = 0; r < R; ++r) xv[r] = V::load(x + r * ldx + k);
    SAMEBITS_UNROLL
    for (int c = C0; c < C1; ++c) {
      const typename V::X wv = load_column(c);
      SAMEBITS_UNROLL
      for (int r = 0; r < R; ++r) V::add_product(acc[r * C + c], xv[r], wv);
    }
  };
  const int64_t whole_end = std::min(end, K / 16 * 16);
  int64_t k = k0;
  for (; k < whole_end; k += 16) {
    cols.prefetch_after(C1, C1 - C0, k);
    step(k, [&](int c) { return cols.load(c, k); });
  }
  if (k < end && k < K) step(k, [&](int c) { return cols.load_tail(c, k, int(K - k)); });
}

// Element r * C + c: sum over k in [k0, end) of x[r * ldx + k] * column c [k], in lane order from
// +0. k0 is a multiple of 16; end is a multiple of 16 or the padded end of a row of length K.
// Columns are taken kColumnsPerPass at a time; every lane still adds its products in k order.
template <typename V, int R, int C, typename Cols>
inline typename V::Sums dot_block(const float* x, int64_t ldx, int64_t K, const Cols& cols, int64_t k0,
                                  int64_t end) {
  static_assert(R * C <= V::kGroup, "one tree group per block");
  typename V::Acc acc[V::kGroup];
  SAMEBITS_UNROLL
  for (int i = 0; i < V::kGroup; ++i) acc[i] = V::zero();
  constexpr int kFirst = C < kColumnsPerPass ? C : kColumnsPerPass;
  dot_pass<V, R, C, 0, kFirst>(acc, x, ldx, K, cols, k0, end);
  if constexpr (C > kColumnsPerPass) dot_pass<V, R, C, kColumnsPerPass, C>(acc, x, ldx, K, cols, k0, end);
  return V::trees(acc);
}

}  // namespace samebits::cpu::simd
