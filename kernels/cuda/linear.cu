// linear on CUDA: y[m,n] = sum_k x[m,k] * w[n,k] (+ bias[n]), fp32 accumulation, bf16 or fp32 out.
//
// The plan (LinearArgs.plan, kernels/plan.h) picks the path: kLibrary -> cuBLASLt, kFixedOrder
// (split_k = 1) -> our own kernel. plan_matmul gives kLibrary in default mode, kFixedOrder in
// invariant mode.
// Default mode: cuBLASLt (bf16 inputs, fp32 compute) with its own heuristic algorithm choice
// (kernels/cuda/cublaslt_matmul.cpp). Its split-K, stream-K and tile choices follow M, so a row's
// bits follow the batch size, as in production. Run to run it is deterministic (cuBLAS's in-order
// reductions).
//
// Invariant mode: our own tensor-core kernel. Every output element is ONE chain of
// mma.sync.m16n8k16 (bf16 in, fp32 accumulate) over k16 steps in increasing k, starting from +0,
// with K zero-padded to a multiple of 64: acc = mma(x[m, 0:16], w[n, 0:16], 0);
// acc = mma(x[m, 16:32], w[n, 16:32], acc); ... then + bias (one fp32 add) and one rounding to
// bf16 (or none for fp32). No split-K, no stream-K. The instruction's output (m, n) depends only on
// row m of x and row n of w, so the tile configuration (chosen from M and N for speed; the
// benchmarks and tests force each one) only decides WHO computes an element, never HOW: a row's
// bits are the same alone, at any position of any batch, under every configuration, run to run.
// Small M is memory-bound: rows are padded into the m16 instruction shape (zero-filled, no memory
// traffic) and the weights are streamed through a deep cp.async pipeline by narrow column tiles.
// On Hopper the automatic choice uses the TMA-fed wgmma kernels instead (same chain: wgmma
// m64nNk16 steps in increasing k from +0; or mma.sync's m16n8k16 steps): sm90a/linear_tma.cu's
// swapped tiles at small M, then
// sm90a/linear_cluster.cu's 2-CTA clusters of 128 x 256/192/128/64 tiles sharing one operand by
// multicast, their output stored by TMA.
//
// gate_up_silu (invariant mode) is this linear on the gate/up weights interleaved by groups of 8
// rows, with a fused epilogue (linear_common.cuh store_gate_up): each thread holds a gate column
// and its up column, rounds both to bf16 as the plain store would, and applies silu_mul's
// arithmetic, so no [M, 2F] output goes through memory and the bits are those of linear + silu_mul
// under every configuration (the cluster tiles then store directly instead of by TMA).
#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/linear_common.cuh"
#include "kernels/cuda/tensor_core.cuh"
#include "kernels/gate_up_silu.h"
#include "kernels/op_checks.h"

