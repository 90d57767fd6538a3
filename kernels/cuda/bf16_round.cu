// The exhaustive check behind bf16_round.cuh (gpu test GpuBf16Round): every 32-bit pattern in
// [0, 2^32) with the given step, as one float, rounded by round_bf16_fast and, paired with a second
// float (its bits rotated by 16, so that NaN, infinity and finite values meet in both halves), by
// bf16x2_bits, each compared with kernels/bf16.h's to_bf16. Integer counts by atomic adds: the
// count does not depend on their order.
#include "kernels/cuda/bf16_round.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits {
namespace {

struct Tally {
  unsigned long long mismatches;
  unsigned int first;  // the smallest mismatching pattern (0xffffffff: none)
};

__device__ __forceinline__ uint32_t planted_or_fast_pair(float lo, float hi, bool planted) {
  if (planted) return (__float_as_uint(lo) >> 16) | (__float_as_uint(hi) & 0xffff0000u);  // truncation
  return cuda::bf16x2_bits(lo, hi);
}

__global__ void bf16_round_check_kernel(uint64_t step, bool planted, Tally* tally) {
  unsigned long long local = 0;
  unsigned int first = 0xffffffffu;
  const uint64_t threads = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i * step < (uint64_t(1) << 32); i += threads) {
    const uint32_t u = uint32_t(i * step), v = (u >> 16) | (u << 16);
    const float f = __uint_as_float(u), g = __uint_as_float(v);
    const uint32_t want = uint32_t(to_bf16(f).bits) | (uint32_t(to_bf16(g).bits) << 16);
    const bool single_ok = planted || __float_as_uint(cuda::round_bf16_fast(f)) == __float_as_uint(round_bf16(f));
    if (planted_or_fast_pair(f, g, planted) != want || !single_ok) {
      ++local;
      first = min(first, u);
    }
  }
  if (local != 0) {
    atomicAdd(&tally->mismatches, local);
    atomicMin(&tally->first, first);
  }
}

// The tally through device memory at d (set, counted into, read back).
absl::Status run_check(Tally* d, uint64_t step, bool planted, Tally& host) {
  SAMEBITS_RETURN_IF_ERROR(cuda::blocking_copy(d, &host, sizeof(Tally), cudaMemcpyHostToDevice));
  bf16_round_check_kernel<<<132 * 8, 256>>>(step, planted, d);
  SAMEBITS_RETURN_IF_ERROR(cuda::check_launch("bf16_round_check_kernel"));
  return cuda::blocking_copy(&host, d, sizeof(Tally), cudaMemcpyDeviceToHost);
}

}  // namespace

absl::StatusOr<Bf16RoundCheck> cuda_bf16_round_check(uint64_t step, bool planted_truncation) {
  if (step == 0) return absl::InvalidArgumentError("bf16 round check: step 0");
  Tally* d = nullptr;
  SAMEBITS_CUDA_TRY(cudaMalloc(&d, sizeof(Tally)));
  Tally host{0, 0xffffffffu};
  const absl::Status st = run_check(d, step, planted_truncation, host);
  cudaFree(d);
  if (!st.ok()) return st;
  return Bf16RoundCheck{uint64_t(host.mismatches), host.first};
}

}  // namespace samebits
