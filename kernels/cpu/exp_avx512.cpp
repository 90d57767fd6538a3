// fixed_expf_array's avx512 path: 16 lanes per vector (see kernels/cpu/exp_simd.h).
#include "kernels/cpu/exp_simd.h"
#include "kernels/fixed_math.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
#include "kernels/cpu/exp_simd_body.h"

namespace samebits::cpu {
namespace {
typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));
}  // namespace
void fixed_expf_array_avx512(const float* in, float* out, int64_t n) { simd::fixed_expf_array<vf, vi>(in, out, n); }
}  // namespace samebits::cpu

#pragma GCC pop_options
#else
namespace samebits::cpu {
void fixed_expf_array_avx512(const float*, float*, int64_t) {}  // never chosen: isa_supported is false
}  // namespace samebits::cpu
#endif
