// linear: y[m,n] = sum_k x[m,k] * w[n,k] (+ bias[n]) in fp32, stored as bf16 (round to nearest
// even) or fp32.
//
// Invariant mode (plan_matmul(kInvariant): split_k = 1): every output is ONE 16-lane fixed
// reduction over all of K (kernels/cpu/lanes.h: lane l takes k = l, l+16, ...; pairwise tree),
// then + bias. Threads take whole (tile_m x tile_n) output tiles; the tile shape only decides who
// computes an output, never how, so bits do not depend on M, the row's position or the threads.
//
// Default mode (plan_matmul(kDefault, M, N, K, parallel_units)): K is cut into split_k contiguous
// parts of round_up(ceil(K / split_k), 16) values (trailing parts may be empty and are skipped);
// each part is reduced with the same 16-lane routine into scratch by whichever thread owns the
// (tile, part) work item, then the parts are added in part order (part 0 first), then + bias.
// split_k grows as M shrinks, so a row's bits follow the batch size, as with cuBLAS split-K.
// With split_k = 1 both modes run the same code and agree bit for bit.
//
// Speed on the baseline x86-64 ISA: x is widened to fp32 once per call; each pass over a row of x
// computes kColumnBlock outputs (register blocking); the 16 lanes of each output live in four
// 4-wide vector registers (cpu::LaneAcc), element-wise IEEE operations that keep every lane's order.
#include <memory>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/lanes.h"
#include "kernels/cpu/threading.h"

