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
//   4096 values with 16-byte aligned pointers take the register path: a lane loads all its chunks
//   before the first add and stores y 16 bytes at a time (same sums, same per-element arithmetic:
//   memory access only).
// The plan comes in RmsNormArgs (kernels/plan.h). Default mode: parts =
// plan_row_reduce(kDefault, rows, dim, parallel_units).parts. parts == 1:
//   exactly the invariant kernel. parts > 1 (few rows): one block per row, the row cut into
//   `parts` contiguous parts of round_up(ceil(dim / parts), 16) values (as the CPU), each reduced
//   in the warp order by one warp, the part sums added in part order (part 0 first) by one thread.
//   parts grows as rows shrink, so a row's bits follow the batch size. No atomics.
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

constexpr int kMaxChunksPerLane = 16;  // rows of up to 32 * 8 * 16 = 4096 values in registers
constexpr int kVecWarpsPerBlock = 4;

// rmsnorm_rows_kernel's warp order and arithmetic with the row held in registers: every chunk of
// a lane is loaded (h = bf16(x + residual) formed and stored) before the first add, then the same
// adds in the same order, then y written 16 bytes at a time from the registers. Needs dim % 8 == 0,
// dim <= 32 * 8 * kMaxChunksPerLane and 16-byte aligned x, residual, weight and y.
// (Loading every x and residual chunk before the first residual store, to have all of a lane's
// loads in flight at once, measured slower on the H200: 0.30 s against 0.21 s over the Qwen3-8B
// burst, 2026-12-01.)
__global__ void __launch_bounds__(kVecWarpsPerBlock * 32) rmsnorm_rows_vec_kernel(RmsParams p) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kVecWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= p.rows) return;
  const int chunks = int(p.dim / 8);
  uint4 h[kMaxChunksPerLane];
#pragma unroll
  for (int c = 0; c < kMaxChunksPerLane; ++c) {
    const int chunk = lane + 32 * c;
    if (chunk >= chunks) break;
    const int64_t base = row * p.dim + int64_t(chunk) * 8;
    h[c] = *reinterpret_cast<const uint4*>(p.x + base);
    if (p.residual != nullptr) {
      const uint4 r = *reinterpret_cast<const uint4*>(p.residual + base);
      float s[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) s[e] = bf16_at(h[c], e) + bf16_at(r, e);
      h[c] = pack_bf16x8(s);
      *reinterpret_cast<uint4*>(p.residual + base) = h[c];
    }
  }
  float acc = 0.0f;
#pragma unroll
  for (int c = 0; c < kMaxChunksPerLane; ++c) {
    if (lane + 32 * c >= chunks) break;
    acc = add_squares8(acc, h[c]);
  }
  const float inv = inverse_rms(warp_butterfly_sum(acc), p.dim, p.eps);
#pragma unroll
  for (int c = 0; c < kMaxChunksPerLane; ++c) {
    const int chunk = lane + 32 * c;
    if (chunk >= chunks) break;
    const uint4 w = *reinterpret_cast<const uint4*>(p.weight + int64_t(chunk) * 8);
    float y[8];
    normed8(h[c], w, inv, y);
    *reinterpret_cast<uint4*>(p.y + row * p.dim + int64_t(chunk) * 8) = pack_bf16x8(y);
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
  if (plan.parts <= 1 && p.vec && a.dim <= 32 * 8 * kMaxChunksPerLane && aligned16(a.weight) && aligned16(a.y)) {
    const int64_t blocks = cuda::ceil_div64(a.rows, kVecWarpsPerBlock);
    rmsnorm_rows_vec_kernel<<<unsigned(blocks), kVecWarpsPerBlock * 32, 0, stream>>>(p);
    return cuda::check_launch("rmsnorm_rows_vec_kernel");
  }
  if (plan.parts <= 1) {
    const int64_t blocks = cuda::ceil_div64(a.rows, kWarpsPerBlock);
    rmsnorm_rows_kernel<<<unsigned(blocks), kWarpsPerBlock * 32, 0, stream>>>(p);
    return cuda::check_launch("rmsnorm_rows_kernel");
  }
  if (a.rows > INT32_MAX) return absl::InvalidArgumentError("rmsnorm: too many rows for split reduction");
  const int64_t per = cuda::ceil_div64(a.dim, plan.parts);
  const int64_t part_len = (per + kReductionLanes - 1) / kReductionLanes * kReductionLanes;
  rmsnorm_split_kernel<<<unsigned(a.rows), kWarpsPerBlock * 32, size_t(plan.parts) * sizeof(float), stream>>>(
      p, plan.parts, part_len);
  return cuda::check_launch("rmsnorm_split_kernel");
}

}  // namespace samebits
