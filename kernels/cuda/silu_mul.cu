// silu_mul on CUDA: y = bf16(bf16(silu(g)) * u), silu(g) = g / (1 + fixed_expf(-g)) with the
// CPU's fixed_expf (kernels/fixed_math.h, host + device; its fused multiply-adds written out, no
// other contraction: --fmad=false) and IEEE division, so the bits equal the CPU's. Pointwise, no
// reduction: identical in both modes. Where the sizes and pointers allow 16-byte access, one thread
// takes two 16-byte pieces (16 elements), issues its four loads before any arithmetic and rounds
// to bf16 by cvt without branches (silu_mul_pair below: to_bf16's bits); the kernel is bound by
// instruction issue, not by memory (ncu, bench/cuda/notes/small-kernels.md). The previous
// one-piece-per-thread kernel stays as SiluMulRoute::kPrevious (silu_mul_route.h; same bits, gpu
// test). Else one thread per element (the same arithmetic per element on every path). Interleaved
// gate/up (SiluMulArgs.group, the default-mode gate_up_silu): a group of 8 is one 16-byte piece, so
// the vector kernel reads gate and up pieces alternately.
// gate_up_silu: invariant mode fuses it into the invariant linear (linear.cu, same arithmetic from
// silu_mul.cuh) where that is faster (small M), else runs the invariant linear then this kernel;
// default mode runs cuBLASLt then this kernel (kernels/gate_up_silu.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/bf16_round.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/silu_mul.cuh"
#include "kernels/cuda/silu_mul_route.h"
#include "kernels/gate_up_silu.h"
#include "kernels/op_checks.h"

namespace samebits {
namespace {

// Element i of y ([T, F]) reads gate and up at i (group 0) or at its place in the interleaved rows.
__global__ void silu_mul_kernel(const bf16* gate, const bf16* up, bf16* y, int64_t n, int64_t F, int64_t group) {
  cuda::wait_for_previous_kernel();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t f = i % F;
  const int64_t at = group == 0 ? i : i / F * 2 * F + f / group * 2 * group + f % group;
  y[i] = cuda::silu_mul_value(to_float(gate[at]), to_float(up[at]));
}

__device__ __forceinline__ uint16_t silu_mul_bits(uint16_t g_bits, uint16_t u_bits) {
  return cuda::silu_mul_value(to_float(bf16{g_bits}), to_float(bf16{u_bits})).bits;
}

// stride: 1 (gate and up apart) or 2 (interleaved in groups of 8: gate and up pieces alternate).
__global__ void silu_mul_vec_kernel(const uint4* gate, const uint4* up, uint4* y, int64_t n8, int stride) {
  cuda::wait_for_previous_kernel();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n8) return;
  const uint4 g = gate[i * stride], u = up[i * stride];
  const uint32_t gw[4] = {g.x, g.y, g.z, g.w}, uw[4] = {u.x, u.y, u.z, u.w};
  uint32_t out[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    out[k] = uint32_t(silu_mul_bits(uint16_t(gw[k]), uint16_t(uw[k]))) |
             (uint32_t(silu_mul_bits(uint16_t(gw[k] >> 16), uint16_t(uw[k] >> 16))) << 16);
  }
  y[i] = make_uint4(out[0], out[1], out[2], out[3]);
}

// bf16 rounding by the cvt instructions alone (bf16_round.cuh, without its NaN test): where they
// are used here a NaN is either a product of the GPU's multiply, always the canonical NaN
// 0x7fffffff, which cvt and to_bf16 both take to 0x7fff, or silu's value, rounded only to be
// multiplied (any NaN in, the canonical NaN out). So silu_mul_pair gives silu_mul_value's bits for
// every input (gpu test with NaNs of both signs and payloads, infinities, subnormals), and without
// branches the compiler can interleave the 16 elements of a thread.
//
// cuda::silu_mul_value (silu_mul.cuh, the linear's fused epilogue keeps it) before its last rounding.
__device__ __forceinline__ float silu_mul_unrounded(float g, float u) {
  const float act = __fdiv_rn(g, 1.0f + fixed_expf(-g));
  return cuda::round_bf16_cvt(act) * u;
}

// bf16 pairs (low half first, the memory order) of gate and up into the pair of y.
__device__ __forceinline__ uint32_t silu_mul_pair(uint32_t g, uint32_t u) {
  const float lo = silu_mul_unrounded(__uint_as_float(g << 16), __uint_as_float(u << 16));
  const float hi = silu_mul_unrounded(__uint_as_float(g & 0xffff0000u), __uint_as_float(u & 0xffff0000u));
  return cuda::bf16x2_cvt(lo, hi);
}

constexpr int kPieceThreads = 256;
constexpr int kPiecesPerThread = 2;  // thread t of a block takes pieces t and t + 256 of the block's 512

// The 16-byte path (stride as silu_mul_vec_kernel): every load of the thread before its arithmetic.
__global__ void __launch_bounds__(kPieceThreads)
    silu_mul_pieces_kernel(const uint4* gate, const uint4* up, uint4* y, int64_t n8, int stride) {
  cuda::wait_for_previous_kernel();
  const int64_t first = int64_t(blockIdx.x) * (kPieceThreads * kPiecesPerThread) + threadIdx.x;
  uint4 g[kPiecesPerThread], u[kPiecesPerThread];
#pragma unroll
  for (int k = 0; k < kPiecesPerThread; ++k) {
    const int64_t i = first + int64_t(k) * kPieceThreads;
    if (i < n8) {
      g[k] = gate[i * stride];
      u[k] = up[i * stride];
    }
  }
#pragma unroll
  for (int k = 0; k < kPiecesPerThread; ++k) {
    const int64_t i = first + int64_t(k) * kPieceThreads;
    if (i < n8) {
      y[i] = make_uint4(silu_mul_pair(g[k].x, u[k].x), silu_mul_pair(g[k].y, u[k].y), silu_mul_pair(g[k].z, u[k].z),
                        silu_mul_pair(g[k].w, u[k].w));
    }
  }
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

SiluMulRoute route_from_environment() {
  const char* env = std::getenv("SAMEBITS_CUDA_SILU_MUL");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "current") == 0) return SiluMulRoute::kCurrent;
  if (std::strcmp(env, "previous") == 0) return SiluMulRoute::kPrevious;
  std::fprintf(stderr, "samebits: SAMEBITS_CUDA_SILU_MUL=%s: unknown (current or previous); using current\n", env);
  return SiluMulRoute::kCurrent;
}

