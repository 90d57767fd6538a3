// Invariant linear on Hopper above M = 64: 128 x BN tiles (BN = 256, 192, 128 or 64) computed by
// pairs of CTAs (2-CTA thread-block clusters) that share one operand through TMA multicast, or by
// single CTAs (compiled for sm_90a only). Same contract as linear.cu: every output element is ONE chain of k16 steps
// (wgmma m64nBNk16, bf16 in, fp32 accumulate) in increasing k from +0, K zero-padded to a multiple
// of 64 by the copy engine, then + bias and one rounding. No split-K, no stream-K: a tile's whole K
// runs in order on one warpgroup's accumulators, so neither the tile shape, the cluster shape, the
// grid nor M changes a bit (tests/gpu forces every configuration and compares).
//
// Why clusters: a 128 x 256 tile reads 48 KiB per 64-deep k step for 4.2 MFLOP; at the tensor
// cores' rate that is more than L2 delivers to all SMs at once. The two CTAs of a cluster compute
// neighbouring tiles that share the weight tile (CM = 2: rows m0 and m0 + 128, B multicast) or the
// activation tile (CN = 2: columns n0 and n0 + BN, A multicast); each CTA loads half of the shared
// box and multicasts it into both, so L2 traffic per CTA drops to 32 KiB (CM = 2, BN = 256).
// Roles: warp 0 of warpgroup 0 issues the copies into a STAGES-deep ring (full/empty mbarriers,
// registers given back by setmaxnreg); warpgroups 1 and 2 each own 64 rows of the tile and the
// stage's BN columns. A stage is refilled only after the consumers of BOTH CTAs released it (each
// consumer warpgroup arrives on the empty barrier of every CTA of the cluster), because the peer's
// multicast writes into this CTA's stage too. The grid is persistent: cluster c walks cluster
// tiles c, c + clusters, ... (grouped raster), so the next tile's copies start during the epilogue.
// The "out" configurations stage each warpgroup's bf16 output in shared memory, 64 x 64 boxes in
// two buffers, and leave the global stores to the copy engine: the tensor cores wait for the
// register-to-shared writes only, not for 64 scattered global stores per thread (measured on the
// H200: 0.86 -> 0.94 of cuBLASLt at M >= 1024, where a K = 4096 tile spent ~15% of its time there).
// Ping-pong (PINGPONG): the tensor cores still idle while both warpgroups write their shares of one
// tile. There each consumer warpgroup owns whole 64 x BN tiles (the walk's tiles alternate between
// them; same ring, one reader per stage) and a turn, passed through two named barriers once a
// warpgroup has issued its last wgmma group, makes their mainloops alternate: one warpgroup's
// epilogue (bias, rounding or the fused silu.mul, the staged TMA store) runs under the other's
// mainloop. Measured on the H200 (bench_cuda_matmul --sweep, M = 1000, 2026-12-01): 2 x (64 x 256)
// sharing w took 1.01-1.07x the time of the 2 x (128 x 256) pair with its output by TMA (qkv 86.8
// against 83.4 us, down 159 against 152), so it is a configuration, not chosen. Likely reasons: a
// 64-row tile reads 1.5x the L2 bytes per flop of a 128-row pair's, its 4-stage ring holds half
// the mainloop time, and one warpgroup alone issues the wgmma. Slower still, not kept: clusters of
// four sharing w (a quarter of the box each; 1.10-1.57x), pairs sharing x, 192 and 128 columns.
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
constexpr int kOutBox = 64 * 64 * 2;  // one staged output box: 64 rows x 64 bf16 columns, 128-byte swizzled

