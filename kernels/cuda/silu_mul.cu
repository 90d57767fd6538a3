// silu_mul on CUDA: y = bf16(bf16(silu(g)) * u), silu(g) = g / (1 + fixed_expf(-g)) with the
// CPU's fixed_expf (kernels/fixed_math.h, host + device, no FMA contraction: --fmad=false) and IEEE
// division, so the bits equal the CPU's. Pointwise, no reduction: identical in both modes; one
// thread per 8 elements with 16-byte loads and stores where the sizes and pointers allow, else
// one thread per element (the same arithmetic per element either way).
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/fixed_math.h"
#include "kernels/op_checks.h"

namespace samebits {
namespace {

__global__ void silu_mul_kernel(const bf16* gate, const bf16* up, bf16* y, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = to_float(gate[i]);
  const float act = __fdiv_rn(g, 1.0f + fixed_expf(-g));
  y[i] = to_bf16(round_bf16(act) * to_float(up[i]));
}

__device__ __forceinline__ uint16_t silu_mul_bits(uint16_t g_bits, uint16_t u_bits) {
  const float g = to_float(bf16{g_bits});
  const float act = __fdiv_rn(g, 1.0f + fixed_expf(-g));
  return to_bf16(round_bf16(act) * to_float(bf16{u_bits})).bits;
}

__global__ void silu_mul_vec_kernel(const uint4* gate, const uint4* up, uint4* y, int64_t n8) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n8) return;
  const uint4 g = gate[i], u = up[i];
  const uint32_t gw[4] = {g.x, g.y, g.z, g.w}, uw[4] = {u.x, u.y, u.z, u.w};
  uint32_t out[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    out[k] = uint32_t(silu_mul_bits(uint16_t(gw[k]), uint16_t(uw[k]))) |
             (uint32_t(silu_mul_bits(uint16_t(gw[k] >> 16), uint16_t(uw[k] >> 16))) << 16);
  }
  y[i] = make_uint4(out[0], out[1], out[2], out[3]);
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

}  // namespace

absl::Status cuda_silu_mul(const ExecContext& ctx, const SiluMulArgs& a) {
  if (absl::Status shape = check_silu_mul_shape(a); !shape.ok()) return shape;
  const int64_t n = a.T * a.F;
  if (n % 8 == 0 && aligned16(a.gate) && aligned16(a.up) && aligned16(a.y)) {
    silu_mul_vec_kernel<<<unsigned(cuda::ceil_div64(n / 8, 256)), 256, 0, cuda::stream_of(ctx)>>>(
        reinterpret_cast<const uint4*>(a.gate), reinterpret_cast<const uint4*>(a.up), reinterpret_cast<uint4*>(a.y),
        n / 8);
    return cuda::check_launch("silu_mul_vec_kernel");
  }
  silu_mul_kernel<<<unsigned(cuda::ceil_div64(n, 256)), 256, 0, cuda::stream_of(ctx)>>>(a.gate, a.up, a.y, n);
  return cuda::check_launch("silu_mul_kernel");
}

}  // namespace samebits
