// fixed_expf over a range of consecutive fp32 bit patterns on the device, for the test that the
// device's exp equals the host's over all 2^32 inputs: out[i] = fixed_expf(bits_float(first + i)).
// One thread per value, grid-stride; nothing to reduce or order. The planted form (tests only)
// rounds each multiply-add twice, as a device build that lost the written-out fmas would.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/fixed_math.h"

namespace samebits {
namespace {

struct TwiceRoundedFma {
  __device__ float operator()(float a, float b, float c) const { return __fadd_rn(__fmul_rn(a, b), c); }
};

__global__ void fixed_expf_range_kernel(uint32_t first, int64_t n, float* out, bool planted) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = bits_float(first + uint32_t(i));
    out[i] = planted ? fixed_math_detail::expf_with(x, TwiceRoundedFma{}) : fixed_expf(x);
  }
}

}  // namespace

absl::Status cuda_fixed_expf_range(uint32_t first, int64_t n, float* out, bool planted) {
  if (out == nullptr) return absl::InvalidArgumentError("fixed_expf_range: out is null");
  if (n < 0 || n > (int64_t(1) << 32)) return absl::InvalidArgumentError(absl::StrCat("fixed_expf_range: n = ", n));
  if (n == 0) return absl::OkStatus();
  const int64_t blocks = std::min<int64_t>(cuda::ceil_div64(n, 256), 132 * 32);
  fixed_expf_range_kernel<<<unsigned(blocks), 256>>>(first, n, out, planted);
  return cuda::check_launch("fixed_expf_range_kernel");
}

}  // namespace samebits
