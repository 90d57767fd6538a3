// Pieces shared by the invariant linear kernels (linear.cu: mma.sync; sm90a/linear_wgmma.cu:
// wgmma): the parameters, the swizzled tile loader, the tile raster and the epilogue. Both kernel
// families compute every output element as ONE chain of k16 tensor-core steps in increasing k
// from +0 (K zero-padded), then + bias, then one rounding: linear.cu's header states the contract.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"

#include "kernels/bf16.h"
#include "kernels/cuda/silu_mul.cuh"
#include "kernels/cuda/tensor_core.cuh"

namespace samebits::cuda {

struct LinearParams {
  const bf16* x;
  const bf16* w;
  const bf16* bias;
  bf16* y;
  float* y_f32;
  int M, N, K;
  // Fused gate/up (gate_up_silu): the N columns alternate 8 gate and 8 up columns
  // (gate_up_weight_row, kernels/ops.h); y is [M, N / 2] = silu_mul(gate, up); no bias, bf16 only.
  int gate_up;
};

// Copies one k-tile (BK columns, BK/8 chunks per row) of ROWS rows starting at row0 into a
// swizzled stage; rows >= limit and columns >= K are zero-filled.
template <int ROWS, int THREADS, bool VEC, int BK>
__device__ __forceinline__ void load_tile(uint32_t stage, const bf16* src, int row0, int limit, int K, int k0,
                                          int tid) {
  constexpr int kChunks = BK / 8;
#pragma unroll
  for (int c = tid; c < ROWS * kChunks; c += THREADS) {
    const int row = c / kChunks, chunk = c % kChunks;
    const int grow = row0 + row, gk = k0 + chunk * 8;
    const uint32_t dst = stage + swizzled(row, chunk, kChunks);
    if constexpr (VEC) {
      const bool valid = grow < limit && gk < K;
      const bf16* ptr = valid ? src + int64_t(grow) * K + gk : src;
      cp_async_16(dst, ptr, valid);
    } else {
      uint16_t v[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        v[e] = (grow < limit && gk + e < K) ? src[int64_t(grow) * K + gk + e].bits : uint16_t(0);
      }
      asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(dst), "r"(uint32_t(v[0]) | (uint32_t(v[1]) << 16)),
                   "r"(uint32_t(v[2]) | (uint32_t(v[3]) << 16)), "r"(uint32_t(v[4]) | (uint32_t(v[5]) << 16)),
                   "r"(uint32_t(v[6]) | (uint32_t(v[7]) << 16)));
    }
  }
}

// Grouped raster: 8 row tiles share a band of column tiles (L2 reuse of x and w).
__device__ __forceinline__ void tile_of_block(int pid, int M, int N, int BM, int BN, int* m0, int* n0) {
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  constexpr int kGroup = 8;
  const int in_group = kGroup * tiles_n;
  const int first_m = (pid / in_group) * kGroup;
  const int group_m = min(tiles_m - first_m, kGroup);
  *m0 = (first_m + (pid % in_group) % group_m) * BM;
  *n0 = ((pid % in_group) / group_m) * BN;
}

// y[row, col] from one accumulator: + bias (one fp32 add), then one rounding (bf16) or none.
__device__ __forceinline__ void store_output(const LinearParams& p, int row, int col, float v) {
  if (row >= p.M || col >= p.N) return;
  if (p.bias != nullptr) v = v + to_float(p.bias[col]);
  if (p.y_f32 != nullptr) {
    p.y_f32[int64_t(row) * p.N + col] = v;
  } else {
    p.y[int64_t(row) * p.N + col] = to_bf16(v);
  }
}

// The fused gate/up epilogue for one row: g at gate column col (col % 16 < 8), u at col + 8, each
// rounded to bf16 as store_output rounds it, then silu_mul's arithmetic (silu_mul.cuh): the bits of
// linear + silu_mul. Every kernel's fragments give one thread both columns: columns 8j.. and
// 8(j+1).. for even j (mma n8 tiles, wgmma column groups), or A rows r and r + 8 (swapped tiles);
// tiles start at multiples of 16 columns.
__device__ __forceinline__ void store_gate_up(const LinearParams& p, int row, int col, float g, float u) {
  if (row >= p.M || col >= p.N) return;
  p.y[int64_t(row) * (p.N / 2) + col / 16 * 8 + col % 8] = silu_mul_value(round_bf16(g), round_bf16(u));
}

// Two accumulators of one thread at columns col and col + 8 of one row: a gate/up pair, or two
// plain outputs.
__device__ __forceinline__ void store_output_pair8(const LinearParams& p, int row, int col, float v0, float v8) {
  if (p.gate_up) {
    store_gate_up(p, row, col, v0, v8);
    return;
  }
  store_output(p, row, col, v0);
  store_output(p, row, col + 8, v8);
}