namespace samebits {
namespace {

using cuda::cp_async_16;
using cuda::cp_async_commit;
using cuda::cp_async_wait;
using cuda::ldmatrix_x4;
using cuda::mma_bf16_16816;
using cuda::smem_addr;
using cuda::swizzled;
using cuda::LinearParams;
using cuda::load_tile;

template <int BM, int BN, int WM, int WN, int STAGES, bool VEC, int BK>
struct Tile {
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kChunks = BK / 8;
  static constexpr int kStageBytes = (BM + BN) * BK * 2;
  static constexpr int kSmemBytes = kStageBytes * STAGES;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 64 == 0, "warp tile in m16 x n16 units, BK of 64s");
};

template <int BM, int BN, int WM, int WN, int STAGES, bool VEC, int BK>
__global__ void __launch_bounds__(Tile<BM, BN, WM, WN, STAGES, VEC, BK>::kThreads)
    invariant_linear_kernel(LinearParams p) {
  cuda::wait_for_previous_kernel();
  using T = Tile<BM, BN, WM, WN, STAGES, VEC, BK>;
  constexpr int MT = WM / 16, NT = WN / 8;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t base = smem_addr(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / T::kWarpsN, warp_n = warp % T::kWarpsN;
  int m0, n0;
  cuda::tile_of_block(blockIdx.x, p.M, p.N, BM, BN, &m0, &n0);

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int KT = (p.K + BK - 1) / BK;
  auto load_stage = [&](int kt) {
    const uint32_t stage = base + (kt % STAGES) * T::kStageBytes;
    load_tile<BM, T::kThreads, VEC, BK>(stage, p.x, m0, p.M, p.K, kt * BK, tid);
    load_tile<BN, T::kThreads, VEC, BK>(stage + BM * BK * 2, p.w, n0, p.N, p.K, kt * BK, tid);
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_stage(s);
    cp_async_commit();
  }

  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (kt + STAGES - 1 < KT) load_stage(kt + STAGES - 1);
    cp_async_commit();
    const uint32_t a_stage = base + (kt % STAGES) * T::kStageBytes;
    const uint32_t b_stage = a_stage + BM * BK * 2;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int row = warp_m * WM + mt * 16 + (lane & 15);
        ldmatrix_x4(a[mt], a_stage + swizzled(row, kk * 2 + (lane >> 4), T::kChunks));
      }
      uint32_t b[NT][2];
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        const int row = warp_n * WN + np * 16 + (lane & 7) + ((lane >> 4) << 3);
        uint32_t r[4];
        ldmatrix_x4(r, b_stage + swizzled(row, kk * 2 + ((lane >> 3) & 1), T::kChunks));
        b[2 * np][0] = r[0];
        b[2 * np][1] = r[1];
        b[2 * np + 1][0] = r[2];
        b[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) mma_bf16_16816(acc[mt][nt], a[mt], b[nt][0], b[nt][1]);
    }
  }
  cp_async_wait<0>();

  static_assert(NT % 2 == 0, "n8 tiles in pairs: columns c and c + 8 of one thread (the fused gate/up epilogue)");
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2)
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          cuda::store_output_pair8(p, m0 + warp_m * WM + mt * 16 + (lane >> 2) + half * 8,
                                   n0 + warp_n * WN + nt * 8 + (lane & 3) * 2 + e, acc[mt][nt][half * 2 + e],
                                   acc[mt][nt + 1][half * 2 + e]);
        }
}

struct Config {
  const char* name;
  int bm, bn, threads, smem;
  void (*kernel)(LinearParams);
  // kStream: linear_stream.cu; kWgmma: sm90a/linear_wgmma.cu; kTma: sm90a/linear_tma.cu;
  // kCluster: sm90a/linear_cluster.cu
  enum Kind { kMma, kStream, kWgmma, kTma, kCluster } kind;
  cuda::TmaConfig tma = cuda::TmaConfig::k128x256;
  cuda::ClusterConfig cluster = cuda::ClusterConfig::k256m2;
};

template <int BM, int BN, int WM, int WN, int STAGES, bool VEC, int BK>
constexpr Config make_config(const char* name) {
  using T = Tile<BM, BN, WM, WN, STAGES, VEC, BK>;
  return Config{name, BM, BN, T::kThreads, T::kSmemBytes,
                invariant_linear_kernel<BM, BN, WM, WN, STAGES, VEC, BK>, Config::kMma};
}

// Swapped TMA tiles: 64 weight rows (the A operand) x `rows` rows of x, one consumer warpgroup.
constexpr Config swapped_config(const char* name, int rows, cuda::TmaConfig tma) {
  return Config{name, rows, 64, 256, 0, nullptr, Config::kTma, tma};
}

constexpr Config cluster_config(const char* name, int bn, cuda::ClusterConfig cluster, int bm = 128) {
  return Config{name, bm, bn, 384, 0, nullptr, Config::kCluster, cuda::TmaConfig::k128x256, cluster};
}

