// Kernels of the chain-floor rows (chain_floor.h: dependent k16 tensor-core steps, nothing else)
// and of the ring-floor rows (the small-M tiles' TMA ring, nothing else). The chains' operands are
// small bf16 values (2^-10) so that 10^5 steps stay finite; the accumulators feed a fold that is
// stored only if it equals a value it never takes, so no step is dropped.
#include "bench/cuda/chain_floor.h"

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/sm90a/tma_ops.cuh"
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

// The ring alone (RingShape): thread 0 produces, warpgroup 1 consumes.
template <int BOX_ROWS, int STAGES>
struct Ring {
  static constexpr int kA = BOX_ROWS * 128, kStage = kA + 16 * 128, kSmem = STAGES * kStage + 1024 + 16 * STAGES;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Where a block's ring lies in its dynamic shared memory (STAGES stages from a 1024-byte aligned
// base, then the full and the empty mbarriers), with the barriers initialised: `full_arrivals` a
// stage on full (1 for TMA's expect_tx, 128 for cp.async), 128 (every consumer thread) on empty;
// the block has waited for them.
struct RingAt {
  uint32_t base, full, empty;
};
template <int BOX_ROWS, int STAGES>
__device__ __forceinline__ RingAt ring_at(int full_arrivals) {
  extern __shared__ unsigned char smem_raw[];
  RingAt r;
  r.base = (cuda::smem_addr(smem_raw) + 1023u) & ~1023u;
  r.full = r.base + STAGES * Ring<BOX_ROWS, STAGES>::kStage;
  r.empty = r.full + 8 * STAGES;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      cuda::mbar_init(r.full + 8 * s, full_arrivals);
      cuda::mbar_init(r.empty + 8 * s, 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  return r;
}

// The consumer warpgroup: waits for each stage and releases it at once, every thread arriving.
template <int STAGES>
__device__ __forceinline__ void ring_consume(uint32_t full, uint32_t empty, int KT) {
  for (int kt = 0; kt < KT; ++kt) {
    const int s = kt % STAGES;
    cuda::mbar_wait(full + 8 * s, (kt / STAGES) & 1);
    cuda::mbar_arrive(empty + 8 * s);
  }
}
#endif

template <int BOX_ROWS, int STAGES>
__global__ void __launch_bounds__(256) ring_floor_kernel(const __grid_constant__ CUtensorMap map_w,
                                                         const __grid_constant__ CUtensorMap map_x, int K,
                                                         bool with_x, bool tiled) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using R = Ring<BOX_ROWS, STAGES>;
  const auto [base, full, empty] = ring_at<BOX_ROWS, STAGES>(1);
  const int tid = threadIdx.x, KT = (K + 63) / 64, row0 = blockIdx.x * BOX_ROWS;
  if (tid < 128) {
    if (tid == 0) {
      for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        cuda::mbar_wait(empty + 8 * s, ((kt / STAGES) & 1) ^ 1);
        cuda::mbar_expect_tx(full + 8 * s, with_x ? R::kStage : R::kA);
        if (tiled) {  // box (block, kt) is rows (block * KT + kt) * BOX_ROWS.. of the [.., 64] view
          cuda::tma_load_2d(base + s * R::kStage, &map_w, 0, (blockIdx.x * KT + kt) * BOX_ROWS, full + 8 * s);
        } else {
          cuda::tma_load_2d(base + s * R::kStage, &map_w, kt * 64, row0, full + 8 * s);
        }
        if (with_x) cuda::tma_load_2d(base + s * R::kStage + R::kA, &map_x, kt * 64, 0, full + 8 * s);
      }
    }
  } else {
    ring_consume<STAGES>(full, empty, KT);
  }
#endif
}