// CM x CN CTAs per cluster (CM * CN <= 2); LAG wgmma groups left in flight when a stage is
// released (0: the stage is released as soon as its own group retires). OUT: output boxes staged
// in shared memory per consumer warpgroup (0: every thread stores its accumulators to y itself;
// 2: two 64 x 64 boxes per warpgroup, written by the copy engine while the next box is staged and
// the next tile's wgmma runs). PINGPONG: each consumer warpgroup owns whole 64 x BN tiles, taking
// every other tile of the walk (else both share one 128 x BN tile). REVERSE_K (tests only: a
// planted K-order change) copies the k tiles last to first.
template <int BN, int CM, int CN, int STAGES, int LAG, int OUT = 0, bool PINGPONG = false>
struct ClusterTile {
  static constexpr int kCtas = CM * CN;
  static constexpr int kRows = PINGPONG ? 64 : 128;  // rows of a CTA's tile
  static constexpr int kConsumersPerStage = PINGPONG ? 1 : 2;
  static constexpr int kABytes = kRows * kBK * 2, kBBytes = BN * kBK * 2, kStage = kABytes + kBBytes;
  static constexpr int kARows = kRows / CN, kBRows = BN / CM;  // rows of A and B this CTA copies
  static constexpr int kThreads = 3 * 128;
  static constexpr int kOutBytes = 2 * OUT * kOutBox;          // both consumer warpgroups' boxes
  static constexpr int kSmem = STAGES * kStage + kOutBytes + 1024 + 256;  // + alignment + barriers
  __host__ __device__ static constexpr uint16_t all_ctas() { return uint16_t((1 << kCtas) - 1); }  // multicast mask: the whole cluster
  static_assert(kCtas <= 2 && LAG <= 1, "pairs of CTAs, at most one group in flight");
  static_assert(!PINGPONG || (LAG == 1 && OUT == 2),
                "ping-pong: the one warpgroup at the tensor cores keeps a group in flight; staged output");
  static_assert(OUT == 0 || (OUT == 2 && BN % 64 == 0), "staged output: two boxes of 64 columns");
  static_assert(kStage % 1024 == 0 && (kARows * 128) % 1024 == 0 && (kBRows * 128) % 1024 == 0,
                "stages and multicast halves stay 1024-byte aligned (128-byte swizzle atoms)");
  static_assert(kSmem <= 227 * 1024, "shared memory of one block");
};

// One consumer warpgroup's 64 x BN accumulators to y through shared memory: box by box (64 columns),
// each thread writes its values (+ bias, one rounding to bf16: the same arithmetic as
// store_output) into one of two swizzled boxes, then one thread has the copy engine store the box
// (clipped to M and N). Before a box is passed to the copy engine, the store issued one box earlier
// has read its buffer, which the next box then reuses (`box` counts this warpgroup's boxes).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <int BN>
__device__ __forceinline__ void store_tile_by_tma(const LinearParams& p, const CUtensorMap* map_y, const float (&d)[BN / 2],
                                                  int row0, int col0, uint32_t boxes, int c, int& box) {
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) % 4, leader = (threadIdx.x % 128) == 0;
#pragma unroll
  for (int b = 0; b < BN / 64; ++b, ++box) {
    const uint32_t buf = boxes + uint32_t(box & 1) * kOutBox;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = col0 + b * 64 + j * 8 + (lane & 3) * 2;
      float b0 = 0.0f, b1 = 0.0f;
      const bool bias = p.bias != nullptr;
      if (bias && col < p.N) b0 = to_float(p.bias[col]);
      if (bias && col + 1 < p.N) b1 = to_float(p.bias[col + 1]);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v0 = d[4 * (8 * b + j) + 2 * h], v1 = d[4 * (8 * b + j) + 2 * h + 1];
        if (bias) {
          v0 = v0 + b0;
          v1 = v1 + b1;
        }
        const int row = warp * 16 + (lane >> 2) + 8 * h;  // row of the box; 16-byte chunk j, swizzled by row
        const uint32_t at = buf + uint32_t(row * 128 + ((j ^ (row & 7)) << 4) + (lane & 3) * 4);
        const uint32_t packed = uint32_t(to_bf16(v0).bits) | (uint32_t(to_bf16(v1).bits) << 16);
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(at), "r"(packed) : "memory");
      }
    }
    fence_proxy_async();                // the copy engine reads what these stores wrote
    if (leader) tma_store_wait_read<0>();  // the other buffer's store (one box ago) has read it
    named_barrier_sync(1 + c, 128);
    if (leader && row0 < p.M && col0 + b * 64 < p.N) tma_store_2d(map_y, buf, col0 + b * 64, row0);
  }
}

// The fused gate/up epilogue (LinearParams.gate_up) through the same boxes: the 64 x BN tile holds
// BN / 2 output columns (col0 / 2 on); input box b's gate/up column groups (j, j + 1) give output
// chunk 4 (b % 2) + j / 2, so two input boxes fill one output box (the values of store_gate_up).
template <int BN>
__device__ __forceinline__ void store_gate_up_tile_by_tma(const LinearParams& p, const CUtensorMap* map_y,
                                                          const float (&d)[BN / 2], int row0, int col0, uint32_t boxes,
                                                          int c, int& box) {
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) % 4, leader = (threadIdx.x % 128) == 0;
  static_assert(BN % 128 == 0, "two input boxes per output box");
