// fp64 references for the CPU backend's linear, rmsnorm, rope and silu_mul, plus the small helpers
// every kernel test shares (contexts, byte comparison, error bounds).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace samebits::testing {

// y[m,n] = sum_k x[m,k] w[n,k] (+ bias[n]) in double; abs_sum[m,n] = sum_k |x[m,k] w[n,k]|
// (+ |bias[n]|), the scale of the rounding error an fp32 sum can make.
struct LinearReference {
  std::vector<double> y, abs_sum;
};
LinearReference reference_linear(const std::vector<bf16>& x, const std::vector<bf16>& w,
                                 const bf16* bias, int64_t M, int64_t N, int64_t K);

// h = x (+ residual, each sum rounded to bf16 as the op stores it); y = h / sqrt(mean(h^2) + eps)
// * weight in double.
struct RmsNormReference {
  std::vector<double> y, h;
};
RmsNormReference reference_rmsnorm(const std::vector<bf16>& x, const std::vector<bf16>* residual,
                                   const std::vector<bf16>& weight, int64_t rows, int64_t dim,
                                   double eps);

// Rotates every head of v [T, heads, head_dim] at positions[t] with angles p * theta^(-2i/D)
// computed with std::pow/cos/sin in double.
std::vector<double> reference_rope(const std::vector<bf16>& v, const std::vector<int32_t>& positions,
                                   int heads, int head_dim, double theta);

// silu(g) * u in double.
std::vector<double> reference_silu_mul(const std::vector<bf16>& gate, const std::vector<bf16>& up);

// The documented fp32 order, spelled out one scalar at a time: lane l sums x[k] * w[k] for
// k ≡ l (mod 16) of each part (part length = round_up(ceil(K / parts), 16)), lanes combined in the
// pairwise tree, parts added in order. Kernels must match it bit for bit.
float lane_order_dot(const bf16* x, const bf16* w, int64_t K, int parts);
float lane_order_sum_squares(const float* h, int64_t n, int parts);

inline ExecContext make_ctx(Mode mode, int threads = 1, int parallel_units = kDefaultParallelUnits) {
  ExecContext ctx;
  ctx.mode = mode;
  ctx.num_threads = threads;
  ctx.parallel_units = parallel_units;
  return ctx;
}

// Whether n elements are equal byte for byte; n == 0 is true for any pointers, null included (an
// empty vector's data(), which memcmp must not be given even with a length of zero).
template <typename T>
bool same_bytes(const T* a, const T* b, size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(T)) == 0;
}

// 2^-e, for tolerances spelled as powers of two.
constexpr double pow2_neg(int e) { return e == 0 ? 1.0 : 0.5 * pow2_neg(e - 1); }
// Unit roundoff (the largest relative error of one round-to-nearest) of fp32 (24 significant
// bits: 2^-24) and of bf16 (8 significant bits: 2^-8).
inline constexpr double kF32Unit = pow2_neg(24);
inline constexpr double kBf16Unit = pow2_neg(8);

}  // namespace samebits::testing
