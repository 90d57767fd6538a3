// fixed_expf on W lanes with GCC vector types, included after a target pragma by vector_avx2.cpp and
// vector_avx512.cpp. Each line is the lane-wise image of a line of fixed_expf (kernels/fixed_math.h).
#pragma once
#include "kernels/cpu/bf16_lanes.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/fixed_math.h"

namespace samebits::cpu::simd {

// vf, vi: GCC vector types of W floats and W int32s.
template <typename vf, typename vi>
inline vf fixed_expf_lanes(vf x) {
  using namespace fixed_math_detail;
  const vf zero = {}, one = zero + 1.0f;
  const vi izero = {};
  const vf t = x * kLog2e;
  const vi n = __builtin_convertvector(t + (t >= 0.0f ? zero + 0.5f : zero - 0.5f), vi);  // truncates
  const vf nf = __builtin_convertvector(n, vf);
  const vf r = (x - nf * kLn2Hi) - nf * kLn2Lo;
  vf p = r * (1.0f / 5040.0f) + 1.0f / 720.0f;  // expf_poly, step by step
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + one;
  p = p * r + one;
  vi clamped = n < -126 ? izero - 126 : n;
  clamped = clamped > 127 ? izero + 127 : clamped;
  const vf first = (vf)((clamped + 127) << 23), second = (vf)((n - clamped + 127) << 23);
  vf result = (p * first) * second;
  result = x < -103.972084045410156f ? zero : result;
  result = x > 88.72283935546875f ? (vf)(izero + 0x7f800000) : result;
  result = x != x ? x : result;
  return result;
}

template <typename vf, typename vi>
inline void fixed_expf_lanes(const float* in, float* out) {
  vf x;
  std::memcpy(&x, in, sizeof x);
  const vf result = fixed_expf_lanes<vf, vi>(x);
  std::memcpy(out, &result, sizeof result);
}

// silu_mul (kernels/cpu/silu_mul.cpp) on W values: y = bf16(bf16(g / (1 + fixed_expf(-g))) * u).
template <typename vf, typename vi>
inline void silu_mul_lanes(const bf16* g, const bf16* u, bf16* y) {
  const vf gv = load_bf16_lanes<vf, vi>(g);
  const vf act = gv / (1.0f + fixed_expf_lanes<vf, vi>(-gv));
  const vf rounded_act = widen_bf16_lanes<vf, vi>(narrow_bf16_lanes<vf, vi>(act));
  store_bf16_lanes<vf, vi>(y, narrow_bf16_lanes<vf, vi>(rounded_act * load_bf16_lanes<vf, vi>(u)));
}

template <typename vf, typename vi>
inline void silu_mul_row(const bf16* g, const bf16* u, bf16* y, int64_t n) {
  constexpr int64_t W = sizeof(vf) / sizeof(float);
  int64_t i = 0;
  for (; i + W <= n; i += W) silu_mul_lanes<vf, vi>(g + i, u + i, y + i);
  if (i < n) {  // the tail through zero-padded lanes
    bf16 gp[W] = {}, up[W] = {}, yp[W];
    std::memcpy(gp, g + i, sizeof(bf16) * (n - i));
    std::memcpy(up, u + i, sizeof(bf16) * (n - i));
    silu_mul_lanes<vf, vi>(gp, up, yp);
    std::memcpy(y + i, yp, sizeof(bf16) * (n - i));
  }
}

template <typename vf, typename vi>
inline void fixed_expf_array(const float* in, float* out, int64_t n) {
  constexpr int64_t W = sizeof(vf) / sizeof(float);
  int64_t i = 0;
  for (; i + W <= n; i += W) fixed_expf_lanes<vf, vi>(in + i, out + i);
  for (; i < n; ++i) out[i] = fixed_expf(in[i]);
}

}  // namespace samebits::cpu::simd
