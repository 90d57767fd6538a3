// Invariant linear on Hopper: the bulk tensor copy engine (TMA) feeding wgmma, warp-specialised
// (compiled for sm_90a only). Same contract as linear.cu: every output element is ONE chain of
// k16 steps (wgmma m64nNk16, bf16 in, fp32 accumulate) in increasing k from +0, K zero-padded to
// a multiple of 64 (the TMA fills columns >= K with zeros), then + bias and one rounding. No
// split-K: each tile's whole K runs in order on one warpgroup's accumulators, so bits do not
// depend on the tile shape, the grid or M (tests/gpu compares every configuration).
//
// Operand A (64 rows per consumer warpgroup) and B (BN rows) are both K-major: normally A = x
// and B = w; "swapped" (small M) A = w and B = x, which computes y^T tile by tile (the k16 step
// multiplies the same pairs of values and sums them the same way; the test checks the bits).
// One producer warp issues the copies into a STAGES-deep ring guarded by full/empty mbarriers;
// the grid is persistent (each block walks tiles blockIdx.x, + gridDim.x, ...), so the copies of
// the next tile overlap the epilogue of the current one. The swapped tiles come with a shallow ring
// (two blocks per SM) and a deep one (~200 KiB, one block per SM: more weight bytes in flight where
// the weight's 64-row tiles are too few to fill the SMs; no split-K, so that is the only lever).
// The deep 16-row swapped tile also comes with mma.sync consumers (MMA): where the weight tiles are
// few (N = 4096: 64 blocks), a tile's time is the length of its K chain times the latency of one
// dependent k16 step, longer for wgmma than for mma.sync.m16n8k16 (measured on the H200: every
// swapped wgmma tile took ~16 us at K = 4096, M = 1..16, where the weights alone stream in ~8 us;
// the mma.sync one 4-6% less). Same chain per element (k16 steps in increasing k from +0), same
// ring, same epilogue. With 32 or 64 rows of x, mma.sync on one warpgroup is the slower one
// (compute-bound: 0.55-0.75 of cuBLASLt against 0.8 for wgmma), so those stay wgmma only.
// The swapped pair measured slower than single 32-row tiles at M = 64, N = 4096 (0.76 against 0.81
// of cuBLASLt; K = 12288: 0.84 against 0.88): it is kept as a configuration, not chosen.
// Swapped pairs (CN = 2): a 2-CTA cluster computes one weight tile against two neighbouring x
// tiles; each CTA copies half of the weight box and multicasts it into both, so a weight tile is
// read once but streamed by two SMs (N = 4096 at M = 64: 128 CTAs on the weights instead of 64,
// without splitting K). A stage is then refilled only after the consumers of BOTH CTAs released it
// (the peer's multicast writes into this CTA's stage too), as in linear_cluster.cu.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/linear_common.cuh"
#include "kernels/cuda/sm90a/tma_ops.cuh"
#include "kernels/cuda/sm90a/wgmma_ops.cuh"

namespace samebits::cuda {
namespace {

constexpr int kBK = kTmaBoxK;

struct TmaParams {
  LinearParams p;
  int rows_a, rows_b;  // rows of the A and B operands (M and N, or N and M when swapped)
  int swapped;
};


#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// One output tile's whole K on one consumer warpgroup with mma.sync.m16n8k16, the counterpart of
// wgmma_tile (wgmma_ops.cuh; same arguments, warpgroup 0's A rows): warp w computes A rows
// [16w, 16w + 16) x all BN rows of B, each element one chain of k16 steps in increasing k from +0.
// Each stage's fragments are loaded (ldmatrix from the 128-byte swizzled boxes), the stage is
// released, then its steps run, so that the refill overlaps them. Accumulators are laid out as
// wgmma m64nBN's (d[4j + 2h + e]: row 8h + lane / 4 of the warp's 16, column 8j + 2 (lane % 4) + e),
// so the epilogue is store_wgmma_accumulators.
template <int BN, int STAGES, typename Release>
__device__ __forceinline__ void mma_tile(float (&d)[BN / 2], int KT, int& it, uint32_t base, uint32_t stage_bytes,
                                         uint32_t a_offset, uint32_t b_offset, uint32_t full, Release release) {
  constexpr int NT = BN / 8;
  static_assert(BN % 16 == 0, "n8 tiles in pairs (one ldmatrix_x4 each)");
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) % 4;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
  for (int kt = 0; kt < KT; ++kt, ++it) {
    const int s = it % STAGES;
    const uint32_t a_tile = base + s * stage_bytes + a_offset, b_tile = base + s * stage_bytes + b_offset;
    mbar_wait(full + 8 * s, (it / STAGES) & 1);
    uint32_t a[4][4], b[4][NT][2];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      ldmatrix_x4(a[kk], a_tile + swizzled(warp * 16 + (lane & 15), kk * 2 + (lane >> 4), 8));
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        uint32_t r[4];
        ldmatrix_x4(r, b_tile + swizzled(np * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1), 8));
        b[kk][2 * np][0] = r[0];
        b[kk][2 * np][1] = r[1];
        b[kk][2 * np + 1][0] = r[2];
        b[kk][2 * np + 1][1] = r[3];
      }
    }
    release(s);  // the fragments are in registers
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        mma_bf16_16816(*reinterpret_cast<float(*)[4]>(&d[4 * nt]), a[kk], b[kk][nt][0], b[kk][nt][1]);
      }
  }
}
#endif

