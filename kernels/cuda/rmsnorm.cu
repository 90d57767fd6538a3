// rmsnorm on CUDA (also the per-head q/k norm), optionally fused with the residual add:
// h = bf16(x + residual) is stored into residual, else h = x; y = bf16(bf16(h * inv) * weight),
// inv = 1 / sqrt(sum(h^2) / dim + eps) (IEEE division and square root), as on the CPU.
//
// The sum of squares of one row, in both modes, is built from one WARP ORDER: the row (or a part
// of it) is cut into 8-value chunks from its start; lane l (0..31) takes chunks l, l+32, l+64, ...
// in increasing order and sums h*h over each chunk's values in order (one rounded multiply, one
// rounded add, from +0); the 32 lane sums are combined by the butterfly v += shfl_xor(v, o) for
// o = 16, 8, 4, 2, 1 (commutative adds: every lane ends with the same bits).
// Invariant mode: one warp per row, the warp order over the whole row; rows never share a warp,
//   so a row's bits do not depend on how many rows there are or where it sits. Rows of at most
//   8192 values (dim % 8 == 0) with 16-byte aligned pointers take the register path: the row's
//   loads spread over up to 8 warps and all issued before the first add, the lane sums still
//   formed by one warp in the warp order (rmsnorm_rows_vec_kernel below: memory access only).
// The plan comes in RmsNormArgs (kernels/plan.h). Default mode: parts =
// plan_row_reduce(kDefault, rows, dim, parallel_units).parts. parts == 1:
//   exactly the invariant kernel. parts > 1 (few rows): one block per row, the row cut into
//   `parts` contiguous parts of round_up(ceil(dim / parts), 16) values (as the CPU), each reduced
//   in the warp order by one warp, the part sums added in part order (part 0 first) by one thread.
//   parts grows as rows shrink, so a row's bits follow the batch size. No atomics. Rows of at most
//   8192 values with 16-byte aligned pointers take rmsnorm_split_vec_kernel (the same sums with
//   the row's loads all issued at once: memory access only).
#include <algorithm>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/rmsnorm_math.cuh"
#include "kernels/op_checks.h"

namespace samebits {
namespace {

using cuda::add_squares8;
using cuda::bf16_at;
using cuda::inverse_rms;
using cuda::normed8;
using cuda::pack_bf16x8;
using cuda::warp_butterfly_sum;

struct RmsParams {
  const bf16* x;
  bf16* residual;
  const bf16* weight;
  bf16* y;
  int64_t rows, dim;
  float eps;
  bool vec;  // dim % 8 == 0 and every pointer 16-byte aligned: 16-byte loads (same arithmetic)
};

// Loads 8 values h[i..i+8) of a row (fewer at the row's end; missing ones are not used), forming
// h = bf16(x + residual) and storing it into residual when residual is set.
__device__ __forceinline__ int load_h8(const RmsParams& p, int64_t row, int64_t i, float (&h)[8]) {
  const int64_t base = row * p.dim + i;
  const int n = int(min(int64_t(8), p.dim - i));
  uint16_t xv[8] = {}, rv[8] = {};
  if (p.vec) {
    uint4 a = *reinterpret_cast<const uint4*>(p.x + base);
    const uint32_t aw[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) xv[e] = uint16_t(aw[e / 2] >> (16 * (e % 2)));
    if (p.residual != nullptr) {
      uint4 b = *reinterpret_cast<const uint4*>(p.residual + base);
      const uint32_t bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int e = 0; e < 8; ++e) rv[e] = uint16_t(bw[e / 2] >> (16 * (e % 2)));
    }
  } else {
    for (int e = 0; e < n; ++e) {
      xv[e] = p.x[base + e].bits;
      if (p.residual != nullptr) rv[e] = p.residual[base + e].bits;
    }
  }
  if (p.residual != nullptr) {
    uint16_t out[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      if (e < n) {
        bf16 s = to_bf16(to_float(bf16{xv[e]}) + to_float(bf16{rv[e]}));
        out[e] = s.bits;
        h[e] = to_float(s);
      }
    }
    if (p.vec) {
      uint4 o;
      o.x = uint32_t(out[0]) | (uint32_t(out[1]) << 16);
      o.y = uint32_t(out[2]) | (uint32_t(out[3]) << 16);
      o.z = uint32_t(out[4]) | (uint32_t(out[5]) << 16);
      o.w = uint32_t(out[6]) | (uint32_t(out[7]) << 16);
      *reinterpret_cast<uint4*>(p.residual + base) = o;
    } else {
      for (int e = 0; e < n; ++e) p.residual[base + e] = bf16{out[e]};
    }
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) h[e] = to_float(bf16{xv[e]});
  }
  return n;
}

