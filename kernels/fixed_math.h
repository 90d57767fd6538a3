// The project's own math functions. glibc picks different exp/sin code paths by CPU feature and
// version; a golden digest must not depend on the machine that computed it. Everything here is
// built from +, -, *, / and sqrt (all correctly rounded in IEEE arithmetic) and bit manipulation,
// in a fixed order, with no contraction into FMA (-ffp-contract=off, nvcc --fmad=false).
// fixed_expf is defined here, inline and host/device, so the CPU and CUDA backends run the same code.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/bf16.h"

namespace samebits {

namespace fixed_math_detail {
// 2^n as a float for n in [-126, 127] (a normal power of two, built from its exponent bits).
SAMEBITS_HD float pow2f(int n) { return bits_float(uint32_t(n + 127) << 23); }

// Cody-Waite constants: ln2 split in a 16-bit head (0x3f317200, so n * kLn2Hi is exact) and a tail.
constexpr float kLog2e = 1.44269502162933349609375f;
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.428606765330187045e-06f;  // ln2 - kLn2Hi

// exp(r) for |r| <= ~0.347: the degree-7 Taylor polynomial in Horner form (truncation error
// < 6e-9 relative). A template so that vector code (kernels/cpu/silu_mul.cpp, GCC vector types)
// runs the identical operation sequence element by element.
template <typename F>
SAMEBITS_HD F expf_poly(F r) {
  F p = r * (1.0f / 5040.0f) + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}
}  // namespace fixed_math_detail

// exp(x) in fp32; |err| < 2 ulp wherever the result is a normal float, exact inf above
// ln(FLT_MAX), +0 far below the smallest subnormal, NaN for NaN.
// Cody-Waite range reduction x = n*ln2 + r, |r| <= ~0.347; exp(r) by expf_poly; then
// multiplication by 2^n from exponent bits, in two exact-or-once-rounded steps so that overflow
// and subnormal results round once.
SAMEBITS_HD float fixed_expf(float x) {
  using namespace fixed_math_detail;
  if (x != x) return x;                                        // NaN
  if (x > 88.72283935546875f) return bits_float(0x7f800000u);  // beyond ln(FLT_MAX): +inf
  if (x < -103.972084045410156f) return 0.0f;                  // below ln(min subnormal / 2): +0
  float t = x * kLog2e;
  int n = int(t + (t >= 0.0f ? 0.5f : -0.5f));                 // round half away from zero
  float nf = float(n);
  float r = (x - nf * kLn2Hi) - nf * kLn2Lo;
  float p = expf_poly(r);
  if (n > 127) return (p * pow2f(127)) * pow2f(n - 127);   // may overflow to inf: one rounding
  if (n < -126) return (p * pow2f(-126)) * pow2f(n + 126); // exact, then one subnormal rounding
  return p * pow2f(n);
}

// fixed_expf with selects instead of branches: the same operations on the same values, so the same
// bits for every input (FixedExpf.SelectFormEqualsBranchForm), but a straight line of code that
// the CUDA compiler can interleave across the independent exponentials of a softmax (the branches
// of fixed_expf kept each one a serial chain: ~100 cycles of dependent latency apiece).
SAMEBITS_HD float fixed_expf_select(float x) {
  using namespace fixed_math_detail;
  const bool nan = x != x;
  const bool over = x > 88.72283935546875f;
  const bool under = x < -103.972084045410156f;
  const float xr = (nan || over || under) ? 0.0f : x;  // the reduction runs on a finite stand-in
  float t = xr * kLog2e;
  int n = int(t + (t >= 0.0f ? 0.5f : -0.5f));
  float nf = float(n);
  float r = (xr - nf * kLn2Hi) - nf * kLn2Lo;
  float p = expf_poly(r);
  // fixed_expf's three scalings as (p * s1) * s2; the in-range one has s2 = 1 (exact).
  const bool big = n > 127, small = n < -126;
  const float s1 = pow2f(big ? 127 : (small ? -126 : n));
  const float s2 = big ? pow2f(n - 127) : (small ? pow2f(n + 126) : 1.0f);
  const float y = (p * s1) * s2;
  return nan ? x : (over ? bits_float(0x7f800000u) : (under ? 0.0f : y));
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
