// fixed_expf (kernels/fixed_math.h) over an array, vectorised where the CPU allows
// (kernels/cpu/isa.h). The vector code performs fixed_expf's operations lane by lane: the same
// clamp, the same fused multiply-adds (the FMA instruction, correctly rounded as std::fma) for the
// range reduction and the Horner polynomial, the same scaling by 2^n in two factors, and the same
// NaN result; tests compare it with fixed_expf bitwise.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/bf16.h"

namespace samebits::cpu {

// out[i] = fixed_expf(in[i]), i < n; out may equal in.
void fixed_expf_array(const float* in, float* out, int64_t n);

void fixed_expf_array_avx2(const float* in, float* out, int64_t n);
void fixed_expf_array_avx512(const float* in, float* out, int64_t n);

// silu_mul's row (kernels/cpu/silu_mul.cpp) with fixed_expf and both bf16 roundings lane by lane:
// y[i] = bf16(bf16(g / (1 + fixed_expf(-g))) * u), i < n, for every g (NaN, inf, any range).
void silu_mul_row_avx2(const bf16* g, const bf16* u, bf16* y, int64_t n);
void silu_mul_row_avx512(const bf16* g, const bf16* u, bf16* y, int64_t n);

}  // namespace samebits::cpu
