// Kernels of the prefill-ceiling rows (prefill_ceiling.h): the wgmma prefill's visit with only its
// matrix products, in the order attention_prefill.cu issues them, on one K / V tile that stays in
// shared memory. Built for sm_90a only (wgmma); elsewhere the launcher reports no kernel.
#include "bench/cuda/prefill_ceiling.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/sm90a/wgmma_ops.cuh"
#include "kernels/cuda/tensor_core.cuh"

namespace samebits::bench {
namespace {


// Shared memory of a block: K (keys x HD, as HD / 64 regions of [keys][64 values], 128-byte swizzled
// rows: the prefill's layout) then V (the same bytes read MN-major), at least 120 KiB so that one
// block holds an SM whatever the registers allow (as the prefill kernel's ring does).
template <int HD, int KEYS, int WG>
struct CeilingLayout {
  // Q from shared memory (SS wgmma) with three warpgroups: o, the scores, P and Q's fragments do not
  // fit the 168 registers a thread has then (ptxas serialises the wgmma, C7511), so a third
  // warpgroup reads Q as FlashAttention-3 does.
  static constexpr bool kQShared = WG == 3;
  static constexpr int kTileBytes = KEYS * HD * 2;
  static constexpr int kQBytes = kQShared ? WG * 64 * HD * 2 : 0;  // after K and V, a tile per warpgroup
  static constexpr int kUsed = 2 * kTileBytes + kQBytes;
  static constexpr int kBytes = kUsed + 1024 > 120 * 1024 ? kUsed + 1024 : 120 * 1024;
};

// Two small bf16 values (|x| < 1/8) from a hash of i: data of the magnitude the prefill multiplies,
// since the tensor cores' power, and so the clock under the power cap, depends on the bits.
__device__ __forceinline__ uint32_t small_bf16_pair(uint32_t i) {
  i *= 0x9e3779b9u;
  i ^= i >> 15;
  i *= 0x85ebca6bu;
  i ^= i >> 13;
  // sign, exponent 121..124 (2^-6..2^-3), 7 mantissa bits; for each half
  const uint32_t lo = ((i & 1u) << 15) | ((121u + ((i >> 1) & 3u)) << 7) | ((i >> 3) & 0x7fu);
  const uint32_t hi = (((i >> 10) & 1u) << 15) | ((121u + ((i >> 11) & 3u)) << 7) | ((i >> 13) & 0x7fu);
  return lo | (hi << 16);
}

template <int HD, int KEYS, int WG>
__global__ void __launch_bounds__(WG * 128, 1) prefill_ceiling_kernel(int visits, float* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = cuda::smem_addr(smem_raw), base = (raw + 1023u) & ~1023u;
  using L = CeilingLayout<HD, KEYS, WG>;
  constexpr int kTile = L::kTileBytes;
  uint32_t* words = reinterpret_cast<uint32_t*>(smem_raw + (base - raw));
  for (int i = int(threadIdx.x); i < L::kUsed / 4; i += int(blockDim.x)) words[i] = small_bf16_pair(uint32_t(i) + blockIdx.x);
  cuda::fence_proxy_async();  // the generic-proxy writes above, seen by wgmma
  __syncthreads();

  const int tid = int(threadIdx.x), wg = __shfl_sync(0xffffffffu, tid / 128, 0);
  const uint64_t q_desc = cuda::smem_desc(base + 2 * kTile + wg * 64 * HD * 2);
  uint32_t qf[L::kQShared ? 1 : HD / 16][4];  // Q's A fragments, as the prefill keeps them in registers
#pragma unroll
  for (int kk = 0; kk < (L::kQShared ? 0 : HD / 16); ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      qf[kk][i] = small_bf16_pair(uint32_t(tid * 64 + kk * 4 + i));
      asm volatile("" : "+r"(qf[kk][i]));  // (all before the first wgmma, not computed between them)
    }
  const uint64_t k_desc = cuda::smem_desc(base), v_desc = cuda::smem_desc_mn(base + kTile, KEYS * 128);
  float sc[KEYS / 8][4], o[HD / 8][4];
  float(&scf)[KEYS / 2] = reinterpret_cast<float(&)[KEYS / 2]>(sc);
  float(&of)[HD / 2] = reinterpret_cast<float(&)[HD / 2]>(o);
  // Accumulators zeroed by volatile moves, which stay before the first wgmma: plain assignments of
  // o may be moved past the scores' issue, and a write to an accumulator while a wgmma is in flight
  // makes ptxas serialise every wgmma (C7515). (The scores' zeros are for the compiler only: their
  // first k16 step does not read them, as attention_prefill.cu's sc_next.)
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) asm volatile("mov.b32 %0, 0;" : "=f"(of[i]));
#pragma unroll
  for (int i = 0; i < KEYS / 2; ++i) asm volatile("mov.b32 %0, 0;" : "=f"(scf[i]));
  // S = Q K^T over the head dim in k16 steps, left in flight (issue_scores of the prefill).
  auto issue_scores = [&] {
    cuda::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const uint64_t b = cuda::desc_advance(k_desc, uint32_t((kk >> 2) * KEYS * 128 + (kk & 3) * 32));
      if constexpr (L::kQShared) {  // (accumulates onto the last scores: the values do not matter here)
        cuda::wgmma_m64k16<KEYS>(scf, cuda::desc_advance(q_desc, uint32_t((kk >> 2) * 8192 + (kk & 3) * 32)), b);
      } else if (kk == 0) {
        cuda::wgmma_m64k16_rs</*kTransB=*/false, /*kAccumulate=*/false>(scf, qf[kk], b);
      } else {
        cuda::wgmma_m64k16_rs</*kTransB=*/false>(scf, qf[kk], b);
      }
    }
    cuda::wgmma_commit();
  };
  issue_scores();
  uint32_t p[KEYS / 16][4];
  for (int v = 0; v < visits; ++v) {
    cuda::wgmma_wait<0>();  // the scores of v and the products of v - 1
#pragma unroll
    for (int i = 0; i < KEYS / 2; ++i) asm volatile("" : "+f"(scf[i])::"memory");  // (read after the wait)
#pragma unroll
    for (int kk = 0; kk < KEYS / 16; ++kk) {  // P in the A fragment layout, as the prefill packs it
      p[kk][0] = cuda::pack_bf16x2(sc[2 * kk][0] * 0.0625f, sc[2 * kk][1] * 0.0625f);
      p[kk][1] = cuda::pack_bf16x2(sc[2 * kk][2] * 0.0625f, sc[2 * kk][3] * 0.0625f);
      p[kk][2] = cuda::pack_bf16x2(sc[2 * kk + 1][0] * 0.0625f, sc[2 * kk + 1][1] * 0.0625f);
      p[kk][3] = cuda::pack_bf16x2(sc[2 * kk + 1][2] * 0.0625f, sc[2 * kk + 1][3] * 0.0625f);
    }
    if (v + 1 < visits) issue_scores();
    cuda::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KEYS / 16; ++kk) {
      cuda::wgmma_m64k16_rs</*kTransB=*/true>(of, p[kk], cuda::desc_advance(v_desc, uint32_t(kk * 2048)));
    }
    cuda::wgmma_commit();
  }
  cuda::wgmma_wait<0>();
  float x = 0.0f;
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) x += of[i];
  if (x == 1234.5f) *sink = x;