// Aligned configurations, narrow to wide (the small ones stream long contiguous row pieces per
// stage), then the bulk-copy streaming one (M <= 16), the wgmma ones (Hopper), and the unaligned
// fallback (K % 8 != 0 or pointers not 16-byte aligned: same arithmetic with element loads).
enum ConfigIndex { kMma16x32, kMma16x64, kMma32x64, kMma64x128, kMma128x128, kMma128x256, kStream16x32,
                   kWgmma64x256, kWgmma128x256, kWgmma128x256Overlap, kTma128x256, kTma128x128, kTmaSwap64x16,
                   kTmaSwap64x32, kTmaSwap64x64, kCluster256m2, kCluster256m2Lag, kCluster256n2, kCluster256,
                   kCluster192m2, kCluster192n2, kCluster128m2, kCluster128n2, kCluster128n2Lag0, kCluster64n2,
                   kTmaSwap64x16Deep, kTmaSwap64x32Deep, kTmaSwap64x64Deep, kCluster256m2Out, kCluster256n2Out,
                   kCluster192m2Out, kCluster128m2Out, kCluster128n2Out, kCluster64n2Out, kTmaPair64x32,
                   kMmaSwap64x16Deep, kPingpong256m2, kUnaligned16x32, kConfigCount };
const Config kConfigs[kConfigCount] = {
    make_config<16, 32, 16, 16, 4, true, 256>("mma 16x32x256/4st/2w"),
    make_config<16, 64, 16, 16, 5, true, 128>("mma 16x64x128/5st/4w"),
    make_config<32, 64, 16, 32, 4, true, 128>("mma 32x64x128/4st/4w"),
    make_config<64, 128, 32, 64, 4, true, 64>("mma 64x128x64/4st/4w"),
    make_config<128, 128, 64, 64, 4, true, 64>("mma 128x128x64/4st/4w"),
    make_config<128, 256, 64, 64, 3, true, 64>("mma 128x256x64/3st/8w"),
    Config{"bulk-copy mma 16x32x512/4st/2w", 16, 32, 64, 0, nullptr, Config::kStream},
    Config{"wgmma 64x256x64/4st/1wg", 64, 256, 128, 0, nullptr, Config::kWgmma},
    Config{"wgmma 128x256x64/4st/2wg", 128, 256, 256, 0, nullptr, Config::kWgmma},
    Config{"wgmma 128x256x64/4st/2wg/overlap", -128, 256, 256, 0, nullptr, Config::kWgmma},
    Config{"tma wgmma 128x256x64/4st/2wg persistent", 128, 256, 384, 0, nullptr, Config::kTma, cuda::TmaConfig::k128x256},
    Config{"tma wgmma 128x128x64/6st/2wg persistent", 128, 128, 384, 0, nullptr, Config::kTma, cuda::TmaConfig::k128x128},
    swapped_config("tma wgmma swapped w64 x m16 x64/10st", 16, cuda::TmaConfig::kSwap64x16),
    swapped_config("tma wgmma swapped w64 x m32 x64/8st", 32, cuda::TmaConfig::kSwap64x32),
    swapped_config("tma wgmma swapped w64 x m64 x64/6st", 64, cuda::TmaConfig::kSwap64x64),
    cluster_config("cluster 2x(128x256) shared w, 4st", 256, cuda::ClusterConfig::k256m2),
    cluster_config("cluster 2x(128x256) shared w, 4st, release lag 1", 256, cuda::ClusterConfig::k256m2lag),
    cluster_config("cluster 2x(128x256) shared x, 4st", 256, cuda::ClusterConfig::k256n2),
    cluster_config("tma 128x256 persistent, 4st, no cluster", 256, cuda::ClusterConfig::k256),
    cluster_config("cluster 2x(128x192) shared w, 5st", 192, cuda::ClusterConfig::k192m2),
    cluster_config("cluster 2x(128x192) shared x, 5st", 192, cuda::ClusterConfig::k192n2),
    cluster_config("cluster 2x(128x128) shared w, 6st", 128, cuda::ClusterConfig::k128m2),
    cluster_config("cluster 2x(128x128) shared x, 6st", 128, cuda::ClusterConfig::k128n2),
    cluster_config("cluster 2x(128x128) shared x, 6st, release lag 0", 128, cuda::ClusterConfig::k128n2lag0),
    cluster_config("cluster 2x(128x64) shared x, 8st", 64, cuda::ClusterConfig::k64n2),
    swapped_config("tma wgmma swapped w64 x m16 x64/20st", 16, cuda::TmaConfig::kSwap64x16Deep),
    swapped_config("tma wgmma swapped w64 x m32 x64/18st", 32, cuda::TmaConfig::kSwap64x32Deep),
    swapped_config("tma wgmma swapped w64 x m64 x64/13st", 64, cuda::TmaConfig::kSwap64x64Deep),
    cluster_config("cluster 2x(128x256) shared w, 4st, output by TMA", 256, cuda::ClusterConfig::k256m2out),
    cluster_config("cluster 2x(128x256) shared x, 4st, output by TMA", 256, cuda::ClusterConfig::k256n2out),
    cluster_config("cluster 2x(128x192) shared w, 4st, output by TMA", 192, cuda::ClusterConfig::k192m2out),
    cluster_config("cluster 2x(128x128) shared w, 6st, output by TMA", 128, cuda::ClusterConfig::k128m2out),
    cluster_config("cluster 2x(128x128) shared x, 6st, output by TMA", 128, cuda::ClusterConfig::k128n2out),
    cluster_config("cluster 2x(128x64) shared x, 8st, output by TMA", 64, cuda::ClusterConfig::k64n2out),
    swapped_config("tma wgmma swapped pair 2x(w64 x m32) shared w, x64/18st", 32, cuda::TmaConfig::kPair64x32),
    swapped_config("tma mma.sync swapped w64 x m16 x64/20st", 16, cuda::TmaConfig::kMmaSwap64x16Deep),
    cluster_config("ping-pong 2x(64x256) shared w, 4st, output by TMA", 256, cuda::ClusterConfig::k256m2pingpong, 64),
    make_config<16, 32, 16, 16, 4, false, 64>("mma 16x32x64/4st/2w/unaligned"),
};
constexpr int kUnalignedConfig = kUnaligned16x32;

