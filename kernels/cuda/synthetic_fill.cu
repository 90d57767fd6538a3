// Synthetic weights generated on the device, bit-identical to models/tiny_qwen/weights.cpp:
// value i = bf16(offset + scale * u), u = (int32(splitmix64 at counter i of tensor_key) >> 40) -
// 2^23) / 2^23, exact in fp32; one rounded multiply, one rounded add (--fmad=false), one rounding
// to bf16. Pure integer mixing, one thread per value: no reduction, nothing to order.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/fixed_math.h"

namespace samebits {
namespace {

__global__ void fill_synthetic_kernel(bf16* dst, int64_t n, uint64_t key, float scale, float offset) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t z = splitmix64_at(key, uint64_t(i));
    const float u = __fdiv_rn(float(int32_t(z >> 40) - (1 << 23)), float(1 << 23));
    const float scaled = scale * u;
    dst[i] = to_bf16(round_bf16(offset + scaled));
  }
}

}  // namespace

absl::Status cuda_fill_synthetic(void* dst, int64_t n, uint64_t tensor_key, float scale, float offset) {
  if (dst == nullptr) return absl::InvalidArgumentError("fill_synthetic: dst is null");
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("fill_synthetic: n = ", n, " is negative"));
  if (n == 0) return absl::OkStatus();
  const int64_t blocks = std::min<int64_t>(cuda::ceil_div64(n, 256), 132 * 32);
  fill_synthetic_kernel<<<unsigned(blocks), 256>>>(static_cast<bf16*>(dst), n, tensor_key, scale, offset);
  return cuda::check_launch("fill_synthetic_kernel");
}

}  // namespace samebits