SiluMulRoute resolve(SiluMulRoute route) {
  static const SiluMulRoute from_environment = route_from_environment();
  return route == SiluMulRoute::kAuto ? from_environment : route;
}

}  // namespace

absl::Status cuda_silu_mul_routed(const ExecContext& ctx, const SiluMulArgs& a, SiluMulRoute route) {
  if (absl::Status shape = check_silu_mul_shape(a); !shape.ok()) return shape;
  const int64_t n = a.T * a.F;
  if (n % 8 == 0 && (a.group == 0 || a.group == 8) && aligned16(a.gate) && aligned16(a.up) && aligned16(a.y)) {
    const auto* gate = reinterpret_cast<const uint4*>(a.gate);
    const auto* up = reinterpret_cast<const uint4*>(a.up);
    auto* y = reinterpret_cast<uint4*>(a.y);
    const int stride = a.group == 0 ? 1 : 2;
    if (resolve(route) == SiluMulRoute::kPrevious) {
      return cuda::launch_after_previous("silu_mul_vec_kernel", silu_mul_vec_kernel,
                                         dim3(unsigned(cuda::ceil_div64(n / 8, 256))), dim3(256), 0,
                                         cuda::stream_of(ctx), gate, up, y, n / 8, stride);
    }
    const int64_t blocks = cuda::ceil_div64(n / 8, kPieceThreads * kPiecesPerThread);
    return cuda::launch_after_previous("silu_mul_pieces_kernel", silu_mul_pieces_kernel, dim3(unsigned(blocks)),
                                       dim3(kPieceThreads), 0, cuda::stream_of(ctx), gate, up, y, n / 8, stride);
  }
  return cuda::launch_after_previous("silu_mul_kernel", silu_mul_kernel, dim3(unsigned(cuda::ceil_div64(n, 256))),
                                     dim3(256), 0, cuda::stream_of(ctx), a.gate, a.up, a.y, n, a.F, a.group);
}

absl::Status cuda_silu_mul(const ExecContext& ctx, const SiluMulArgs& a) {
  return cuda_silu_mul_routed(ctx, a, SiluMulRoute::kAuto);
}

// Invariant mode: fused up to kFusedMaxRows rows, by parts above (both give the bits of linear +
// silu_mul: tests). Measured on the H200 (bench_cuda_mlp, F = 12288, K = 4096, 2026-12-01): fused
// 0.99-1.01 of cuBLASLt + silu_mul at M = 1-16 and 0.91 at 64 against 0.87-0.93 by parts; from
// M = 256 on the fused epilogue's silu_mul arithmetic (tensor cores idle meanwhile) costs more than
// the separate pass: 0.89 fused against 0.93-0.95 by parts.
constexpr int64_t kFusedMaxRows = 64;

absl::Status cuda_gate_up_silu(const ExecContext& ctx, const GateUpSiluArgs& a) {
  if (a.plan.kind == MatmulPlan::Kind::kFixedOrder && a.plan.split_k == 1 &&
      (a.M <= kFusedMaxRows || a.gate_up == nullptr)) {
    return cuda_gate_up_silu_invariant(ctx, a, -1);
  }
  return gate_up_silu_by_parts(cuda_linear, cuda_silu_mul, ctx, a);
}

}  // namespace samebits