bool hopper() { return cuda::is_hopper_device(); }

absl::Status validate(const LinearArgs& a) {
  if (absl::Status shape = check_linear_shape(a); !shape.ok()) return shape;
  if (a.M > INT32_MAX || a.N > INT32_MAX || a.K > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("linear: M, N, K must fit in 32 bits, got ", a.M, ", ",
                                                   a.N, ", ", a.K));
  }
  return absl::OkStatus();
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

__global__ void add_bias_f32_kernel(float* y, const bf16* bias, int64_t M, int64_t N) {
  cuda::wait_for_previous_kernel();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  y[i] = y[i] + to_float(bias[i % N]);
}

}  // namespace

namespace cuda {
bool is_hopper_device() {
  static const bool yes = [] {
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    return major == 9 && minor == 0;
  }();
  return yes;
}

absl::Status add_bias_f32(const ExecContext& ctx, float* y, const bf16* bias, int64_t M, int64_t N) {
  const int64_t n = M * N;
  return launch_after_previous("add_bias_f32_kernel", add_bias_f32_kernel, dim3(unsigned(ceil_div64(n, 256))),
                               dim3(256), 0, stream_of(ctx), y, bias, M, N);
}
}  // namespace cuda

int cuda_linear_invariant_config_count() { return kConfigCount; }

std::string cuda_linear_invariant_config_name(int config) {
  if (config < 0 || config >= kConfigCount) return "auto";
  return kConfigs[config].name;
}

