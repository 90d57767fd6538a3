// Kernels of the chain-floor rows (chain_floor.h): dependent k16 tensor-core steps, nothing else.
// Operands are small bf16 values (2^-10) so that 10^5 steps stay finite; the accumulators feed
// a fold that is stored only if it equals a value it never takes, so no step is dropped.
#include "bench/cuda/chain_floor.h"

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/sm90a/wgmma_ops.cuh"
#include "kernels/cuda/tensor_core.cuh"

namespace samebits::bench {
namespace {

constexpr uint32_t kSmallPair = 0x3a803a80u;  // two bf16 2^-10
constexpr float kNever = 1234.5678f;

// Each of the four warps: d += A B for `steps` k16 steps, NT independent n8 tiles a step.
template <int NT>
__global__ void __launch_bounds__(128) mma_chain_kernel(int steps, float* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const uint32_t v = kSmallPair ^ (threadIdx.x & 1u);  // not a compile-time constant
  const uint32_t a[4] = {v, v, v, v};
  float d[NT][4] = {};
  for (int s = 0; s < steps; s += 4) {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) cuda::mma_bf16_16816(d[nt], a, v, v);
  }
  float x = 0.0f;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) x += d[nt][0] + d[nt][1] + d[nt][2] + d[nt][3];
  if (x == kNever) *sink = x;
#endif
}

// One warpgroup: d += A B, wgmma m64n16k16 with A (64 x 64) and B (16 x 64) in shared memory in
// the linear tiles' 128-byte swizzled layout, four k16 steps a committed group, one group in
// flight while the next is issued (wgmma_tile's LAG 1).
__global__ void __launch_bounds__(128) wgmma_chain_kernel(int steps, float* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(1024) uint32_t tiles[(64 * 64 + 16 * 64) / 2];
  for (int i = threadIdx.x; i < int(sizeof tiles / 4); i += blockDim.x) tiles[i] = kSmallPair;
  cuda::fence_proxy_async();  // the generic stores before the tensor cores' reads
  __syncthreads();
  const uint32_t a_tile = cuda::smem_addr(tiles), b_tile = a_tile + 64 * 64 * 2;
  float d[8] = {};
  for (int s = 0; s < steps; s += 4) {
    cuda::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      cuda::wgmma_m64k16<16>(d, cuda::smem_desc(a_tile + kk * 32), cuda::smem_desc(b_tile + kk * 32));
    }
    cuda::wgmma_commit();
    cuda::wgmma_wait<1>();
  }
  cuda::wgmma_wait<0>();
  float x = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) x += d[i];
  if (x == kNever) *sink = x;
#endif
}

}  // namespace

bool has_chain_floor(const ChainShape& shape) {
  return shape.kind == ChainKind::kMmaSync ? shape.n == 8 || shape.n == 16 : shape.n == 16;
}

bool launch_chain_floor(void* stream, const ChainShape& shape, int blocks, int steps, float* sink) {
  if (!has_chain_floor(shape) || blocks <= 0 || steps <= 0 || steps % 4 != 0) return false;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (shape.kind == ChainKind::kWgmma) {
    wgmma_chain_kernel<<<blocks, 128, 0, s>>>(steps, sink);
  } else if (shape.n == 8) {
    mma_chain_kernel<1><<<blocks, 128, 0, s>>>(steps, sink);
  } else {
    mma_chain_kernel<2><<<blocks, 128, 0, s>>>(steps, sink);
  }
  return cudaGetLastError() == cudaSuccess;
}

}  // namespace samebits::bench
