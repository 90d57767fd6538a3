// The project's own math functions. glibc picks different exp/sin code paths by CPU feature and
// version; a golden digest must not depend on the machine that computed it. Everything here is
// built from correctly rounded IEEE operations (+, -, *, /, sqrt and fused multiply-add, each
// written out: no contraction, -ffp-contract=off and nvcc --fmad=false) and bit manipulation, in a
// fixed order. fixed_expf is defined here, inline and host/device, so the CPU and CUDA backends run
// the same code.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/bf16.h"

namespace samebits {

// a * b + c rounded once. Correctly rounded on both sides (__fmaf_rn; std::fma, an FMA instruction
// or glibc's exact software fmaf), hence the same bits on every backend and ISA; written out where
// wanted, since compilers may not contract a * b + c on their own here.
SAMEBITS_HD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// splitmix64's output at position `counter` of the stream keyed by `key`: the synthetic weights'
// generator (models/tiny_qwen/weights.cpp on the host, kernels/cuda/synthetic_fill.cu on the
// device, which must agree bit for bit) and the device checks' operand streams. Integer mixing only.
SAMEBITS_HD uint64_t splitmix64_at(uint64_t key, uint64_t counter) {
  uint64_t z = key + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A float of sign bit s, unbiased exponent e (-126..127) and mantissa bits m: the operands that
// the division checks enumerate (tests/kernels/test_fixed_math.cpp on the host,
// kernels/cuda/attention_output_check.cu on the device).
SAMEBITS_HD float make_float(uint32_t s, int e, uint32_t m) {
  return bits_float((s << 31) | (uint32_t(e + 127) << 23) | (m & 0x7fffffu));
}

namespace fixed_math_detail {
struct FmaRn {
  SAMEBITS_HD float operator()(float a, float b, float c) const { return fma_rn(a, b, c); }
};

// fixed_expf's input range: below kExpLo the result is +0, above kExpHi +inf, and both bounds
// themselves give those results by plain rounding, so the input is clamped to them, not branched
// on (the exhaustive test checks every input between).
constexpr float kExpLo = -104.0f;  // < ln(2^-150): rounds to +0
constexpr float kExpHi = 89.0f;    // > ln(FLT_MAX): overflows to +inf
// 1.5 * 2^23: t + kRoundMagic rounds t to the nearest integer (ties to even) for |t| < 2^22, and
// that integer sits in the sum's low mantissa bits.
constexpr float kRoundMagic = 12582912.0f;
// Cody-Waite constants: ln2 split in a 16-bit head (0x3f317200) and a tail.
constexpr float kLog2e = 1.44269502162933349609375f;
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.428606765330187045e-06f;  // ln2 - kLn2Hi
// exp(r) ~ 1 + r + r^2 (c2 + r (c3 + ... + r c6)) on |r| <= ln2/2: relative minimax coefficients
// with 1 and r exact (so exp(0) = 1 and tiny r keep full accuracy), 3.1e-9 (0.05 ulp) from exp.
constexpr float kExpC2 = 0x1.fffffcp-2f, kExpC3 = 0x1.555492p-3f, kExpC4 = 0x1.5558f0p-5f;
constexpr float kExpC5 = 0x1.1239c8p-7f, kExpC6 = 0x1.6a247ep-10f;

// The floating-point part of fixed_expf on an already clamped xc, for a float or a vector of
// floats, with the caller's correctly rounded fma (vector code passes its FMA instruction: the
// same operations lane by lane). t = round(xc * log2e) + kRoundMagic; r = xc - n ln2 in two fmas
// (the first exact: xc - n * kLn2Hi is small and on xc's grid); p = exp(r) by Horner.
// Always inlined: the vector callers compile under a target pragma (kernels/cpu/vector_avx2.cpp) and
// the body must take their instructions; an out-of-line copy would have this file's baseline ISA.
template <typename F, typename Fma>
#if defined(__CUDACC__)
SAMEBITS_HD
#else
[[gnu::always_inline]] inline
#endif
void expf_reduce_poly(const F& xc, Fma fma, F* t, F* p) {
  const F zero = {};
  *t = fma(xc, zero + kLog2e, zero + kRoundMagic);
  const F nf = *t - kRoundMagic;
  F r = fma(nf, zero - kLn2Hi, xc);
  r = fma(nf, zero - kLn2Lo, r);
  F q = fma(zero + kExpC6, r, zero + kExpC5);
  q = fma(q, r, zero + kExpC4);
  q = fma(q, r, zero + kExpC3);
  q = fma(q, r, zero + kExpC2);
  q = fma(q, r, zero + 1.0f);
  *p = fma(q, r, zero + 1.0f);
}
}  // namespace fixed_math_detail

// fixed_expf(x) is +0 for every x < kExpUnderflow (exp(x) < 2^-150, half the smallest subnormal;
// the bound itself gives +0 too): sampling skips such candidates.
inline constexpr float kExpUnderflow = -103.972084045410156f;

namespace fixed_math_detail {
// fixed_expf's body with the fused multiply-add as a parameter: fixed_expf passes FmaRn; tests
// pass a twice-rounded a * b + c to show that their bitwise comparisons see the difference.
template <typename Fma>
SAMEBITS_HD float expf_with(float x, Fma fma) {
#if defined(__CUDA_ARCH__)
  const float xc = fminf(fmaxf(x, kExpLo), kExpHi);  // NaN becomes kExpLo (replaced at the end)
#else
  float xc = x > kExpLo ? x : kExpLo;
  xc = xc < kExpHi ? xc : kExpHi;
#endif
  float t, p;
  expf_reduce_poly(xc, fma, &t, &p);
  const int32_t n = int32_t(float_bits(t) - float_bits(kRoundMagic));
  const int32_t n1 = n >> 1, n2 = n - n1;
  const float scaled = bits_float(float_bits(p) + (uint32_t(n1) << 23));
  const float y = scaled * bits_float(uint32_t(n2 + 127) << 23);
  return x != x ? x : y;
}
}  // namespace fixed_math_detail

// exp(x) in fp32; |err| < 2 ulp wherever the result is a normal float (0.91 ulp measured over all
// 2^32 inputs), +inf above ln(FLT_MAX), +0 below kExpUnderflow, subnormal results rounded once, NaN for
// NaN (x itself). Straight-line code without branches (the CUDA compiler interleaves the
// independent exponentials of a softmax), ~20 instructions:
// clamp x to [kExpLo, kExpHi] (n stays in [-150, 128]); x = n ln2 + r and p = exp(r) by
// expf_reduce_poly; then p * 2^n as (p * 2^n1) * 2^n2 with n1 = n >> 1, n2 = n - n1: the first
// factor by an integer add into p's exponent bits (exact, normal: |n1| <= 75), the second a
// normal power of two whose product rounds once (to inf on overflow, to a subnormal below).
SAMEBITS_HD float fixed_expf(float x) { return fixed_math_detail::expf_with(x, fixed_math_detail::FmaRn{}); }

// a / l through l's reciprocal, as CUDA's __fdiv_rn computes it on its fast path: r = r0 + r0 *
// (1 - r0 * l) refined from an approximation r0 of 1 / l (refine_reciprocal), then q = r * a + 0
// and one correction, q + r * (a - q * l) (divide_by_reciprocal). With r = RN(1 / l), which r0 =
// RN(1 / l) refines to, and every intermediate normal and finite (2^-60 <= |l| <= 2^60 and 2^-64
// <= |a| < 2^64 suffice), the result is a / l correctly rounded (Markstein's correction step;
// tests/kernels/test_fixed_math.cpp checks it). With r0 an ulp off, the refined r misses RN(1 / l)
// for a few dozen of the 2^23 mantissas of l, and the quotient can then misround. The CUDA prefill
// kernel divides a row of outputs by one l so, r0 from the device's reciprocal
// (kernels/cuda/attention_kernel.cuh, OutputRow; its gpu tests compare it with __fdiv_rn and find
// the refined r = RN(1 / l) for every l of its range).
SAMEBITS_HD float refine_reciprocal(float r0, float l) { return fma_rn(r0, fma_rn(r0, -l, 1.0f), r0); }
SAMEBITS_HD float divide_by_reciprocal(float a, float l, float r) {
  const float q = fma_rn(r, a, 0.0f);
  return fma_rn(r, fma_rn(q, -l, a), q);
}

// Double-precision helpers used only for tables computed once (rope); ~1e-15 relative accuracy.
double fixed_exp(double x);
double fixed_log(double x);                      // NaN for x < 0, -inf for 0
void fixed_sincos(double x, double* s, double* c);  // range reduction by pi/2 (covers 2*pi)

// Rope table [max_position, head_dim]: cos(p * inv_freq[i]) for i < head_dim/2, then sin.
// inv_freq[i] = theta^(-2i/head_dim), as HF computes it. Empty for non-positive or odd sizes.
std::vector<float> make_rope_table(double theta, int head_dim, int64_t max_position);

// Uniform in [0,1) keyed by (seed, step) only: counter-based, never by batch row or call order.
// XXH3_64bits_withSeed over the 8 little-endian bytes of step; top 53 bits / 2^53.
double sampling_uniform(uint64_t seed, uint64_t step);

}  // namespace samebits