// The same ring filled by cp.async: producer thread t copies 16-byte chunks t, t + 128, ... of the
// stage (weight rows then x rows, 8 chunks a row, into the 128-byte swizzled layout TMA writes)
// and arrives on the full mbarrier once they land (cp.async.mbarrier.arrive.noinc).
template <int BOX_ROWS, int STAGES>
__global__ void __launch_bounds__(256) ring_cp_async_kernel(const bf16* w, int K, const bf16* x, bool with_x) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using R = Ring<BOX_ROWS, STAGES>;
  const auto [base, full, empty] = ring_at<BOX_ROWS, STAGES>(128);
  const int tid = threadIdx.x, KT = (K + 63) / 64, row0 = blockIdx.x * BOX_ROWS;
  if (tid < 128) {
    constexpr int kChunks = (BOX_ROWS + 16) * 8;
    for (int kt = 0; kt < KT; ++kt) {
      const int s = kt % STAGES;
      cuda::mbar_wait(empty + 8 * s, ((kt / STAGES) & 1) ^ 1);
      const uint32_t stage = base + s * R::kStage;
#pragma unroll
      for (int c = tid; c < kChunks; c += 128) {
        const int row = c / 8, ch = c % 8;
        if (row < BOX_ROWS) {
          cuda::cp_async_16(stage + cuda::swizzled(row, ch, 8), w + int64_t(row0 + row) * K + kt * 64 + ch * 8, true);
        } else if (with_x) {
          cuda::cp_async_16(stage + R::kA + cuda::swizzled(row - BOX_ROWS, ch, 8),
                            x + int64_t(row - BOX_ROWS) * K + kt * 64 + ch * 8, true);
        }
      }
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full + 8 * s) : "memory");
    }
  } else {
    ring_consume<STAGES>(full, empty, KT);
  }
#endif
}

template <int BOX_ROWS, int STAGES>
bool launch_ring_cp_async(cudaStream_t stream, const void* w, int rows, int K, const void* x, bool with_x) {
  using R = Ring<BOX_ROWS, STAGES>;
  auto kernel = ring_cp_async_kernel<BOX_ROWS, STAGES>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, R::kSmem) != cudaSuccess) return false;
  kernel<<<(rows + BOX_ROWS - 1) / BOX_ROWS, 256, R::kSmem, stream>>>(static_cast<const bf16*>(w), K,
                                                                      static_cast<const bf16*>(x), with_x);
  return cudaGetLastError() == cudaSuccess;
}

template <int BOX_ROWS, int STAGES>
bool launch_ring(cudaStream_t stream, const void* w, int rows, int K, const void* x, bool with_x, bool tiled) {
  using R = Ring<BOX_ROWS, STAGES>;
  auto kernel = ring_floor_kernel<BOX_ROWS, STAGES>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, R::kSmem) != cudaSuccess) return false;
  CUtensorMap map_w, map_x;
  const int KT = (K + 63) / 64;
  const bool mapped = tiled ? cuda::make_tma_map(&map_w, static_cast<const bf16*>(w), rows * KT, 64, BOX_ROWS).ok()
                            : cuda::make_tma_map(&map_w, static_cast<const bf16*>(w), rows, K, BOX_ROWS).ok();
  if (!mapped ||
      !cuda::make_tma_map(&map_x, static_cast<const bf16*>(x), 16, K, 16).ok()) {
    return false;
  }
  kernel<<<(rows + BOX_ROWS - 1) / BOX_ROWS, 256, R::kSmem, stream>>>(map_w, map_x, K, with_x, tiled);
  return cudaGetLastError() == cudaSuccess;
}

// Whether launch_ring_floor / launch_chain_floor have a kernel for the shape.
bool has_ring_floor(const RingShape& shape) {
  if (shape.cp_async) return shape.box_rows == 64 && shape.stages == 20 && !shape.tiled;
  return (shape.box_rows == 32 && shape.stages == 32) || (shape.box_rows == 64 && shape.stages == 20) ||
         (shape.box_rows == 128 && shape.stages == 10);
}
bool has_chain_floor(const ChainShape& shape) {
  return shape.kind == ChainKind::kMmaSync ? shape.n == 8 || shape.n == 16 : shape.n == 16;
}

}  // namespace

bool launch_ring_floor(void* stream, const RingShape& shape, const void* w, int rows, int K, const void* x) {
  if (!has_ring_floor(shape)) return false;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (shape.cp_async) return launch_ring_cp_async<64, 20>(s, w, rows, K, x, shape.with_x);
  if (shape.box_rows == 32) return launch_ring<32, 32>(s, w, rows, K, x, shape.with_x, shape.tiled);
  if (shape.box_rows == 64) return launch_ring<64, 20>(s, w, rows, K, x, shape.with_x, shape.tiled);
  return launch_ring<128, 10>(s, w, rows, K, x, shape.with_x, shape.tiled);
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