namespace samebits {
namespace {

using cpu::kLanes;

constexpr int kColumnBlock = 4;

// out[c] = sum over k in [k0, k0+len) of x[k] * w[c*K + k], c < NB, each in the fixed lane order.
// k0 is a multiple of 16 (a part boundary), so every k keeps the lane it has in the whole row.
template <int NB>
inline void dot_columns(const float* x, const bf16* w, int64_t K, int64_t k0, int64_t len,
                        float* out) {
  cpu::LaneAcc acc[NB];
  const float* xr = x + k0;
  const bf16* wr[NB];
  for (int c = 0; c < NB; ++c) wr[c] = w + c * K + k0;
  int64_t k = 0;
  for (; k + kLanes <= len; k += kLanes) {
    for (int c = 0; c < NB; ++c) acc[c].add_products(xr + k, wr[c] + k);
  }
  for (int c = 0; c < NB; ++c) {
    float lanes[kLanes];
    acc[c].store(lanes);
    for (int l = 0; k + l < len; ++l) lanes[l] += xr[k + l] * to_float(wr[c][k + l]);
    out[c] = cpu::combine_lanes(lanes);
  }
}

// Reduces K range [k0, k0+len) for rows [m0, m1) x columns [n0, n1); out(m, n) receives each sum.
template <typename Out>
void reduce_tile(const float* xf, const bf16* w, int64_t K, int64_t m0, int64_t m1, int64_t n0,
                 int64_t n1, int64_t k0, int64_t len, Out&& out) {
  int64_t n = n0;
  float sums[kColumnBlock];
  for (; n + kColumnBlock <= n1; n += kColumnBlock) {
    for (int64_t m = m0; m < m1; ++m) {
      dot_columns<kColumnBlock>(xf + m * K, w + n * K, K, k0, len, sums);
      for (int c = 0; c < kColumnBlock; ++c) out(m, n + c, sums[c]);
    }
  }
  for (; n < n1; ++n) {
    for (int64_t m = m0; m < m1; ++m) {
      dot_columns<1>(xf + m * K, w + n * K, K, k0, len, sums);
      out(m, n, sums[0]);
    }
  }
}

absl::Status validate(const LinearArgs& a) {
  if (a.x == nullptr) return absl::InvalidArgumentError("linear: x is null");
  if (a.w == nullptr) return absl::InvalidArgumentError("linear: w is null");
  if (a.M <= 0) return absl::InvalidArgumentError(absl::StrCat("linear: M must be positive, got ", a.M));
  if (a.N <= 0) return absl::InvalidArgumentError(absl::StrCat("linear: N must be positive, got ", a.N));
  if (a.K <= 0) return absl::InvalidArgumentError(absl::StrCat("linear: K must be positive, got ", a.K));
  if ((a.y == nullptr) == (a.y_f32 == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "linear: exactly one of y (bf16) and y_f32 must be set, got ",
        a.y == nullptr ? "neither" : "both"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status cpu_linear(const ExecContext& ctx, const LinearArgs& a) {
  if (absl::Status s = validate(a); !s.ok()) return s;
  const int64_t M = a.M, N = a.N, K = a.K;
  const MatmulPlan plan = plan_matmul(ctx.mode, M, N, K, ctx.parallel_units);
  const int64_t part_len = cpu::lane_part_size(K, plan.split_k < 1 ? 1 : plan.split_k);
  const int64_t parts = (K + part_len - 1) / part_len;  // non-empty parts only
  const int64_t tile_m = plan.tile_m > 0 ? plan.tile_m : 64;
  const int64_t tile_n = plan.tile_n > 0 ? plan.tile_n : 64;
  const int64_t tiles_m = (M + tile_m - 1) / tile_m, tiles_n = (N + tile_n - 1) / tile_n;
  constexpr int64_t kMinWorkPerThread = 1 << 17;  // multiply-adds (~25 us): below, one thread

  // x widened to fp32 once per call.
  std::unique_ptr<float[]> xf(new float[M * K]);
  cpu::parallel_for(ctx, M, [&](int64_t m) {
    for (int64_t k = 0; k < K; ++k) xf[m * K + k] = to_float(a.x[m * K + k]);
  }, K, kMinWorkPerThread);

  auto finish = [&](int64_t m, int64_t n, float v) {
    if (a.bias != nullptr) v = v + to_float(a.bias[n]);
    if (a.y != nullptr) {
      a.y[m * N + n] = to_bf16(v);
    } else {
      a.y_f32[m * N + n] = v;
    }
  };

  if (parts == 1) {
    cpu::parallel_for(ctx, tiles_m * tiles_n, [&](int64_t t) {
      int64_t m0 = (t / tiles_n) * tile_m, n0 = (t % tiles_n) * tile_n;
      reduce_tile(xf.get(), a.w, K, m0, std::min(M, m0 + tile_m), n0, std::min(N, n0 + tile_n), 0,
                  K, finish);
    }, std::min(M, tile_m) * std::min(N, tile_n) * K, kMinWorkPerThread);
    return absl::OkStatus();
  }

  // Default mode with split-K: every (tile, part) is a work item writing its own scratch slice.
  std::unique_ptr<float[]> partial(new float[parts * M * N]);
  cpu::parallel_for(ctx, tiles_m * tiles_n * parts, [&](int64_t item) {
    int64_t p = item % parts, t = item / parts;
    int64_t m0 = (t / tiles_n) * tile_m, n0 = (t % tiles_n) * tile_n;
    int64_t k0 = p * part_len, len = std::min(K, k0 + part_len) - k0;
    float* slice = partial.get() + p * M * N;
    reduce_tile(xf.get(), a.w, K, m0, std::min(M, m0 + tile_m), n0, std::min(N, n0 + tile_n), k0,
                len, [&](int64_t m, int64_t n, float v) { slice[m * N + n] = v; });
  }, std::min(M, tile_m) * std::min(N, tile_n) * part_len, kMinWorkPerThread);
  cpu::parallel_for(ctx, M, [&](int64_t m) {
    for (int64_t n = 0; n < N; ++n) {
      float v = partial[m * N + n];
      for (int64_t p = 1; p < parts; ++p) v = v + partial[(p * M + m) * N + n];
      finish(m, n, v);
    }
  }, N * parts, kMinWorkPerThread);
  return absl::OkStatus();
}

}  // namespace samebits
