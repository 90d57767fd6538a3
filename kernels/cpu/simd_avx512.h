// The AVX-512 (F, BW, VL) instructions behind the CPU kernels' vector bodies (linear, attention,
// rmsnorm): one zmm holds the 16 lanes of one fixed-lane reduction (kernels/cpu/lanes.h: element l
// is lane l), and trees() combines the lanes of 16 reductions side by side, operands in lanes.h's
// order. Included only by kernels/cpu/vector_avx512.cpp, after their target pragma. No FMA anywhere: the
// portable path rounds each product and each sum.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/bf16.h"

namespace samebits::cpu::simd {

struct Avx512 {
  using X = __m512;     // 16 floats
  using Acc = __m512;   // one reduction's 16 lanes
  using Sums = __m512;  // kGroup reductions' results, element i = reduction i
  static constexpr int kGroup = 16;
  static constexpr int kWidth = 16;  // floats per X

  static Acc zero() { return _mm512_setzero_ps(); }
  static X load(const float* p) { return _mm512_loadu_ps(p); }
  static X load_tail(const float* p, int n) { return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p); }
  static X broadcast(float v) { return _mm512_set1_ps(v); }
  static void store(float* p, X v) { _mm512_storeu_ps(p, v); }
  static void store_tail(float* p, X v, int n) { _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v); }
  // bf16 -> fp32: the 16 bits become the upper half of a zero fp32. One word permutation puts
  // value i in the upper half of element i and zeroes the lower halves (a zero extension and a shift
  // would take two instructions: at one row, linear is bound by these).
  static X widen(const bf16* p) {
    const __m512i upper_halves = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0,  //
                                                  7, 0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
    const __m512i h = _mm512_maskz_loadu_epi16(__mmask32(0xFFFFu), p);  // 16 values, nothing read past them
    return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(__mmask32(0xAAAAAAAAu), upper_halves, h));
  }
  static X widen_tail(const bf16* p, int n) {  // n < 16 values, zeros after them
    const __m256i h = _mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static X add(X a, X b) { return _mm512_add_ps(a, b); }
  static X mul(X a, X b) { return _mm512_mul_ps(a, b); }
  static void add_product(Acc& acc, X x, X w) { acc = _mm512_add_ps(acc, _mm512_mul_ps(x, w)); }

  // In each 128-bit block b: [a(4b) + a(4b+1), a(4b+2) + a(4b+3), b(4b) + b(4b+1), b(4b+2) + b(4b+3)].
  static __m512 pair_sums(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
  }
  // Blocks [a0 + a1, a2 + a3, b0 + b1, b2 + b3] of 128-bit blocks.
  static __m512 block_sums(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
  }
  // Element i = lanes.h's tree of acc[i]. Per reduction: t8 (adjacent lanes) by pair_sums of two
  // reductions; t4 (adjacent t8) by pair_sums of two such results, which leaves block b of group
  // (4j..4j+3) holding their t4[b]; t4[0] + t4[1] and t4[2] + t4[3] by block_sums of two groups;
  // their sum by block_sums again, which leaves group j in block j.
  static Sums trees(const Acc* acc) {
    __m512 t8[8], t4[4], half[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) t8[i] = pair_sums(acc[2 * i], acc[2 * i + 1]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) t4[i] = pair_sums(t8[2 * i], t8[2 * i + 1]);
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i) half[i] = block_sums(t4[2 * i], t4[2 * i + 1]);
    return block_sums(half[0], half[1]);
  }
  static Sums sum(Sums a, Sums b) { return _mm512_add_ps(a, b); }
};

}  // namespace samebits::cpu::simd