// The warp order over [begin, end) of a row (begin a multiple of 8); every lane returns the sum.
__device__ __forceinline__ float warp_sum_squares(const RmsParams& p, int64_t row, int64_t begin,
                                                  int64_t end, int lane) {
  float acc = 0.0f;
  for (int64_t i = begin + int64_t(lane) * 8; i < end; i += 256) {
    float h[8];
    const int n = load_h8(p, row, i, h);
    const int m = int(min(int64_t(n), end - i));
    for (int e = 0; e < m; ++e) {
      const float sq = h[e] * h[e];
      acc = acc + sq;
    }
  }
  return warp_butterfly_sum(acc);
}

// y for the elements [begin, end) of a row with stride `step`, reading h back (residual or x).
__device__ __forceinline__ void write_y(const RmsParams& p, int64_t row, float inv, int64_t first,
                                        int64_t step) {
  const bf16* h = p.residual != nullptr ? p.residual : p.x;
  for (int64_t i = first; i < p.dim; i += step) {
    const int64_t at = row * p.dim + i;
    const float normed = round_bf16(to_float(h[at]) * inv);
    p.y[at] = to_bf16(normed * to_float(p.weight[i]));
  }
}

constexpr int kWarpsPerBlock = 8;

// One warp per row (invariant mode, and default mode with parts == 1).
__global__ void __launch_bounds__(kWarpsPerBlock * 32) rmsnorm_rows_kernel(RmsParams p) {
  cuda::wait_for_previous_kernel();
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= p.rows) return;
  const float ss = warp_sum_squares(p, row, 0, p.dim, lane);
  const float inv = inverse_rms(ss, p.dim, p.eps);
  __syncwarp();
  // Each lane rewrites exactly the chunks it read, so y may alias x.
  const bf16* h = p.residual != nullptr ? p.residual : p.x;
  for (int64_t i = int64_t(lane) * 8; i < p.dim; i += 256) {
    const int n = int(min(int64_t(8), p.dim - i));
    for (int e = 0; e < n; ++e) {
      const int64_t at = row * p.dim + i + e;
      const float normed = round_bf16(to_float(h[at]) * inv);
      p.y[at] = to_bf16(normed * to_float(p.weight[i + e]));
    }
  }
}

// One block per row, `parts` contiguous parts of part_len values (default mode, few rows).
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    rmsnorm_split_kernel(RmsParams p, int parts, int64_t part_len) {
  extern __shared__ float part_sums[];  // [parts]
  __shared__ float inv_shared;
  cuda::wait_for_previous_kernel();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t row = blockIdx.x;
  for (int q = warp; q < parts; q += kWarpsPerBlock) {
    const int64_t begin = int64_t(q) * part_len;
    const int64_t end = min(p.dim, begin + part_len);
    const float s = begin < end ? warp_sum_squares(p, row, begin, end, lane) : 0.0f;
    if (lane == 0) part_sums[q] = s;
  }
  __syncthreads();  // also orders the residual stores before the reads of write_y
  if (threadIdx.x == 0) {
    float ss = part_sums[0];
    for (int q = 1; q < parts; ++q) {
      if (int64_t(q) * part_len < p.dim) ss = ss + part_sums[q];
    }
    inv_shared = inverse_rms(ss, p.dim, p.eps);
  }
  __syncthreads();
  write_y(p, row, inv_shared, threadIdx.x, blockDim.x);
}

// The register paths' residual add of one 16-byte chunk at `at`: h = bf16(x + residual) (load_h8's
// arithmetic, 8 values at once), stored back into residual, returned.
__device__ __forceinline__ uint4 add_residual8(const RmsParams& p, int64_t at, const uint4& x, const uint4& r) {
  float s[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) s[e] = bf16_at(x, e) + bf16_at(r, e);
  const uint4 h = pack_bf16x8(s);
  *reinterpret_cast<uint4*>(p.residual + at) = h;
  return h;
}

