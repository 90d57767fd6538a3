// The arithmetic of rmsnorm's warp order (kernels/cuda/rmsnorm.cu's header), in pieces that the
// rmsnorm kernels and the fused q|k|v preparation (qkv_prep.cu) share, so a head row normalised by
// either gives the same bits: a lane's 8-value chunks summed h*h in order from +0 (one rounded
// multiply, one rounded add), the 32 lane sums combined by the xor butterfly, inv from IEEE
// division and square root, y = bf16(bf16(h * inv) * w).
#pragma once
#include <cstdint>

#include "kernels/bf16.h"
#include "kernels/cuda/bf16_round.cuh"

namespace samebits::cuda {

__device__ __forceinline__ float bf16_at(const uint4& v, int e) {
  const uint32_t w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return to_float(bf16{uint16_t(w >> (16 * (e % 2)))});
}

// The 8 values rounded to bf16 (to_bf16's bits: bf16_round.cuh), in memory order.
__device__ __forceinline__ uint4 pack_bf16x8(const float (&f)[8]) {
  return make_uint4(bf16x2_bits(f[0], f[1]), bf16x2_bits(f[2], f[3]), bf16x2_bits(f[4], f[5]), bf16x2_bits(f[6], f[7]));
}

// acc + h[0]^2 + ... + h[7]^2, left to right.
__device__ __forceinline__ float add_squares8(float acc, const uint4& h) {
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float v = bf16_at(h, e);
    const float sq = v * v;
    acc = acc + sq;
  }
  return acc;
}

// Every lane ends with the same bits (commutative adds in a fixed pattern). first_offset < 16 (a
// power of two, warp-uniform) sums aligned groups of 2 * first_offset lanes apart: where only the
// group's lanes of a 32-lane row hold values (the rest +0), the skipped steps add +0 to a sum of
// squares (>= +0), so each group's lanes get the bits the whole-warp order gives that row.
__device__ __forceinline__ float warp_butterfly_sum(float acc, int first_offset = 16) {
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) {
    if (o <= first_offset) acc = acc + __shfl_xor_sync(0xffffffffu, acc, o);
  }
  return acc;
}

__device__ __forceinline__ float inverse_rms(float ss, int64_t dim, float eps) {
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, float(dim)), eps)));
}

// y = bf16(h * inv) * w for 8 values in fp32; pack_bf16x8 rounds them (the stored bf16(...)).
__device__ __forceinline__ void normed8(const uint4& h, const uint4& w, float inv, float (&y)[8]) {
#pragma unroll
  for (int e = 0; e < 8; ++e) y[e] = round_bf16_fast(bf16_at(h, e) * inv) * bf16_at(w, e);
}

}  // namespace samebits::cuda