#endif
}

int sm_count() {
  static int count = [] {
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      return 0;
    }
    return n;
  }();
  return count;
}

template <int HD, int KEYS, int WG>
bool launch(cudaStream_t stream, int visits, float* sink) {
  auto* kernel = prefill_ceiling_kernel<HD, KEYS, WG>;
  static const bool sized =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, CeilingLayout<HD, KEYS, WG>::kBytes) == cudaSuccess;
  const int blocks = sm_count();
  if (!sized || blocks <= 0) return false;
  kernel<<<blocks, WG * 128, CeilingLayout<HD, KEYS, WG>::kBytes, stream>>>(visits, sink);
  return cudaGetLastError() == cudaSuccess;
}

// The shapes with a kernel: 64 or 128 for each of head_dim and keys with 1 or 2 warpgroups, and three
// warpgroups at the prefill's own shape, head_dim 128 with 64 keys (o, scores, P and Q in 168
// registers a thread: the question the real kernel's registers could not answer).
struct Kernel {
  int head_dim, keys, warpgroups;
  bool (*launch)(cudaStream_t, int, float*);
};
constexpr Kernel kKernels[] = {
    {128, 64, 1, launch<128, 64, 1>},  {128, 64, 2, launch<128, 64, 2>}, {128, 64, 3, launch<128, 64, 3>},
    {128, 128, 1, launch<128, 128, 1>}, {128, 128, 2, launch<128, 128, 2>}, {64, 64, 1, launch<64, 64, 1>},
    {64, 64, 2, launch<64, 64, 2>},    {64, 128, 1, launch<64, 128, 1>},   {64, 128, 2, launch<64, 128, 2>},
};
const Kernel* find_kernel(const CeilingShape& s) {
  for (const Kernel& k : kKernels) {
    if (k.head_dim == s.head_dim && k.keys == s.keys && k.warpgroups == s.warpgroups) return &k;
  }
  return nullptr;
}

}  // namespace

bool has_prefill_ceiling(const CeilingShape& shape) { return find_kernel(shape) != nullptr; }

bool launch_prefill_ceiling(void* stream, const CeilingShape& shape, int visits, float* sink) {
  const Kernel* k = find_kernel(shape);
  return k != nullptr && visits > 0 && k->launch(static_cast<cudaStream_t>(stream), visits, sink);
}

double prefill_ceiling_flops(const CeilingShape& s, int visits) {
  // per warpgroup and visit: 64 rows x keys x head_dim multiply-adds for each of QK^T and PV
  return double(sm_count()) * s.warpgroups * visits * 2.0 * (2.0 * 64 * s.keys * s.head_dim);
}

}  // namespace samebits::bench