// The register path (rmsnorm_rows_vec_kernel): a row of C = dim / 8 chunks is spread over
// W = ceil(ceil(C / 32) / kChunksPerThread) warps; lane l of the row's warp w holds the lane's
// chunks number kChunksPerThread * w .. kChunksPerThread * (w + 1) - 1 in the warp order (chunks
// l + 32 i for those i). Every thread issues its loads of x and residual (and of the weights when
// there is no residual) before its first store or add, so a row's bytes are all in flight at once:
// one memory latency per row instead of one per chunk, and W times the threads per row. The lane
// chains stay in one warp: warps 1..W-1 hand their h chunks to warp 0 through shared memory, warp 0
// adds each lane's chunks in the warp order and runs the butterfly, and every warp writes y for the
// chunks it holds. Same sums, same per-element arithmetic as rmsnorm_rows_kernel: memory access
// only (gpu test).
constexpr int kChunksPerThread = 4;
constexpr int kMaxWarpsPerRow = 8;       // rows of up to 32 * 8 * kChunksPerThread * 8 = 8192 values
constexpr int kRowsPerSingleWarpBlock = 4;  // W == 1: that many rows (one warp each) per block

// Warps per row for the register path, 0 where it does not apply (needs dim % 8 == 0 and 16-byte
// aligned x, residual, weight and y: checked by the caller).
int vec_warps_per_row(int64_t dim) {
  const int64_t per_lane = cuda::ceil_div64(dim / 8, 32);
  const int64_t warps = std::max<int64_t>(1, cuda::ceil_div64(per_lane, kChunksPerThread));
  return warps <= kMaxWarpsPerRow ? int(warps) : 0;
}

__device__ __forceinline__ void load_chunks(const bf16* row, int first, int chunks, uint4 (&v)[kChunksPerThread]) {
#pragma unroll
  for (int c = 0; c < kChunksPerThread; ++c) {
    const int chunk = first + 32 * c;
    if (chunk < chunks) v[c] = *reinterpret_cast<const uint4*>(row + int64_t(chunk) * 8);
  }
}

// Launched with 32 * W threads per row (one row per block for W > 1, kRowsPerSingleWarpBlock rows
// of one warp each for W == 1) and (W - 1) * kChunksPerThread * 32 uint4 of dynamic shared memory.
__global__ void __launch_bounds__(kMaxWarpsPerRow * 32, 4) rmsnorm_rows_vec_kernel(RmsParams p, int warps_per_row) {
  extern __shared__ uint4 handed[];  // [W - 1][kChunksPerThread][32]: h chunks of warps 1..W-1
  __shared__ float inv_shared;
  cuda::wait_for_previous_kernel();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = warps_per_row;
  const int part = warp % W;
  const int64_t row = W > 1 ? int64_t(blockIdx.x) : int64_t(blockIdx.x) * kRowsPerSingleWarpBlock + warp;
  if (W == 1 && row >= p.rows) return;  // W > 1: the block is one row, always present (no early exit before the barriers)
  const int chunks = int(p.dim / 8), first = lane + 32 * kChunksPerThread * part;
  const int64_t base = row * p.dim;
  uint4 h[kChunksPerThread], r[kChunksPerThread], w[kChunksPerThread];
  load_chunks(p.x + base, first, chunks, h);
  if (p.residual != nullptr) load_chunks(p.residual + base, first, chunks, r);
  if (p.residual == nullptr) load_chunks(p.weight, first, chunks, w);
  if (p.residual != nullptr) {
#pragma unroll
    for (int c = 0; c < kChunksPerThread; ++c) {
      const int chunk = first + 32 * c;
      if (chunk >= chunks) break;
      h[c] = add_residual8(p, base + int64_t(chunk) * 8, h[c], r[c]);
    }
    // The weights (the same for every row: L2 hits) only now, into the registers r leaves, so that
    // four blocks of 256 threads fit an SM without spilling (64 registers; loaded with x and r the
    // kernel spilled). Their latency overlaps the sum of squares and its hand-over between warps.
    load_chunks(p.weight, first, chunks, w);
  }
  float inv;
  if (W == 1) {
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunksPerThread; ++c) {
      if (first + 32 * c >= chunks) break;
      acc = add_squares8(acc, h[c]);
    }
    inv = inverse_rms(warp_butterfly_sum(acc), p.dim, p.eps);
  } else {
    if (part > 0) {
#pragma unroll
      for (int c = 0; c < kChunksPerThread; ++c) {
        if (first + 32 * c < chunks) handed[((part - 1) * kChunksPerThread + c) * 32 + lane] = h[c];
      }
    }
    __syncthreads();
    if (part == 0) {
      float acc = 0.0f;
#pragma unroll
      for (int c = 0; c < kChunksPerThread; ++c) {
        if (first + 32 * c < chunks) acc = add_squares8(acc, h[c]);
      }
      for (int q = 1; q < W; ++q) {  // the lane's later chunks, in the warp order
#pragma unroll
        for (int c = 0; c < kChunksPerThread; ++c) {
          if (lane + 32 * (kChunksPerThread * q + c) < chunks) {
            acc = add_squares8(acc, handed[((q - 1) * kChunksPerThread + c) * 32 + lane]);
          }
        }
      }
      const float sum = warp_butterfly_sum(acc);
      if (lane == 0) inv_shared = inverse_rms(sum, p.dim, p.eps);
    }
    __syncthreads();
    inv = inv_shared;
  }
