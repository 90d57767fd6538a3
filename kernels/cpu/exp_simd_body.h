// fixed_expf on W lanes with GCC vector types, included after a target pragma (FMA included) by
// vector_avx2.cpp and vector_avx512.cpp. The floating-point part is fixed_expf's own
// expf_reduce_poly with the FMA instruction (correctly rounded, as std::fma and __fmaf_rn); each
// other line is the lane-wise image of a line of fixed_expf (kernels/fixed_math.h).
#pragma once
#include <immintrin.h>

#include "kernels/cpu/bf16_lanes.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/fixed_math.h"

namespace samebits::cpu::simd {

// a * b + c rounded once, lane by lane: 8 lanes (AVX2 + FMA) or 16 (AVX-512).
struct FmaLanes {
  template <typename vf>
  vf operator()(vf a, vf b, vf c) const {
    if constexpr (sizeof(vf) == 32) {
      return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
    } else {
      static_assert(sizeof(vf) == 64);
      return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
    }
  }
};

// vf, vi: GCC vector types of W floats and W int32s.
template <typename vf, typename vi>
inline vf fixed_expf_lanes(vf x) {
  using namespace fixed_math_detail;
  const vf zero = {};
  vf xc = x > kExpLo ? x : zero + kExpLo;
  xc = xc < kExpHi ? xc : zero + kExpHi;
  vf t, p;
  expf_reduce_poly(xc, FmaLanes{}, &t, &p);
  const vi n = (vi)t - (vi)(zero + kRoundMagic);
  const vi n1 = n >> 1, n2 = n - n1;
  const vf scaled = (vf)((vi)p + (n1 << 23));
  const vf y = scaled * (vf)((n2 + 127) << 23);
  return x != x ? x : y;
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