#pragma unroll
  for (int ob = 0; ob < BN / 128; ++ob, ++box) {
    const uint32_t buf = boxes + uint32_t(box & 1) * kOutBox;
#pragma unroll
    for (int jo = 0; jo < 8; ++jo) {
      const int g = 2 * (8 * ob + jo);  // the gate column group; up is g + 1
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const bf16 v0 = silu_mul_value(round_bf16(d[4 * g + 2 * h]), round_bf16(d[4 * g + 4 + 2 * h]));
        const bf16 v1 = silu_mul_value(round_bf16(d[4 * g + 2 * h + 1]), round_bf16(d[4 * g + 4 + 2 * h + 1]));
        const int row = warp * 16 + (lane >> 2) + 8 * h;
        const uint32_t at = buf + uint32_t(row * 128 + ((jo ^ (row & 7)) << 4) + (lane & 3) * 4);
        const uint32_t packed = uint32_t(v0.bits) | (uint32_t(v1.bits) << 16);
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(at), "r"(packed) : "memory");
      }
    }
    fence_proxy_async();
    if (leader) tma_store_wait_read<0>();
    named_barrier_sync(1 + c, 128);
    const int out_col = col0 / 2 + ob * 64;
    if (leader && row0 < p.M && out_col < p.N / 2) tma_store_2d(map_y, buf, out_col, row0);
  }
}

#endif

// Named barriers 3 and 4: the ping-pong turn of consumer warpgroup 0 / 1 at the tensor cores (1 and
// 2 are the warpgroups' output boxes).
constexpr int kTurnBarrier = 3;