// CN CTAs per cluster (1, or 2: a pair sharing the A tile, neighbours along B).
template <int WG, int BN, int STAGES, int CN>
struct TmaTile {
  static constexpr int kBM = 64 * WG;
  static constexpr int kABytes = kBM * kBK * 2, kBBytes = BN * kBK * 2, kStage = kABytes + kBBytes;
  static constexpr int kARows = kBM / CN;  // rows of the A box this CTA copies (multicast to the pair)
  static constexpr int kThreads = (WG + 1) * 128;
  static constexpr int kSmem = STAGES * kStage + 1024 + 256;  // + alignment + barriers
  static_assert(CN == 1 || CN == 2, "single CTAs or pairs");
  static_assert(kStage % 1024 == 0 && (kARows * 128) % 1024 == 0,
                "stages and multicast halves stay 1024-byte aligned (128-byte swizzle atoms)");
};

// MMA: mma.sync consumers (mma_tile) instead of wgmma.
template <int WG, int BN, int STAGES, int CN, bool MMA>
__global__ void __launch_bounds__(TmaTile<WG, BN, STAGES, CN>::kThreads, WG == 1 ? 2 : 1)
    tma_linear_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      TmaParams tp) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = TmaTile<WG, BN, STAGES, CN>;
  static_assert(!MMA || (WG == 1 && CN == 1), "mma.sync consumers: one warpgroup, every thread releases");
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t full = base + STAGES * T::kStage, empty = full + 8 * STAGES;
  const int tid = threadIdx.x, wg = tid / 128;
  const int rank = CN == 1 ? 0 : int(cluster_cta_rank());
  const int cluster = CN == 1 ? blockIdx.x : int(cluster_index());
  const int clusters = CN == 1 ? gridDim.x : int(cluster_count());
  const int tiles_a = (tp.rows_a + T::kBM - 1) / T::kBM, tiles_b = (tp.rows_b + BN * CN - 1) / (BN * CN);
  const int tiles = tiles_a * tiles_b, KT = (tp.p.K + kBK - 1) / kBK;
  // This CTA's tile of cluster tile t.
  auto tile_origin = [&](int t, int* a0, int* b0) {
    tile_of_block(t, tp.rows_a, tp.rows_b, T::kBM, BN * CN, a0, b0);
    *b0 += rank * BN;
  };
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, 1);
      // Single CTAs: every consumer thread arrives; pairs: one arrival per consumer warpgroup of each CTA.
      mbar_init(empty + 8 * s, CN == 1 ? WG * 128 : WG * CN);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (CN > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }
  wait_for_previous_kernel();  // the barriers are set up; x and y belong to the kernels before

  if (wg == 0) {  // producer
    if constexpr (BN == 256) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      int it = 0;
      for (int t = cluster; t < tiles; t += clusters) {
        int a0, b0;
        tile_origin(t, &a0, &b0);
        for (int kt = 0; kt < KT; ++kt, ++it) {
          const int s = it % STAGES;
          mbar_wait(empty + 8 * s, ((it / STAGES) & 1) ^ 1);
          mbar_expect_tx(full + 8 * s, T::kStage);  // own copies and, in pairs, the peer's half of A
          const uint32_t stage = base + s * T::kStage;
          if constexpr (CN == 2) {  // this CTA copies A rows [kARows rank, + kARows) into both
            tma_load_2d_multicast(stage + rank * T::kARows * 128, &map_a, kt * kBK, a0 + rank * T::kARows,
                                  full + 8 * s, uint16_t(3));
          } else {
            tma_load_2d(stage, &map_a, kt * kBK, a0, full + 8 * s);
          }
          tma_load_2d(stage + T::kABytes, &map_b, kt * kBK, b0, full + 8 * s);
        }
      }
    }
  } else {  // consumers: warpgroup c owns rows [64c, 64c + 64) of the A tile
    if constexpr (BN == 256) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1;
    auto release = [&](int s) {  // this warpgroup no longer reads stage s
      if constexpr (CN == 1) {
        mbar_arrive(empty + 8 * s);  // every consumer thread
      } else if (tid % 128 < CN) {
        mbar_arrive_cluster(empty + 8 * s, uint32_t(tid % 128));  // thread i tells CTA i
      }
    };
    int it = 0;
    for (int t = cluster; t < tiles; t += clusters) {
      int a0, b0;
      tile_origin(t, &a0, &b0);
      float d[BN / 2];
      if constexpr (MMA) {
        mma_tile<BN, STAGES>(d, KT, it, base, T::kStage, 0, T::kABytes, full, release);
      } else {
        wgmma_tile<BN, STAGES, 1>(d, KT, it, base, T::kStage, c * 64 * kBK * 2, T::kABytes, full, release);
      }
      store_wgmma_accumulators<BN>(tp.p, d, a0 + c * 64, b0, tp.swapped != 0);
    }
  }
  if constexpr (CN > 1) {
    __syncwarp();
    cluster_sync();  // the peer may still multicast into, or arrive on, this CTA's shared memory
  }
