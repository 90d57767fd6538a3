// bf16 rounding on the device in one instruction per value pair: cvt.rn.bf16x2.f32 rounds to
// nearest, ties to even, with overflow to infinity and subnormals kept, exactly as kernels/bf16.h's
// to_bf16 does for every float but NaN (cvt gives the canonical NaN where to_bf16 keeps the sign and
// the top payload bits); pairs holding a NaN take to_bf16 itself. Same bits as to_bf16 for all 2^32
// floats (gpu test GpuBf16Round). Why: to_bf16's integer rounding costs about 7 instructions per
// value, and the element-wise kernels that use this (rmsnorm, qkv_prep, silu_mul; the attention
// kernels' outputs) are bound by instruction issue, not by memory.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"

namespace samebits::cuda {

// The cvt instructions alone: to_bf16's bits for every float but NaN, which comes out as the
// canonical bf16 NaN 0x7fff. For callers whose NaNs are all the GPU's canonical NaN (to_bf16 rounds
// that one to 0x7fff too; silu_mul.cu), so that no NaN test branches their arithmetic.
__device__ __forceinline__ uint32_t bf16x2_cvt(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ uint16_t bf16_bits_cvt(float f) {
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float round_bf16_cvt(float f) { return __uint_as_float(uint32_t(bf16_bits_cvt(f)) << 16); }

// bf16(lo) in the low 16 bits, bf16(hi) in the high 16 bits (the memory order of two bf16 values).
__device__ __forceinline__ uint32_t bf16x2_bits(float lo, float hi) {
  if (isnan(lo) || isnan(hi)) return uint32_t(to_bf16(lo).bits) | (uint32_t(to_bf16(hi).bits) << 16);
  return bf16x2_cvt(lo, hi);
}

// to_bf16(f) by one cvt for every f but NaN (to_bf16 itself): to_bf16's bits for every float.
__device__ __forceinline__ bf16 to_bf16_fast(float f) {
  if (isnan(f)) return to_bf16(f);
  return bf16{bf16_bits_cvt(f)};
}

// round_bf16 (kernels/bf16.h): f rounded to bf16 and widened back.
__device__ __forceinline__ float round_bf16_fast(float f) {
  if (isnan(f)) return round_bf16(f);
  return round_bf16_cvt(f);
}

}  // namespace samebits::cuda
