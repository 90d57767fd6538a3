// The AVX2 instructions behind the CPU kernels' vector bodies (linear, attention, rmsnorm): two ymm
// hold the 16 lanes of one fixed-lane reduction (kernels/cpu/lanes.h: lanes 0-7 and 8-15), and
// trees() combines the lanes of 4 reductions side by side, operands in lanes.h's order. Included
// only by kernels/cpu/vector_avx2.cpp, after their target pragma. No FMA anywhere: the portable path
// rounds each product and each sum.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/bf16.h"

namespace samebits::cpu::simd {

struct Avx2 {
  struct X {  // 16 floats
    __m256 lo, hi;
  };
  using Acc = X;        // one reduction's 16 lanes
  using Sums = __m128;  // kGroup reductions' results, element i = reduction i
  static constexpr int kGroup = 4;
  static constexpr int kWidth = 16;  // floats per X

  static Acc zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static X load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static X load_tail(const float* p, int n) {  // n < 16 values, zeros after them
    float padded[16] = {};
    std::memcpy(padded, p, sizeof(float) * n);
    return load(padded);
  }
  static X broadcast(float v) { return {_mm256_set1_ps(v), _mm256_set1_ps(v)}; }
  static void store(float* p, const X& v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  static void store_tail(float* p, const X& v, int n) {
    float all[16];
    store(all, v);
    std::memcpy(p, all, sizeof(float) * n);
  }
  static void store(float* p, Sums s) { _mm_storeu_ps(p, s); }
  // bf16 -> fp32: the 16 bits become the upper half of a zero fp32. The 8 values are loaded into
  // both 128-bit halves and one byte shuffle per half moves 4 of them to the upper halves of its
  // elements, zeroing the rest (a zero extension and a shift would take two instructions: at one
  // row, linear is bound by these).
  static __m256 widen8(const bf16* p) {
    const __m256i upper_halves = _mm256_setr_epi8(-1, -1, 0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, 6, 7,  //
                                                  -1, -1, 8, 9, -1, -1, 10, 11, -1, -1, 12, 13, -1, -1, 14, 15);
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_shuffle_epi8(_mm256_broadcastsi128_si256(h), upper_halves));
  }
  static X widen(const bf16* p) { return {widen8(p), widen8(p + 8)}; }
  static X widen_tail(const bf16* p, int n) {  // n < 16 values, zeros after them
    bf16 padded[16] = {};
    std::memcpy(padded, p, sizeof(bf16) * n);
    return widen(padded);
  }
  static X add(const X& a, const X& b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static X mul(const X& a, const X& b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static void add_product(Acc& acc, const X& x, const X& w) {
    acc.lo = _mm256_add_ps(acc.lo, _mm256_mul_ps(x.lo, w.lo));
    acc.hi = _mm256_add_ps(acc.hi, _mm256_mul_ps(x.hi, w.hi));
  }

  // In each 128-bit half h: [a(4h) + a(4h+1), a(4h+2) + a(4h+3), b(4h) + b(4h+1), b(4h+2) + b(4h+3)].
  static __m256 pair_sums(__m256 a, __m256 b) {
    return _mm256_add_ps(_mm256_shuffle_ps(a, b, 0x88), _mm256_shuffle_ps(a, b, 0xDD));
  }
  // Element i = lanes.h's tree of acc[i]. pair_sums twice per register half leaves, for the four
  // reductions side by side, t4[0] | t4[1] (from the lo registers) and t4[2] | t4[3] (hi);
  // regrouping the 128-bit halves gives t4[0] + t4[1] | t4[2] + t4[3], and the sum of its halves
  // the tree.
  static Sums trees(const Acc* acc) {
    const __m256 lo = pair_sums(pair_sums(acc[0].lo, acc[1].lo), pair_sums(acc[2].lo, acc[3].lo));
    const __m256 hi = pair_sums(pair_sums(acc[0].hi, acc[1].hi), pair_sums(acc[2].hi, acc[3].hi));
    const __m256 halves = _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
    return _mm_add_ps(_mm256_castps256_ps128(halves), _mm256_extractf128_ps(halves, 1));
  }
  static Sums sum(Sums a, Sums b) { return _mm_add_ps(a, b); }
};

}  // namespace samebits::cpu::simd