#pragma unroll
  for (int c = 0; c < kChunksPerThread; ++c) {
    const int chunk = first + 32 * c;
    if (chunk >= chunks) break;
    float y[8];
    normed8(h[c], w[c], inv, y);
    *reinterpret_cast<uint4*>(p.y + base + int64_t(chunk) * 8) = pack_bf16x8(y);
  }
}

// Default mode's split plan on the register path (rmsnorm_split_vec_kernel; few rows, one block of
// kSplitVecThreads per row): thread t holds chunks t, t + 256, ... of the row, all loaded at once;
// h = bf16(x + residual) is stored back and put in shared memory. Each part's warp order is then
// read from shared memory, parts side by side in a warp where a part has at most 16 chunks: an
// aligned group of `group` lanes (part chunks rounded up to a power of two) per part, the
// butterfly within the group (warp_butterfly_sum's rule: the lanes past the part hold +0, as in
// rmsnorm_split_kernel's whole warp); a part of more chunks takes a whole warp, lane l its chunks l,
// l + 32, ... The part sums are added in part order by one thread and y is written from the
// registers. Same sums and per-element arithmetic as rmsnorm_split_kernel (gpu test); one memory
// latency per row where that kernel waits once per part a warp takes in turn (128 parts of a row of
// 4096 at one row: 16 in turn).
constexpr int kSplitVecThreads = 256;
constexpr int kSplitVecChunksPerThread = 4;  // rows of up to 256 * 4 * 8 = 8192 values

__global__ void __launch_bounds__(kSplitVecThreads)
    rmsnorm_split_vec_kernel(RmsParams p, int parts, int part_chunks, int group) {
  extern __shared__ uint4 row_h[];  // [dim / 8] chunks of h, then float part_sums[parts]
  float* part_sums = reinterpret_cast<float*>(row_h + p.dim / 8);
  __shared__ float inv_shared;
  cuda::wait_for_previous_kernel();
  constexpr int K = kSplitVecChunksPerThread;
  const int chunks = int(p.dim / 8), t = int(threadIdx.x), lane = t & 31, warp = t >> 5;
  const int64_t base = int64_t(blockIdx.x) * p.dim;
  uint4 h[K], r[K], w[K];
#pragma unroll
  for (int c = 0; c < K; ++c) {
    const int chunk = t + kSplitVecThreads * c;
    if (chunk >= chunks) break;
    h[c] = *reinterpret_cast<const uint4*>(p.x + base + int64_t(chunk) * 8);
    if (p.residual != nullptr) r[c] = *reinterpret_cast<const uint4*>(p.residual + base + int64_t(chunk) * 8);
    w[c] = *reinterpret_cast<const uint4*>(p.weight + int64_t(chunk) * 8);
  }
#pragma unroll
  for (int c = 0; c < K; ++c) {
    const int chunk = t + kSplitVecThreads * c;
    if (chunk >= chunks) break;
    if (p.residual != nullptr) {
      h[c] = add_residual8(p, base + int64_t(chunk) * 8, h[c], r[c]);
    }
    row_h[chunk] = h[c];
  }
  __syncthreads();
  const int per_warp = 32 / group, sub = lane % group;
  for (int first = warp * per_warp; first < parts; first += kSplitVecThreads / 32 * per_warp) {  // warp-uniform
    const int q = first + lane / group;
    float acc = 0.0f;
    if (q < parts) {
      for (int i = sub; i < part_chunks; i += 32) {
        const int chunk = q * part_chunks + i;
        if (chunk >= chunks) break;
        acc = add_squares8(acc, row_h[chunk]);
      }
    }
    const float sum = warp_butterfly_sum(acc, group / 2);
    if (sub == 0 && q < parts) part_sums[q] = sum;
  }
  __syncthreads();
  if (t == 0) {
    float ss = part_sums[0];
    for (int q = 1; q < parts; ++q) ss = ss + part_sums[q];  // (parts: the row's filled parts)
    inv_shared = inverse_rms(ss, p.dim, p.eps);
  }
  __syncthreads();
  const float inv = inv_shared;
#pragma unroll
  for (int c = 0; c < K; ++c) {
    const int chunk = t + kSplitVecThreads * c;
    if (chunk >= chunks) break;
    float y[8];
    normed8(h[c], w[c], inv, y);
    *reinterpret_cast<uint4*>(p.y + base + int64_t(chunk) * 8) = pack_bf16x8(y);
  }
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

}  // namespace