template <int BN, int CM, int CN, int STAGES, int LAG, int OUT, bool PINGPONG, bool REVERSE_K>
__global__ void __launch_bounds__(3 * 128, 1)
    cluster_linear_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                          const __grid_constant__ CUtensorMap map_y, LinearParams p, int store_by_tma) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = ClusterTile<BN, CM, CN, STAGES, LAG, OUT, PINGPONG>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t out_boxes = base + STAGES * T::kStage;
  const uint32_t full = out_boxes + T::kOutBytes, empty = full + 8 * STAGES;
  const int tid = threadIdx.x, wg = tid / 128;
  const uint32_t rank = T::kCtas == 1 ? 0 : cluster_cta_rank();
  const int rank_m = int(rank) / CN, rank_n = int(rank) % CN;
  const int cluster = T::kCtas == 1 ? blockIdx.x : int(cluster_index());
  const int clusters = T::kCtas == 1 ? gridDim.x : int(cluster_count());
  const int tiles = ((p.M + T::kRows * CM - 1) / (T::kRows * CM)) * ((p.N + BN * CN - 1) / (BN * CN));
  const int KT = (p.K + kBK - 1) / kBK;
  // This CTA's tile of cluster tile t.
  auto tile_origin = [&](int t, int* m0, int* n0) {
    tile_of_block(t, p.M, p.N, T::kRows * CM, BN * CN, m0, n0);
    *m0 += rank_m * T::kRows;
    *n0 += rank_n * BN;
  };
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, T::kConsumersPerStage * T::kCtas);  // one arrival per reading warpgroup of each CTA
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (T::kCtas > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }
  wait_for_previous_kernel();  // the barriers are set up; x and y belong to the kernels before

  if (wg == 0) {  // producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      int it = 0;
      for (int t = cluster; t < tiles; t += clusters) {
        int m0, n0;
        tile_origin(t, &m0, &n0);
        // The rows of B (the weights) this CTA copies: half of the shared box, or its own box.
        const int b_row = CM > 1 ? n0 + rank_m * T::kBRows : n0;
        for (int step = 0; step < KT; ++step, ++it) {
          const int s = it % STAGES, kt = REVERSE_K ? KT - 1 - step : step;
          mbar_wait(empty + 8 * s, ((it / STAGES) & 1) ^ 1);
          mbar_expect_tx(full + 8 * s, T::kStage);  // own copies and the peer's multicast half
          const uint32_t stage = base + s * T::kStage, bar = full + 8 * s;
          if constexpr (CN == 2) {  // A shared along N: this CTA copies rows [kARows rank_n, + kARows) to both
            tma_load_2d_multicast(stage + rank_n * T::kARows * 128, &map_a, kt * kBK, m0 + rank_n * T::kARows, bar,
                                  T::all_ctas());
          } else {
            tma_load_2d(stage, &map_a, kt * kBK, m0, bar);
          }
          if constexpr (CM > 1) {  // B shared along M: this CTA copies rows [kBRows rank_m, + kBRows) to all
            tma_load_2d_multicast(stage + T::kABytes + rank_m * T::kBRows * 128, &map_b, kt * kBK, b_row, bar,
                                  T::all_ctas());
          } else {
            tma_load_2d(stage + T::kABytes, &map_b, kt * kBK, b_row, bar);
          }
        }
      }
    }
  } else {  // consumers: warpgroup c = wg - 1
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1;
    auto release = [&](int s) {  // this warpgroup no longer reads stage s: thread i tells CTA i
      if constexpr (T::kCtas == 1) {
        if (tid % 128 == 0) mbar_arrive(empty + 8 * s);
      } else if (tid % 128 < T::kCtas) {
        mbar_arrive_cluster(empty + 8 * s, uint32_t(tid % 128));
      }
    };
    int box = 0;
    // This warpgroup's 64 x BN accumulators at (row0, col0) to y.
    auto epilogue = [&](const float(&d)[BN / 2], int row0, int col0) {
      if constexpr (OUT > 0) {
        if (store_by_tma) {
          const uint32_t boxes = out_boxes + uint32_t(c * OUT * kOutBox);
          if constexpr (BN % 128 == 0) {
            if (p.gate_up) {
              store_gate_up_tile_by_tma<BN>(p, &map_y, d, row0, col0, boxes, c, box);
              return;
            }
          }
          store_tile_by_tma<BN>(p, &map_y, d, row0, col0, boxes, c, box);
          return;
        }
      }
      store_wgmma_accumulators<BN>(p, d, row0, col0, false);
    };
    if constexpr (PINGPONG) {
      // Warpgroup c takes the walk's tiles c, c + 2, ...; their k tiles sit in the ring in walk
      // order (tile i's from it = i KT on). The turn at the tensor cores passes from one warpgroup
      // to the other once all of a tile's groups are issued (barrier 3 + c: warpgroup c waits,
      // the other arrives), so their mainloops alternate and each one's epilogue runs under the
      // other's mainloop. Every wait is matched by exactly one arrival: warpgroup 1 gives the first
      // turn, and a warpgroup passes the turn only where the other has a tile left.
      if (c == 1) named_barrier_arrive(kTurnBarrier, 256);
      for (int t = cluster + c * clusters, i = c; t < tiles; t += 2 * clusters, i += 2) {
        int m0, n0;
        tile_origin(t, &m0, &n0);
        int it = i * KT;
        const bool other_has_next = t + clusters < tiles;
        float d[BN / 2];
        named_barrier_sync(kTurnBarrier + c, 256);
        wgmma_tile<BN, STAGES, LAG>(d, KT, it, base, T::kStage, 0, T::kABytes, full, release, [&] {
          if (other_has_next) named_barrier_arrive(kTurnBarrier + 1 - c, 256);
        });
        epilogue(d, m0, n0);
      }
    } else {  // both warpgroups on every tile: warpgroup c owns rows [64c, 64c + 64)
      int it = 0;
      for (int t = cluster; t < tiles; t += clusters) {
        int m0, n0;
        tile_origin(t, &m0, &n0);
        float d[BN / 2];
        wgmma_tile<BN, STAGES, LAG>(d, KT, it, base, T::kStage, c * 64 * kBK * 2, T::kABytes, full, release);
        epilogue(d, m0 + c * 64, n0);
      }
    }
    if constexpr (OUT > 0) {
      if (store_by_tma && tid % 128 == 0) tma_store_wait_all();  // the boxes are read before the CTA leaves
    }
  }
  __syncwarp();
  if constexpr (T::kCtas > 1) cluster_sync();  // the peer may still arrive on this CTA's barriers
#endif
}

