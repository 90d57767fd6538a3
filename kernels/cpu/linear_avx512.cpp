// linear's AVX-512 path (F, BW, VL): one zmm holds an output's 16 lanes; blocks of 4 rows x 4
// columns (16 accumulators); the 16 outputs' pairwise trees run side by side, element i of each
// step holding output i (see trees()). See kernels/cpu/linear_simd.h for why the bits equal the
// portable path's. No FMA: the portable path rounds the product and the sum separately.
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
  using Sums = __m512;
  static constexpr int kGroup = 16;
  static Acc zero() { return _mm512_setzero_ps(); }
  static X load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, X v) { _mm512_storeu_ps(p, v); }
  // bf16 -> fp32: the 16 bits become the upper half of a zero fp32.
  static X widen(const bf16* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static X widen_tail(const bf16* p, int n) {  // n < 16 values, zeros after them
    const __m256i h = _mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static void add_product(Acc& acc, X x, X w) { acc = _mm512_add_ps(acc, _mm512_mul_ps(x, w)); }

  // In each 128-bit block b: [a(4b) + a(4b+1), a(4b+2) + a(4b+3), b(4b) + b(4b+1), b(4b+2) + b(4b+3)].
  static __m512 pair_sums(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
  }
  // Blocks [a0 + a1, a2 + a3, b0 + b1, b2 + b3] of 128-bit blocks.
  static __m512 block_sums(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
  }
  // Element i = lanes.h's tree of acc[i]. Per output: t8 (adjacent lanes) by pair_sums of two
  // outputs; t4 (adjacent t8) by pair_sums of two such results, which leaves block b of output
  // group (4j..4j+3) holding their t4[b]; t4[0] + t4[1] and t4[2] + t4[3] by block_sums of two
  // groups; their sum by block_sums again, which leaves group j in block j.
  static Sums trees(const Acc* acc) {
    __m512 t8[8], t4[4], half[2];
    SAMEBITS_UNROLL
    for (int i = 0; i < 8; ++i) t8[i] = pair_sums(acc[2 * i], acc[2 * i + 1]);
    SAMEBITS_UNROLL
    for (int i = 0; i < 4; ++i) t4[i] = pair_sums(t8[2 * i], t8[2 * i + 1]);
    SAMEBITS_UNROLL
    for (int i = 0; i < 2; ++i) half[i] = block_sums(t4[2 * i], t4[2 * i + 1]);
    return block_sums(half[0], half[1]);
  }
  static Sums sum(Sums a, Sums b) { return _mm512_add_ps(a, b); }
};

}  // namespace

void linear_tile_avx512(const LinearTile& t) { simd::tile<Avx512, 4>(t); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
namespace samebits::cpu {
void linear_tile_avx512(const LinearTile&) {}  // never chosen: isa_supported(kAvx512) is false
}  // namespace samebits::cpu
#endif
