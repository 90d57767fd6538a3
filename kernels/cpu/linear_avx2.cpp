// linear's AVX2 path: two ymm hold an output's 16 lanes (lanes 0-7, 8-15); the pairwise tree runs
// inside each (adjacent pairs, pairs of pairs, 128-bit halves), then adds the two halves' sums, in
// the scalar tree's operand order. See kernels/cpu/linear_simd.h for why the bits equal the
// portable path's. No FMA: the portable path rounds the product and the sum separately.
#include "kernels/cpu/linear_simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx2")
#include "kernels/cpu/linear_simd_body.h"

namespace samebits::cpu {
namespace {

struct Avx2 {
  struct X {
    __m256 lo, hi;
  };
  using Acc = X;
  static Acc zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static X load_x(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static X load_x_tail(const float* p, int n) {
    float padded[16] = {};
    std::memcpy(padded, p, sizeof(float) * n);
    return load_x(padded);
  }
  static __m256 widen8(const bf16* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static X widen_w(const bf16* p) { return {widen8(p), widen8(p + 8)}; }
  static X widen_w_tail(const bf16* p, int n) {
    bf16 padded[16] = {};
    std::memcpy(padded, p, sizeof(bf16) * n);
    return widen_w(padded);
  }
  static void add_product(Acc& acc, const X& x, const X& w) {
    acc.lo = _mm256_add_ps(acc.lo, _mm256_mul_ps(x.lo, w.lo));
    acc.hi = _mm256_add_ps(acc.hi, _mm256_mul_ps(x.hi, w.hi));
  }
  // Lane 0 of the result: t4[0] + t4[1] of the eight lanes' tree.
  static __m256 half_tree(__m256 v) {
    v = _mm256_add_ps(v, _mm256_permute_ps(v, 0xB1));
    v = _mm256_add_ps(v, _mm256_permute_ps(v, 0x4E));
    return _mm256_add_ps(v, _mm256_permute2f128_ps(v, v, 0x01));
  }
  static float tree(const Acc& a) { return _mm256_cvtss_f32(_mm256_add_ps(half_tree(a.lo), half_tree(a.hi))); }
};

}  // namespace

void linear_tile_avx2(const LinearTile& t) { simd::tile<Avx2, 2, 2>(t); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
namespace samebits::cpu {
void linear_tile_avx2(const LinearTile&) {}  // never chosen: isa_supported(kAvx2) is false
}  // namespace samebits::cpu
#endif