namespace {
int multiprocessors() {
  static const int sms = [] {
    int device = 0, count = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
    return count > 0 ? count : 132;
  }();
  return sms;
}

// Above 64 rows on Hopper: the cluster configuration with the least estimated time. The persistent
// grid holds one pair of CTAs per two SMs, so a shape takes whole waves of cluster tiles; a wave
// lasts as long as one CTA's tile, 128 x BN over the tile width's relative rate (measured on the
// H200, bench_cuda_matmul --sweep). Pairs share the weight tile (two row tiles) unless M is one row
// tile; 64-column tiles always share the activation tile (the weights then stream through 2 x SMs
// CTAs).
struct ClusterCandidate {
  int config, bn, rows_per_cluster, columns_per_cluster;
  double rate;
};
struct ClusterCandidates {
  ClusterCandidate share_w[4], share_x[4];
};

// The tiles with the output stored by the copy engine (but 192 columns sharing x).
constexpr ClusterCandidates kClusters = {
    {{kCluster256m2Out, 256, 256, 256, 1.0}, {kCluster192m2Out, 192, 256, 192, 0.95},
     {kCluster128m2Out, 128, 256, 128, 0.85}, {kCluster64n2Out, 64, 128, 128, 0.6}},
    {{kCluster256n2Out, 256, 128, 512, 1.0}, {kCluster192n2, 192, 128, 384, 0.95},
     {kCluster128n2Out, 128, 128, 256, 0.85}, {kCluster64n2Out, 64, 128, 128, 0.6}}};

int cluster_auto_config(int64_t M, int64_t N) {
  const int64_t slots = std::max(1, multiprocessors() / 2);
  int best = -1;
  double best_time = 1e300;
  for (const ClusterCandidate& c : M <= 128 ? kClusters.share_x : kClusters.share_w) {
    const int64_t cluster_tiles = cuda::ceil_div64(M, c.rows_per_cluster) * cuda::ceil_div64(N, c.columns_per_cluster);
    const double time = double(cuda::ceil_div64(cluster_tiles, slots)) * c.bn / c.rate;
    if (time < best_time) {  // ties: the wider tile
      best_time = time;
      best = c.config;
    }
  }
  return best;
}

// Swapped tiles (64 weight rows x 16 or 32 rows of x): the deep ring (one block per SM) while the
// blocks fill at most half of the SMs, else the shallow one (two blocks per SM). Measured on the
// H200 (2026-12-01 sweep): deep is 3-10% faster at 64 blocks (N = 4096) but ~7% slower at 96
// (N = 6144); the 64-row tiles' deep ring (twice the weight bytes in flight of the shallow one)
// wins up to one block per SM (N = 4096 and 6144 at M = 64, N = 4096 at M = 128).
// by_waves (the current choice): also deep where its whole waves of blocks take less time than the
// shallow ring's, whose blocks run at about half rate two to an SM once they outnumber the SMs:
// at N = 24576 (384 blocks: 3 deep waves against 2 shallow ones) deep was 3-5% faster at M = 1..64
// (sweep of 2026-12-01 ~15:45 UTC); at N = 6144 and 151936 the two tie by this count and shallow
// measured faster.
bool deep_waves_win(int64_t blocks) {
  const int64_t sms = multiprocessors();
  const int64_t deep = cuda::ceil_div64(blocks, sms), shallow = blocks <= sms ? 1 : 2 * cuda::ceil_div64(blocks, 2 * sms);
  return deep < shallow;
}
int swapped_ring(int64_t M, int64_t N, int rows, int shallow, int deep, bool by_waves) {
  const int64_t blocks = cuda::ceil_div64(N, 64) * cuda::ceil_div64(M, rows);
  return 2 * blocks <= multiprocessors() || (by_waves && deep_waves_win(blocks)) ? deep : shallow;
}
bool swapped64_deep(int64_t M, int64_t N, bool by_waves) {
  const int64_t blocks = cuda::ceil_div64(N, 64) * cuda::ceil_div64(M, 64);
  return blocks <= multiprocessors() || (by_waves && deep_waves_win(blocks));
}
}  // namespace

