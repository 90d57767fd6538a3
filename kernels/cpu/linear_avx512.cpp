// linear's AVX-512 path (F, BW, VL): one zmm holds an output's 16 lanes; the pairwise tree runs
// inside the register (adjacent pairs, then pairs of pairs, then 128-bit halves), operands in the
// scalar tree's order. See kernels/cpu/linear_simd.h for why the bits equal the portable path's.
#include "kernels/cpu/linear_simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
// GCC 12's own intrinsics headers trip these (their "undefined" vectors); nothing in this file does.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/cpu/linear_simd_body.h"

namespace samebits::cpu {
namespace {

struct Avx512 {
  using X = __m512;
  using Acc = __m512;
  static Acc zero() { return _mm512_setzero_ps(); }
  static X load_x(const float* p) { return _mm512_loadu_ps(p); }
  static X load_x_tail(const float* p, int n) { return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p); }
  // bf16 -> fp32: the 16 bits become the upper half of a zero fp32.
  static X widen_w(const bf16* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static X widen_w_tail(const bf16* p, int n) {
    const __m256i h = _mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static void add_product(Acc& acc, X x, X w) { acc = _mm512_add_ps(acc, _mm512_mul_ps(x, w)); }
  static float tree(Acc v) {
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));        // lanes 2i:  l2i + l2i+1
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));        // lanes 4i:  t8[2i] + t8[2i+1]
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));  // lanes 8i:  t4[2i] + t4[2i+1]
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));  // lane 0: the whole tree
    return _mm512_cvtss_f32(v);
  }
};

}  // namespace

void linear_tile_avx512(const LinearTile& t) { simd::tile<Avx512, 4, 4>(t); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
namespace samebits::cpu {
void linear_tile_avx512(const LinearTile&) {}  // never chosen: isa_supported(kAvx512) is false
}  // namespace samebits::cpu
#endif
