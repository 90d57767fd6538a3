// Invariant linear on Hopper tensor cores through wgmma (compiled for sm_90a only; the build adds
// -gencode=arch=compute_90a,code=sm_90a for this file). Same contract as linear.cu: every output
// element is ONE chain of k16 steps in increasing k from +0 (wgmma m64n256k16 here; K zero-padded
// to a multiple of 64), then + bias and one rounding. Tiles of 64 or 128 rows (one or two consumer
// warpgroups) x 256 columns; operands stream through a 4- or 5-stage cp.async pipeline into the 128-byte
// swizzled layout that the wgmma descriptors name (the layout of tensor_core.cuh's swizzled(), with
// 1024-byte aligned stages); fence.proxy.async makes those generic-proxy writes visible to the
// tensor cores. A stage is refilled only after the wgmma groups that read it have retired
// (wgmma.wait_group 0 each iteration; prefetch distance stages - 1).
#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/linear_common.cuh"
#include "kernels/cuda/sm90a/wgmma_ops.cuh"

namespace samebits::cuda {
namespace {

constexpr int kBK = 64, kBN = 256;
// Stages: 4 x 48 KiB for two warpgroups, 5 x 40 KiB for one (the shared memory a block can have).
template <int WG>
constexpr int kStages = WG == 2 ? 4 : 5;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// wgmma.mma_async m64n256k16, bf16 inputs from shared memory (K-major, 128-byte swizzle), fp32
// accumulators d[128] in the warpgroup's fragment layout, D = A * B + D.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b));
}

#endif

// OVERLAP: keep one wgmma group in flight across the barrier (wait_group 1, prefetch distance
// stages - 2) instead of retiring each iteration's group (wait_group 0, distance stages - 1).
template <int WG, bool OVERLAP>
__global__ void __launch_bounds__(WG * 128, 1) wgmma_linear_kernel(LinearParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BM = 64 * WG, kThreads = WG * 128, S = kStages<WG>, D = OVERLAP ? S - 2 : S - 1;
  constexpr int kA = BM * kBK * 2, kStage = kA + kBN * kBK * 2;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const int tid = threadIdx.x, wg = tid / 128, lane = tid & 31, warp = (tid / 32) % 4;
  wait_for_previous_kernel();
  int m0, n0;
  tile_of_block(blockIdx.x, p.M, p.N, BM, kBN, &m0, &n0);

  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;

  const int KT = (p.K + kBK - 1) / kBK;
  auto load_stage = [&](int kt) {
    const uint32_t stage = base + (kt % S) * kStage;
    load_tile<BM, kThreads, true, kBK>(stage, p.x, m0, p.M, p.K, kt * kBK, tid);
    load_tile<kBN, kThreads, true, kBK>(stage + kA, p.w, n0, p.N, p.K, kt * kBK, tid);
  };
#pragma unroll
  for (int s = 0; s < D; ++s) {
    if (s < KT) load_stage(s);
    cp_async_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<D - 1>();
    fence_proxy_async();
    __syncthreads();
    // Refills the slot read in iteration kt - 1 (kt - 2 with OVERLAP): its wgmma group retired at
    // the end of the previous iteration (wait_group 0, or 1 leaving only the newest in flight).
    if (kt + D < KT) load_stage(kt + D);
    cp_async_commit();
    const uint32_t a_tile = base + (kt % S) * kStage + wg * 64 * kBK * 2;
    const uint32_t b_tile = base + (kt % S) * kStage + kA;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      wgmma_m64n256k16(d, smem_desc(a_tile + kk * 32), smem_desc(b_tile + kk * 32));
    }
    wgmma_commit();
    wgmma_wait<OVERLAP ? 1 : 0>();
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
  cp_async_wait<0>();

  const int row0 = m0 + wg * 64 + warp * 16 + (lane >> 2);
#pragma unroll
  for (int j = 0; j < kBN / 8; j += 2) {  // column groups j and j + 1: a gate/up pair when fused
    const int col = n0 + j * 8 + (lane & 3) * 2;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      store_output_pair8(p, row0, col + e, d[4 * j + e], d[4 * j + 4 + e]);
      store_output_pair8(p, row0 + 8, col + e, d[4 * j + 2 + e], d[4 * j + 6 + e]);
    }
  }
#endif
}

template <int WG, bool OVERLAP>
absl::Status launch(const LinearParams& p, cudaStream_t stream) {
  constexpr int BM = 64 * WG;
  constexpr int kSmem = kStages<WG> * (BM + kBN) * kBK * 2 + 1024;
  static bool attribute_set = false;
  if (!attribute_set) {
    SAMEBITS_CUDA_TRY(cudaFuncSetAttribute(wgmma_linear_kernel<WG, OVERLAP>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    attribute_set = true;
  }
  const int64_t tiles = ceil_div64(p.M, BM) * ceil_div64(p.N, kBN);
  return launch_after_previous("wgmma_linear_kernel", wgmma_linear_kernel<WG, OVERLAP>, dim3(unsigned(tiles)),
                               dim3(WG * 128), kSmem, stream, p);
}

}  // namespace

absl::Status launch_wgmma_linear(const LinearParams& p, int bm, cudaStream_t stream) {
  if (!is_hopper_device()) return absl::UnimplementedError("linear: the wgmma kernels need compute capability 9.0");
  if (bm == 64) return launch<1, false>(p, stream);
  if (bm == -128) return launch<2, true>(p, stream);
  return launch<2, false>(p, stream);
}

}  // namespace samebits::cuda