// The automatic choice, from measurements on the H200 (bench_cuda_matmul --sweep): on Hopper the
// TMA-fed kernels: swapped tiles (64 weight rows x 16/32/64 rows of x) while M is small (and at
// M = 128 where 64-row tiles still fit on the SMs at once), else the 2-CTA cluster kernels
// (cluster_auto_config). Where the weight has at most half as many 64-row tiles as there are SMs
// (N = 4096), a tile's time is its K chain: the mma.sync 16-row tile up to M = 16 (0.96 -> 1.0 of
// cuBLASLt at K = 4096, 0.84-0.88 -> 0.90-0.94 at K = 12288), and 32-row tiles up to M = 64 (128
// blocks; 0.71 -> 0.81 at K = 4096, 0.79 -> 0.88 at K = 12288, against the deep 64-row tile).
// Elsewhere the mma.sync tiles. Only speed depends on it: every configuration gives the same bits
// (tests/gpu/test_gpu_linear.cpp).
int cuda_linear_invariant_auto_config(int64_t M, int64_t N, int64_t /*K*/) {
  if (hopper()) {
    const bool few_weight_tiles = 2 * cuda::ceil_div64(N, 64) <= multiprocessors();
    if (M <= 16 && few_weight_tiles) return kMmaSwap64x16Deep;
    if (M <= 16) return swapped_ring(M, N, 16, kTmaSwap64x16, kTmaSwap64x16Deep, true);
    if (M <= 32 || (M <= 64 && few_weight_tiles)) return swapped_ring(M, N, 32, kTmaSwap64x32, kTmaSwap64x32Deep, true);
    // The wave count compares the two rings; above M = 64 the alternative is the cluster kernels.
    if (M <= 128 && swapped64_deep(M, N, M <= 64)) return kTmaSwap64x64Deep;
    if (M <= 64) return kTmaSwap64x64;
    return cluster_auto_config(M, N);
  }
  const int64_t tiles128 = cuda::ceil_div64(M, 128) * cuda::ceil_div64(N, 256);
  if (M >= 512 || (M >= 128 && tiles128 >= 96)) return kMma128x256;
  if (M <= 16) return N >= 16384 ? kMma16x64 : kMma16x32;
  if (M <= 32) return N >= 16384 ? kMma64x128 : N >= 6144 ? kMma32x64 : kMma16x32;
  if (M <= 64) return N >= 16384 ? kMma64x128 : kMma32x64;
  return kMma64x128;
}

// main's choice before the mma.sync tile and the wave count (2026-12-01, 7dc3251): the benchmark's
// side-by-side column.
int cuda_linear_invariant_previous_auto_config(int64_t M, int64_t N) {
  if (!hopper()) return cuda_linear_invariant_auto_config(M, N, 0);
  if (M <= 16) return swapped_ring(M, N, 16, kTmaSwap64x16, kTmaSwap64x16Deep, false);
  if (M <= 32) return swapped_ring(M, N, 32, kTmaSwap64x32, kTmaSwap64x32Deep, false);
  if (M <= 128 && swapped64_deep(M, N, false)) return kTmaSwap64x64Deep;
  if (M <= 64) return kTmaSwap64x64;
  return cluster_auto_config(M, N);
}

