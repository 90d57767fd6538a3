// attention's Avx512 path (kernels/cpu/simd_avx512.h): q.k scores and the p.v accumulation of
// kernels/cpu/attention_simd_body.h, 4 slices of 16 dims per value block.
#include "kernels/cpu/attention_simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>  // system headers before the target pragma: their code stays baseline

#include <algorithm>
#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
// GCC 12's own intrinsics headers trip these (their "undefined" vectors); nothing in this file does.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/cpu/attention_simd_body.h"
#include "kernels/cpu/simd_avx512.h"

namespace samebits::cpu {

void attention_scores_avx512(const AttentionScoresJob& job) { simd::scores<simd::Avx512>(job); }
void attention_values_avx512(const AttentionValuesJob& job) { simd::values<simd::Avx512, 4>(job); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
namespace samebits::cpu {
void attention_scores_avx512(const AttentionScoresJob&) {}  // never chosen: isa_supported(kAvx512) is false
void attention_values_avx512(const AttentionValuesJob&) {}
}  // namespace samebits::cpu
#endif
