// silu_mul's arithmetic for one element on the device, shared by the silu_mul kernel and the fused
// gate/up epilogue of the invariant linear (one place for it): y = bf16(bf16(silu(g)) * u),
// silu(g) = g / (1 + fixed_expf(-g)) with IEEE division. Every file that includes it is built with
// --fmad=false (cmake/Numerics.cmake), so the bits equal the CPU's. fixed_expf has no branches, so
// the compiler can interleave the independent elements of one thread (the fused epilogue holds 64
// of them per tile).
#pragma once
#include "kernels/bf16.h"
#include "kernels/fixed_math.h"

namespace samebits::cuda {

__device__ __forceinline__ bf16 silu_mul_value(float g, float u) {
  const float act = __fdiv_rn(g, 1.0f + fixed_expf(-g));
  return to_bf16(round_bf16(act) * u);
}

}  // namespace samebits::cuda