absl::Status cuda_rmsnorm(const ExecContext& ctx, const RmsNormArgs& a) {
  if (absl::Status shape = check_rmsnorm_shape(a); !shape.ok()) return shape;
  RmsParams p{a.x, a.residual, a.weight, a.y, a.rows, a.dim, a.eps, false};
  p.vec = a.dim % 8 == 0 && aligned16(a.x) && (a.residual == nullptr || aligned16(a.residual));
  const RowReducePlan& plan = a.plan;  // built by the caller (kernels/plan.h)
  cudaStream_t stream = cuda::stream_of(ctx);
  const int W = p.vec ? vec_warps_per_row(a.dim) : 0;
  if (plan.parts <= 1 && W > 0 && aligned16(a.weight) && aligned16(a.y)) {
    const int64_t blocks = W > 1 ? a.rows : cuda::ceil_div64(a.rows, kRowsPerSingleWarpBlock);
    if (blocks > INT32_MAX) return absl::InvalidArgumentError("rmsnorm: too many rows");
    const int threads = W > 1 ? W * 32 : kRowsPerSingleWarpBlock * 32;
    const size_t handed = size_t(W - 1) * kChunksPerThread * 32 * sizeof(uint4);
    return cuda::launch_after_previous("rmsnorm_rows_vec_kernel", rmsnorm_rows_vec_kernel, dim3(unsigned(blocks)),
                                       dim3(threads), handed, stream, p, W);
  }
  if (plan.parts <= 1) {
    const int64_t blocks = cuda::ceil_div64(a.rows, kWarpsPerBlock);
    return cuda::launch_after_previous("rmsnorm_rows_kernel", rmsnorm_rows_kernel, dim3(unsigned(blocks)),
                                       dim3(kWarpsPerBlock * 32), 0, stream, p);
  }
  if (a.rows > INT32_MAX) return absl::InvalidArgumentError("rmsnorm: too many rows for split reduction");
  const int64_t part_len = lane_part_size(a.dim, plan.parts);
  if (p.vec && aligned16(a.weight) && aligned16(a.y) && a.dim <= int64_t(kSplitVecThreads) * kSplitVecChunksPerThread * 8) {
    const int part_chunks = int(part_len / 8);
    int group = 2;  // part_len >= 16
    while (group < part_chunks && group < 32) group *= 2;
    const int filled = int(cuda::ceil_div64(a.dim / 8, part_chunks));  // parts past the row are empty
    const size_t shared = size_t(a.dim / 8) * sizeof(uint4) + size_t(filled) * sizeof(float);
    return cuda::launch_after_previous("rmsnorm_split_vec_kernel", rmsnorm_split_vec_kernel, dim3(unsigned(a.rows)),
                                       dim3(kSplitVecThreads), shared, stream, p, filled, part_chunks, group);
  }
  return cuda::launch_after_previous("rmsnorm_split_kernel", rmsnorm_split_kernel, dim3(unsigned(a.rows)),
                                     dim3(kWarpsPerBlock * 32), size_t(plan.parts) * sizeof(float), stream, p,
                                     plan.parts, part_len);
}

}  // namespace samebits