namespace {
// gate_up: the fused gate/up epilogue (LinearParams.gate_up; a.y is [M, N / 2]).
absl::Status run_invariant(const ExecContext& ctx, const LinearArgs& a, int config, bool gate_up) {
  SAMEBITS_RETURN_IF_ERROR(validate(a));
  const bool vec = a.K % 8 == 0 && aligned16(a.x) && aligned16(a.w);
  if (!vec) {
    config = kUnalignedConfig;
  } else if (config < 0 || config >= kConfigCount) {
    config = cuda_linear_invariant_auto_config(a.M, a.N, a.K);
  }
  // A forced configuration that cannot take the shape or the device runs the first one instead.
  const Config::Kind kind = kConfigs[config].kind;
  if ((kind == Config::kStream && a.M > 16) ||
      ((kind == Config::kWgmma || kind == Config::kTma || kind == Config::kCluster) && !hopper())) {
    config = kMma16x32;
  }
  const Config& c = kConfigs[config];
  LinearParams p{a.x, a.w, a.bias, a.y, a.y_f32, int(a.M), int(a.N), int(a.K), gate_up ? 1 : 0};
  const int64_t tiles = cuda::ceil_div64(a.M, std::abs(c.bm)) * cuda::ceil_div64(a.N, c.bn);
  if (tiles > INT32_MAX) return absl::InvalidArgumentError("linear: too many tiles");
  if (c.kind == Config::kWgmma) return cuda::launch_wgmma_linear(p, c.bm, cuda::stream_of(ctx));
  if (c.kind == Config::kTma) return cuda::launch_tma_linear(p, c.tma, cuda::stream_of(ctx));
  if (c.kind == Config::kCluster) return cuda::launch_cluster_linear(p, c.cluster, cuda::stream_of(ctx));
  if (c.kind == Config::kStream) return cuda::launch_stream_linear(p, cuda::stream_of(ctx));
  static bool attributes_set[kConfigCount] = {};
  if (!attributes_set[config]) {
    SAMEBITS_CUDA_TRY(cudaFuncSetAttribute(c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem));
    attributes_set[config] = true;
  }
  return cuda::launch_after_previous(c.name, c.kernel, dim3(unsigned(tiles)), dim3(c.threads), c.smem,
                                     cuda::stream_of(ctx), p);
}

absl::Status run_planted_k_order(const ExecContext& ctx, const LinearArgs& a, bool gate_up) {
  SAMEBITS_RETURN_IF_ERROR(validate(a));
  if (!hopper() || a.K % 8 != 0 || !aligned16(a.x) || !aligned16(a.w)) {
    return absl::UnimplementedError("linear: the planted K-order kernel needs compute capability 9.0 and aligned rows");
  }
  const LinearParams p{a.x, a.w, a.bias, a.y, a.y_f32, int(a.M), int(a.N), int(a.K), gate_up ? 1 : 0};
  return cuda::launch_cluster_linear(p, cuda::ClusterConfig::kPlantedReverseK, cuda::stream_of(ctx));
}
}  // namespace

absl::Status cuda_linear_invariant(const ExecContext& ctx, const LinearArgs& a, int config) {
  return run_invariant(ctx, a, config, false);
}

absl::Status cuda_linear_invariant_planted_k_order(const ExecContext& ctx, const LinearArgs& a) {
  return run_planted_k_order(ctx, a, false);
}

// gate_up_silu in invariant mode: the linear on the interleaved weight with the fused epilogue,
// under the configuration chosen for a linear of 2F columns (same bits under every one).
absl::Status cuda_gate_up_silu_invariant(const ExecContext& ctx, const GateUpSiluArgs& g, int config) {
  if (absl::Status shape = check_gate_up_silu_shape(g); !shape.ok()) return shape;
  LinearArgs a = gate_up_linear_args(g);
  a.y = g.y;
  if (config == kGateUpPlantedKOrder) return run_planted_k_order(ctx, a, true);
  return run_invariant(ctx, a, config, true);
}

absl::Status cuda_linear(const ExecContext& ctx, const LinearArgs& a) {
  if (a.plan.kind == MatmulPlan::Kind::kFixedOrder) {
    if (a.plan.split_k != 1) {
      return absl::UnimplementedError(
          absl::StrCat("linear: plan.split_k = ", a.plan.split_k, " in fixed order is not implemented on cuda"));
    }
    return cuda_linear_invariant(ctx, a, -1);
  }
  SAMEBITS_RETURN_IF_ERROR(validate(a));
  return cuda::cublaslt_linear(ctx, a);
}

}  // namespace samebits
