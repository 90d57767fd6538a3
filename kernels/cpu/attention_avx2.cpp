// attention's Avx2 path (kernels/cpu/simd_avx2.h): q.k scores and the p.v accumulation of
// kernels/cpu/attention_simd_body.h, 2 slices of 16 dims per value block.
#include "kernels/cpu/attention_simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>  // system headers before the target pragma: their code stays baseline

#include <algorithm>
#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx2")

#include "kernels/cpu/attention_simd_body.h"
#include "kernels/cpu/simd_avx2.h"

namespace samebits::cpu {

void attention_scores_avx2(const AttentionScoresJob& job) { simd::scores<simd::Avx2>(job); }
void attention_values_avx2(const AttentionValuesJob& job) { simd::values<simd::Avx2, 2>(job); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
namespace samebits::cpu {
void attention_scores_avx2(const AttentionScoresJob&) {}  // never chosen: isa_supported(kAvx2) is false
void attention_values_avx2(const AttentionValuesJob&) {}
}  // namespace samebits::cpu
#endif
