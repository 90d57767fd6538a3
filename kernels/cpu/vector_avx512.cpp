// The CPU kernels' Avx512 entry points (kernels/cpu/isa.h chooses them at run time): every vector
// body (linear, attention, rmsnorm, fixed_expf and silu_mul) compiled once here under one target
// pragma, with the instructions of kernels/cpu/simd_avx512.h: one zmm per 16-lane reduction, 16-lane pointwise vectors; linear blocks of 4 rows x 4 columns, value blocks of 4 slices of 16 dims.
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
#pragma GCC target("avx512f,avx512bw,avx512vl")
// GCC 12's own intrinsics headers trip these (their "undefined" vectors); nothing in this file does.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/cpu/attention_simd_body.h"
#include "kernels/cpu/exp_simd_body.h"
#include "kernels/cpu/linear_simd_body.h"
#include "kernels/cpu/rmsnorm_simd_body.h"
#include "kernels/cpu/simd_avx512.h"

namespace samebits::cpu {
namespace {
typedef float vf __attribute__((vector_size(64)));  // the pointwise steps' 16 lanes
typedef int32_t vi __attribute__((vector_size(64)));
using V = simd::Avx512;
}  // namespace

void linear_tile_avx512(const LinearTile& t) {
  simd::tile<V, 4>(t);
  simd::finish_tile<vf, vi>(t);
}
void linear_widen_row_avx512(const bf16* x, int64_t K, float* out) { simd::widen_row<V>(x, K, out); }
void attention_scores_avx512(const AttentionScoresJob& job) { simd::scores<V>(job); }
void attention_values_avx512(const AttentionValuesJob& job) { simd::values<V, 4>(job); }
void rmsnorm_block_avx512(const RmsNormBlock& b) { simd::rmsnorm_block<V, vf, vi>(b); }
void fixed_expf_array_avx512(const float* in, float* out, int64_t n) { simd::fixed_expf_array<vf, vi>(in, out, n); }
void silu_mul_row_avx512(const bf16* g, const bf16* u, bf16* y, int64_t n) { simd::silu_mul_row<vf, vi>(g, u, y, n); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
// Never chosen: isa_supported(Isa::kAvx512) is false where these are compiled.
namespace samebits::cpu {
void linear_tile_avx512(const LinearTile&) {}
void linear_widen_row_avx512(const bf16*, int64_t, float*) {}
void attention_scores_avx512(const AttentionScoresJob&) {}
void attention_values_avx512(const AttentionValuesJob&) {}
void rmsnorm_block_avx512(const RmsNormBlock&) {}
void fixed_expf_array_avx512(const float*, float*, int64_t) {}
void silu_mul_row_avx512(const bf16*, const bf16*, bf16*, int64_t) {}
}  // namespace samebits::cpu
#endif
