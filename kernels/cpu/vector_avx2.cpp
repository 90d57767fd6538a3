// The CPU kernels' Avx2 entry points (kernels/cpu/isa.h chooses them at run time): every vector
// body (linear, attention, rmsnorm, fixed_expf and silu_mul) compiled once here under one target
// pragma, with the instructions of kernels/cpu/simd_avx2.h: two ymm per 16-lane reduction, 8-lane pointwise vectors; linear rows below the panel's minimum in blocks of 1 row x 4 columns (8 accumulators of the 16 registers) and tiles through the panel in blocks of 2 rows x 4 columns x half of the lanes (kernels/cpu/linear_avx2_body.h), value blocks of 2 slices of 16 dims.
// Each body's header says why its bits equal the portable path's.
#include "kernels/cpu/attention_simd.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/cpu/linear_simd.h"
#include "kernels/cpu/rmsnorm_simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// fixed_expf's template body (kernels/fixed_math.h, read before the target pragma) is always
// inlined into this file's vector functions: no vector value crosses a call, whatever -Wpsabi says.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>  // system headers before the target pragma: their code stays baseline

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fixed_math.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")  // fma: fixed_expf's written-out fused multiply-adds only

#include "kernels/cpu/attention_simd_body.h"
#include "kernels/cpu/exp_simd_body.h"
#include "kernels/cpu/linear_avx2_body.h"
#include "kernels/cpu/linear_simd_body.h"
#include "kernels/cpu/rmsnorm_simd_body.h"
#include "kernels/cpu/simd_avx2.h"

namespace samebits::cpu {
namespace {
typedef float vf __attribute__((vector_size(32)));  // the pointwise steps' 8 lanes
typedef int32_t vi __attribute__((vector_size(32)));
using V = simd::Avx2;
}  // namespace

void linear_tile_avx2(const LinearTile& t) {
  if (t.rows < kLinearPanelMinRows) {
    simd::tile<V, 1>(t);
  } else {
    simd::panel_tile_avx2(t);
  }
  simd::finish_tile<vf, vi>(t);
}
void linear_widen_row_avx2(const bf16* x, int64_t K, float* out) { simd::widen_row<V>(x, K, out); }
void attention_scores_avx2(const AttentionScoresJob& job) { simd::scores<V>(job); }
void attention_values_avx2(const AttentionValuesJob& job) { simd::values<V, 2>(job); }
void rmsnorm_block_avx2(const RmsNormBlock& b) { simd::rmsnorm_block<V, vf, vi>(b); }
void fixed_expf_array_avx2(const float* in, float* out, int64_t n) { simd::fixed_expf_array<vf, vi>(in, out, n); }
void silu_mul_row_avx2(const bf16* g, const bf16* u, bf16* y, int64_t n) { simd::silu_mul_row<vf, vi>(g, u, y, n); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
// Never chosen: isa_supported(Isa::kAvx2) is false where these are compiled.
namespace samebits::cpu {
void linear_tile_avx2(const LinearTile&) {}
void linear_widen_row_avx2(const bf16*, int64_t, float*) {}
void attention_scores_avx2(const AttentionScoresJob&) {}
void attention_values_avx2(const AttentionValuesJob&) {}
void rmsnorm_block_avx2(const RmsNormBlock&) {}
void fixed_expf_array_avx2(const float*, float*, int64_t) {}
void silu_mul_row_avx2(const bf16*, const bf16*, bf16*, int64_t) {}
}  // namespace samebits::cpu
#endif
