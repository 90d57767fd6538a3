// Invariant linear for small batches (M <= 16): the weights streamed by the bulk copy engine.
// Same contract as linear.cu: every output element is ONE chain of mma.sync m16n8k16 steps in
// increasing k from +0, then + bias and one rounding; so its bits equal every other configuration's
// (tests/gpu checks it). At small M the work is reading w once; here one thread per block issues a
// bulk copy (cp.async.bulk, completing on an mbarrier) per row and stage, each of 1 KiB contiguous
// (BK = 512 values), four stages deep, into rows padded by 16 bytes (conflict-free ldmatrix). Rows
// of x beyond M and of w beyond N are not copied: they only feed outputs that are never stored.
// The last k16 step of a K that is not a multiple of 16 has its upper half zeroed in registers (the
// zero padding of the other configurations, the same instruction inputs).
#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/linear_common.cuh"

namespace samebits::cuda {
namespace {

constexpr int kBM = 16, kBN = 32, kBK = 512, kStages = 4, kThreads = 64;
constexpr int kRowBytes = kBK * 2 + 16;  // padded
constexpr int kStageBytes = (kBM + kBN) * kRowBytes;
constexpr int kSmem = kStages * kStageBytes + 128;

__global__ void __launch_bounds__(kThreads) stream_linear_kernel(LinearParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t bars = smem_addr(smem);  // kStages mbarriers of 8 bytes
  const uint32_t base = bars + 128;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  wait_for_previous_kernel();
  const int n0 = blockIdx.x * kBN;
  const int KT = (p.K + kBK - 1) / kBK;
  const int rows_a = min(kBM, p.M), rows_b = min(kBN, p.N - n0);

  auto issue = [&](int kt) {
    const int s = kt % kStages;
    const uint32_t bar = bars + 8 * s, stage = base + s * kStageBytes;
    const int k0 = kt * kBK;
    const uint32_t bytes = uint32_t(min(kBK, p.K - k0)) * 2;
    mbar_expect_tx(bar, bytes * uint32_t(rows_a + rows_b));
    for (int r = 0; r < rows_a; ++r) bulk_copy(stage + r * kRowBytes, p.x + int64_t(r) * p.K + k0, bytes, bar);
    for (int r = 0; r < rows_b; ++r) {
      bulk_copy(stage + (kBM + r) * kRowBytes, p.w + int64_t(n0 + r) * p.K + k0, bytes, bar);
    }
  };
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(bars + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (tid == 0) {
    for (int s = 0; s < kStages && s < KT; ++s) issue(s);
  }

  float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  for (int kt = 0; kt < KT; ++kt) {
    const int s = kt % kStages;
    mbar_wait(bars + 8 * s, uint32_t(kt / kStages) & 1u);
    const uint32_t a_stage = base + s * kStageBytes, b_stage = a_stage + kBM * kRowBytes;
    const int steps = min(kBK, p.K - kt * kBK + 15) / 16;  // k16 steps holding any k < K
    for (int kk = 0; kk < steps; ++kk) {
      uint32_t a[4], b[4];
      ldmatrix_x4(a, a_stage + (lane & 15) * kRowBytes + (kk * 2 + (lane >> 4)) * 16);
      const int row = warp * 16 + (lane & 7) + ((lane >> 4) << 3);
      ldmatrix_x4(b, b_stage + row * kRowBytes + (kk * 2 + ((lane >> 3) & 1)) * 16);
      if (kt * kBK + kk * 16 + 8 >= p.K) {  // upper half of the step beyond K: zero, as padded
        a[2] = a[3] = 0u;
        b[1] = b[3] = 0u;
      }
      mma_bf16_16816(acc[0], a, b[0], b[1]);
      mma_bf16_16816(acc[1], a, b[2], b[3]);
    }
    __syncthreads();  // every warp is done with stage s before it is refilled
    if (tid == 0 && kt + kStages < KT) issue(kt + kStages);
  }
#pragma unroll
  for (int half = 0; half < 2; ++half)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      store_output_pair8(p, (lane >> 2) + half * 8, n0 + warp * 16 + (lane & 3) * 2 + e, acc[0][half * 2 + e],
                         acc[1][half * 2 + e]);
    }
}

}  // namespace

absl::Status launch_stream_linear(const LinearParams& p, cudaStream_t stream) {
  if (p.M > kBM) return absl::InvalidArgumentError(absl::StrCat("linear: the streaming kernel takes M <= 16, got ", p.M));
  static bool attribute_set = false;
  if (!attribute_set) {
    SAMEBITS_CUDA_TRY(cudaFuncSetAttribute(stream_linear_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    attribute_set = true;
  }
  return launch_after_previous("stream_linear_kernel", stream_linear_kernel, dim3(unsigned(ceil_div64(p.N, kBN))),
                               dim3(kThreads), kSmem, stream, p);
}

}  // namespace samebits::cuda