template <int BN, int CM, int CN, int STAGES, int LAG, int OUT = 0, bool PINGPONG = false, bool REVERSE_K = false>
absl::Status launch(const LinearParams& p, cudaStream_t stream) {
  using T = ClusterTile<BN, CM, CN, STAGES, LAG, OUT, PINGPONG>;
  auto kernel = cluster_linear_kernel<BN, CM, CN, STAGES, LAG, OUT, PINGPONG, REVERSE_K>;
  static int max_clusters = 0;
  cudaLaunchAttribute attribute[2];
  cudaLaunchConfig_t config = cluster_launch_config(T::kCtas, T::kThreads, T::kSmem, stream, attribute);
  if (max_clusters == 0) {
    SAMEBITS_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmem));
    int device = 0, sms = 0;
    SAMEBITS_CUDA_TRY(cudaGetDevice(&device));
    SAMEBITS_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    config.gridDim = dim3(unsigned(sms / T::kCtas * T::kCtas));
    SAMEBITS_CUDA_TRY(cudaOccupancyMaxActiveClusters(&max_clusters, kernel, &config));
    if (max_clusters < 1) return absl::InternalError("linear: the cluster kernel does not fit on the device");
  }
  CUtensorMap map_a, map_b, map_y = {};
  SAMEBITS_RETURN_IF_ERROR(make_tma_map(&map_a, p.x, p.M, p.K, T::kARows));
  SAMEBITS_RETURN_IF_ERROR(make_tma_map(&map_b, p.w, p.N, p.K, T::kBRows));
  // Staged output: bf16 y whose rows the copy engine can address (16-byte aligned, N % 8 == 0).
  // The fused gate/up output ([M, N / 2]) through the boxes where the tile width is a multiple of
  // 128 (two input boxes per output box), else stored directly.
  const int out_n = p.gate_up ? p.N / 2 : p.N;
  const int store_by_tma = OUT > 0 && p.y_f32 == nullptr && (!p.gate_up || BN % 128 == 0) && out_n % 8 == 0 &&
                           (reinterpret_cast<uintptr_t>(p.y) & 15) == 0;
  if (store_by_tma) SAMEBITS_RETURN_IF_ERROR(make_tma_map(&map_y, p.y, p.M, out_n, 64));
  const int64_t tiles = ceil_div64(p.M, T::kRows * CM) * ceil_div64(p.N, BN * CN);
  config.gridDim = dim3(unsigned(std::min<int64_t>(tiles, max_clusters) * T::kCtas));
  attribute[config.numAttrs++] = after_previous_kernel();
  SAMEBITS_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, map_a, map_b, map_y, p, store_by_tma));
  return check_launch("cluster_linear_kernel");
}

}  // namespace

absl::Status launch_cluster_linear(const LinearParams& p, ClusterConfig config, cudaStream_t stream) {
  if (!is_hopper_device()) return absl::UnimplementedError("linear: the cluster kernels need compute capability 9.0");
  switch (config) {
    case ClusterConfig::k256m2: return launch<256, 2, 1, 4, 0>(p, stream);
    case ClusterConfig::k256m2lag: return launch<256, 2, 1, 4, 1>(p, stream);
    case ClusterConfig::k256n2: return launch<256, 1, 2, 4, 0>(p, stream);
    case ClusterConfig::k256: return launch<256, 1, 1, 4, 0>(p, stream);
    case ClusterConfig::k192m2: return launch<192, 2, 1, 5, 1>(p, stream);
    case ClusterConfig::k192n2: return launch<192, 1, 2, 5, 1>(p, stream);
    case ClusterConfig::k128m2: return launch<128, 2, 1, 6, 1>(p, stream);
    case ClusterConfig::k128n2: return launch<128, 1, 2, 6, 1>(p, stream);
    case ClusterConfig::k128n2lag0: return launch<128, 1, 2, 6, 0>(p, stream);
    case ClusterConfig::k64n2: return launch<64, 1, 2, 8, 1>(p, stream);
    case ClusterConfig::k256m2out: return launch<256, 2, 1, 4, 0, 2>(p, stream);
    case ClusterConfig::k256n2out: return launch<256, 1, 2, 4, 0, 2>(p, stream);
    case ClusterConfig::k192m2out: return launch<192, 2, 1, 4, 1, 2>(p, stream);
    case ClusterConfig::k128m2out: return launch<128, 2, 1, 6, 1, 2>(p, stream);
    case ClusterConfig::k128n2out: return launch<128, 1, 2, 6, 1, 2>(p, stream);
    case ClusterConfig::k64n2out: return launch<64, 1, 2, 8, 1, 2>(p, stream);
    case ClusterConfig::k256m2pingpong: return launch<256, 2, 1, 4, 1, 2, true>(p, stream);
    case ClusterConfig::kPlantedReverseK: return launch<256, 2, 1, 4, 0, 0, false, true>(p, stream);
  }
  return absl::InvalidArgumentError("linear: unknown cluster configuration");
}

}  // namespace samebits::cuda