#endif
}

// The persistent grid: as many CTAs (single) or pairs as fit on the device at once, at most one
// per (cluster) tile.
template <int WG, int BN, int STAGES, int CN = 1, bool MMA = false>
absl::Status launch(const LinearParams& p, bool swapped, cudaStream_t stream) {
  using T = TmaTile<WG, BN, STAGES, CN>;
  auto kernel = tma_linear_kernel<WG, BN, STAGES, CN, MMA>;
  cudaLaunchAttribute attribute[2];
  cudaLaunchConfig_t config = cluster_launch_config(CN, T::kThreads, T::kSmem, stream, attribute);
  if constexpr (CN == 1) config.numAttrs = 0;  // single CTAs: a plain launch
  static int max_units = 0;  // CTAs (CN = 1) or clusters resident at once
  if (max_units == 0) {
    SAMEBITS_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmem));
    int device = 0, sms = 0;
    SAMEBITS_CUDA_TRY(cudaGetDevice(&device));
    SAMEBITS_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    if constexpr (CN == 1) {
      int blocks_per_sm = 0;
      SAMEBITS_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, T::kThreads, T::kSmem));
      max_units = blocks_per_sm * sms;
    } else {
      config.gridDim = dim3(unsigned(sms / CN * CN));
      SAMEBITS_CUDA_TRY(cudaOccupancyMaxActiveClusters(&max_units, kernel, &config));
    }
    if (max_units < 1) return absl::InternalError("linear: the TMA kernel does not fit on the device");
  }
  TmaParams tp{p, swapped ? p.N : p.M, swapped ? p.M : p.N, swapped ? 1 : 0};
  CUtensorMap map_a, map_b;
  SAMEBITS_RETURN_IF_ERROR(make_tma_map(&map_a, swapped ? p.w : p.x, tp.rows_a, p.K, T::kARows));
  SAMEBITS_RETURN_IF_ERROR(make_tma_map(&map_b, swapped ? p.x : p.w, tp.rows_b, p.K, BN));
  const int64_t tiles = ceil_div64(tp.rows_a, T::kBM) * ceil_div64(tp.rows_b, BN * CN);
  config.gridDim = dim3(unsigned(std::min<int64_t>(tiles, max_units) * CN));
  attribute[config.numAttrs++] = after_previous_kernel();
  SAMEBITS_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, map_a, map_b, tp));
  return check_launch("tma_linear_kernel");
}

}  // namespace

namespace {
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_fn() {
  static EncodeTiled fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      return EncodeTiled(nullptr);
    }
    return reinterpret_cast<EncodeTiled>(f);
  }();
  return fn;
}
}  // namespace

absl::Status make_tma_map(CUtensorMap* map, const bf16* ptr, int rows, int K, int box_rows) {
  EncodeTiled encode = encode_fn();
  if (encode == nullptr) return absl::UnimplementedError("linear: cuTensorMapEncodeTiled is unavailable");
  const cuuint64_t dims[2] = {cuuint64_t(K), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(K) * 2};
  const cuuint32_t box[2] = {cuuint32_t(kTmaBoxK), cuuint32_t(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bf16*>(ptr), dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return absl::InternalError(absl::StrCat("linear: cuTensorMapEncodeTiled failed (", int(r), ")"));
  return absl::OkStatus();
}

absl::Status launch_tma_linear(const LinearParams& p, TmaConfig config, cudaStream_t stream) {
  if (!is_hopper_device()) return absl::UnimplementedError("linear: the TMA kernels need compute capability 9.0");
  switch (config) {
    case TmaConfig::k128x256: return launch<2, 256, 4>(p, false, stream);
    case TmaConfig::k128x128: return launch<2, 128, 6>(p, false, stream);
    case TmaConfig::kSwap64x16: return launch<1, 16, 10>(p, true, stream);
    case TmaConfig::kSwap64x32: return launch<1, 32, 8>(p, true, stream);
    case TmaConfig::kSwap64x64: return launch<1, 64, 6>(p, true, stream);
    case TmaConfig::kSwap64x16Deep: return launch<1, 16, 20>(p, true, stream);
    case TmaConfig::kSwap64x32Deep: return launch<1, 32, 18>(p, true, stream);
    case TmaConfig::kSwap64x64Deep: return launch<1, 64, 13>(p, true, stream);
    case TmaConfig::kPair64x32: return launch<1, 32, 18, 2>(p, true, stream);
    case TmaConfig::kMmaSwap64x16Deep: return launch<1, 16, 20, 1, true>(p, true, stream);
  }
  return absl::InvalidArgumentError("linear: unknown TMA configuration");
}

}  // namespace samebits::cuda