// One warpgroup's wgmma m64nBN accumulators to y: thread `lane` of warp `warp` holds, for each group
// j of 8 columns, columns 2 * (lane & 3) + {0, 1} of rows a_row and a_row + 8, where
// a_row = a0 + 16 * warp + (lane >> 2) and a0 is the warpgroup's first A row. Unswapped, A rows are
// output rows (two adjacent outputs stored at once where aligned); swapped, A rows are output columns.
template <int BN>
__device__ __forceinline__ void store_wgmma_accumulators(const LinearParams& p, const float (&d)[BN / 2], int a0,
                                                         int b0, bool swapped) {
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) % 4;
  const int r = a0 + warp * 16 + (lane >> 2);
  if (p.gate_up) {
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = b0 + j * 8 + (lane & 3) * 2;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (swapped) {  // A rows r (gate) and r + 8 (up) are output columns
          store_gate_up(p, col + e, r, d[4 * j + e], d[4 * j + 2 + e]);
        } else if (j % 2 == 0) {  // column groups j (gate) and j + 1 (up)
#pragma unroll
          for (int h = 0; h < 2; ++h) store_gate_up(p, r + 8 * h, col + e, d[4 * j + 2 * h + e], d[4 * j + 4 + 2 * h + e]);
        }
      }
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = b0 + j * 8 + (lane & 3) * 2;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
      const int row = r + 8 * h;
      if (swapped) {
        store_output(p, col, row, v0);
        store_output(p, col + 1, row, v1);
      } else if (row < p.M && col + 1 < p.N && (p.N & 1) == 0) {
        float o0 = v0, o1 = v1;
        if (p.bias != nullptr) {
          o0 = o0 + to_float(p.bias[col]);
          o1 = o1 + to_float(p.bias[col + 1]);
        }
        const int64_t at = int64_t(row) * p.N + col;
        if (p.y_f32 != nullptr) {
          *reinterpret_cast<float2*>(p.y_f32 + at) = make_float2(o0, o1);
        } else {
          *reinterpret_cast<uint32_t*>(p.y + at) = uint32_t(to_bf16(o0).bits) | (uint32_t(to_bf16(o1).bits) << 16);
        }
      } else {
        store_output(p, row, col, v0);
        store_output(p, row, col + 1, v1);
      }
    }
  }
}

// Whether the current device is compute capability 9.0 (the sm_90a kernels run only there).
bool is_hopper_device();

// The wgmma kernels (sm90a/linear_wgmma.cu, built for sm_90a only): bm = 64 (one warpgroup) or
// 128 (two), 256 columns per tile; bm = -128: two warpgroups with wgmma overlapping the barrier. Unimplemented on a device that is not compute capability 9.0.
absl::Status launch_wgmma_linear(const LinearParams& p, int bm, cudaStream_t stream);
// The TMA-fed warp-specialised wgmma kernels (sm90a/linear_tma.cu, sm_90a only): A x B tiles of
// 128 x 256 or 128 x 128 (A = x), or swapped (A = w: 64 weight rows x 16/32/64 rows of x, for small M).
// "Deep": the swapped tiles with a ring of about 200 KiB (one block per SM, twice to three times the
// weight bytes in flight) for shapes whose blocks do not fill the SMs twice; "MmaSwap": the deep
// 16-row one with mma.sync consumers (a shorter dependent step). "Pair": deep swapped 64 x 32 tiles
// computed by 2-CTA clusters, the two CTAs taking neighbouring x tiles of one weight tile and
// sharing the weight box by multicast (twice the SMs on the weights, each weight byte read once).
enum class TmaConfig { k128x256, k128x128, kSwap64x16, kSwap64x32, kSwap64x64, kSwap64x16Deep, kSwap64x32Deep,
                       kSwap64x64Deep, kPair64x32, kMmaSwap64x16Deep };
absl::Status launch_tma_linear(const LinearParams& p, TmaConfig config, cudaStream_t stream);
// The cluster kernels (sm90a/linear_cluster.cu, sm_90a only): 128 x BN tiles (A = x) computed by
// 2-CTA clusters sharing the weight tile (m2: two row tiles) or the activation tile (n2: two column
// tiles) through TMA multicast; k256 alone. "lag" / "lag0": the stage is released one wgmma group
// later / as soon as its group retires (the default: one later at 192 columns and fewer).
// "out": the tile's bf16 output staged in shared memory and stored by the copy engine while the
// next tile's wgmma runs (fp32 or unaligned outputs are stored directly).
// "pingpong": each of the two consumer warpgroups owns whole 64 x 256 tiles (every other tile of
// the walk) and their mainloops alternate, so one's epilogue runs under the other's wgmma; output
// by TMA; the pair shares w (rows m0 and m0 + 64). Measured slower than k256m2out (kept as a
// configuration, not chosen: linear_cluster.cu).
// kPlantedReverseK (tests only) is k256m2 with the k tiles summed last to first: a K-order change
// that the configuration tests must see.
enum class ClusterConfig {
  k256m2, k256m2lag, k256n2, k256, k192m2, k192n2, k128m2, k128n2, k128n2lag0, k64n2, k256m2out, k256n2out, k192m2out,
  k128m2out, k128n2out, k64n2out, k256m2pingpong, kPlantedReverseK
};
absl::Status launch_cluster_linear(const LinearParams& p, ClusterConfig config, cudaStream_t stream);
// The bulk-copy streaming kernel for M <= 16 (linear_stream.cu).
absl::Status launch_stream_linear(const LinearParams& p, cudaStream_t stream);

}  // namespace samebits::cuda
