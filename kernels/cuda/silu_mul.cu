// silu_mul on CUDA: y = bf16(bf16(silu(g)) * u), silu(g) = g / (1 + fixed_expf(-g)) with the
// CPU's fixed_expf (kernels/fixed_math.h, host + device, no FMA contraction: --fmad=false) and IEEE
// division, so the bits equal the CPU's. Pointwise, no reduction: identical in both modes; one
// thread per element.
#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/fixed_math.h"

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
  if (a.gate == nullptr) return absl::InvalidArgumentError("silu_mul: gate is null");
  if (a.up == nullptr) return absl::InvalidArgumentError("silu_mul: up is null");
  if (a.y == nullptr) return absl::InvalidArgumentError("silu_mul: y is null");
  if (a.T <= 0) return absl::InvalidArgumentError(absl::StrCat("silu_mul: T must be positive, got ", a.T));
  if (a.F <= 0) return absl::InvalidArgumentError(absl::StrCat("silu_mul: F must be positive, got ", a.F));
  const int64_t n = a.T * a.F;
  silu_mul_kernel<<<unsigned(cuda::ceil_div64(n, 256)), 256, 0, cuda::stream_of(ctx)>>>(a.gate, a.up, a.y, n);
  return cuda::check_launch("silu_mul_kernel");
}

}  // namespace samebits
