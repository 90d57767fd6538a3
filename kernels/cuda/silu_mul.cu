// silu_mul on CUDA: y = bf16(bf16(silu(g)) * u), silu(g) = g / (1 + fixed_expf(-g)) with the
// CPU's fixed_expf (kernels/fixed_math.h, host + device, no FMA contraction: --fmad=false) and IEEE
// division, so the bits equal the CPU's. Pointwise, no reduction: identical in both modes; one
// thread per element.
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

}  // namespace

absl::Status cuda_silu_mul(const ExecContext& ctx, const SiluMulArgs& a) {
  if (absl::Status shape = check_silu_mul_shape(a); !shape.ok()) return shape;
  const int64_t n = a.T * a.F;
  silu_mul_kernel<<<unsigned(cuda::ceil_div64(n, 256)), 256, 0, cuda::stream_of(ctx)>>>(a.gate, a.up, a.y, n);
  return cuda::check_launch("silu_mul_kernel");
}

}  // namespace samebits
