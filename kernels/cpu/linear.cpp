// linear: y[m,n] = sum_k x[m,k] * w[n,k] (+ bias[n]) in fp32, stored as bf16 (round to nearest
// even) or fp32.
//
// The plan comes in LinearArgs (kernels/plan.h); its kind does not matter here (the CPU has no
// vendor library): split_k is executed as given.
// Invariant mode (plan_matmul(kInvariant): split_k = 1): every output is ONE 16-lane fixed
// reduction over all of K (kernels/cpu/lanes.h: lane l takes k = l, l+16, ...; pairwise tree),
// then + bias. Bits do not depend on M, the row's position or the threads.
//
// Default mode (plan_matmul(kDefault, M, N, K, parallel_units)): K is cut into split_k contiguous
// parts of round_up(ceil(K / split_k), 16) values (trailing parts may be empty and are skipped);
// each part is reduced with the same 16-lane routine from +0 (its own pairwise tree), then the
// part sums are added in part order (part 0 first), then + bias. split_k grows as M shrinks, so a
// row's bits follow the batch size, as with cuBLAS split-K. With split_k = 1 both modes agree.
//
// Schedule (never the arithmetic): threads take blocks of (rows x kTileN columns); one thread
// computes every part of an output back to back and adds the part sums as they come, in part
// order, so split-K needs no scratch and no second pass.
//
// Speed on the baseline x86-64 ISA: x is widened to fp32 once per call; each pass over a row of x
// computes kColumnBlock outputs (register blocking); the 16 lanes of each output live in four
// 4-wide vector registers (cpu::LaneAcc), element-wise IEEE operations that keep every lane's order,
// and the lane trees of four columns run side by side (lanes transposed: same adds, per column).
// Where the CPU has AVX2 or AVX-512 (kernels/cpu/isa.h, chosen at run time), a tile goes to the
// vector paths of kernels/cpu/linear_simd.h instead: the same operations per output, wider
// registers and blocks of rows x columns; x is widened and outputs are finished (bias, bf16
// rounding) there too, lane by lane. Tiles of 1-3 rows (decode steps) are bound by reading the
// weight: they read it in bf16 with one widening instruction per 16 values and prefetch the next
// columns when the weight is larger than one core's cache. Tests compare every path with this one
// bitwise.
#include <cstdlib>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/lanes.h"
#include "kernels/cpu/linear_simd.h"
#include "kernels/cpu/threading.h"
#include "kernels/op_checks.h"

namespace samebits {
namespace {

using cpu::kLanes;
using v4f = cpu::LaneAcc::v4f;

// fp32 scratch on 64-byte boundaries: rows of x and of the panel are a multiple of 16 floats
// apart, so the vector paths' 32- and 64-byte loads never straddle two cache lines (malloc gives
// 16-byte boundaries, where half of the 32-byte loads would).
struct FreeFloats {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], FreeFloats>;
AlignedFloats aligned_floats(int64_t n) {
  const size_t bytes = (size_t(n) * sizeof(float) + 63) / 64 * 64;
  return AlignedFloats(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

constexpr int kColumnBlock = 4;
constexpr int64_t kTileM = cpu::kLinearTileRows, kTileN = 64;  // work split between threads only

// Rows -> columns: r[i] holds lane (4j + i) of columns 0..3, given a[c] = lanes 4j..4j+3 of column c.
inline void transpose4(v4f a, v4f b, v4f c, v4f d, v4f* r) {
  const v4f ab_lo = __builtin_shufflevector(a, b, 0, 4, 1, 5), ab_hi = __builtin_shufflevector(a, b, 2, 6, 3, 7);
  const v4f cd_lo = __builtin_shufflevector(c, d, 0, 4, 1, 5), cd_hi = __builtin_shufflevector(c, d, 2, 6, 3, 7);
  r[0] = __builtin_shufflevector(ab_lo, cd_lo, 0, 1, 4, 5);
  r[1] = __builtin_shufflevector(ab_lo, cd_lo, 2, 3, 6, 7);
  r[2] = __builtin_shufflevector(ab_hi, cd_hi, 0, 1, 4, 5);
  r[3] = __builtin_shufflevector(ab_hi, cd_hi, 2, 3, 6, 7);
}

// cpu::combine_lanes of four columns at once: element c is column c's pairwise tree, exactly.
inline v4f combine_lanes4(const cpu::LaneAcc* acc) {
  v4f t[kLanes];
  for (int j = 0; j < 4; ++j) transpose4(acc[0].v[j], acc[1].v[j], acc[2].v[j], acc[3].v[j], t + 4 * j);
  v4f t8[8], t4[4];
  for (int i = 0; i < 8; ++i) t8[i] = t[2 * i] + t[2 * i + 1];
  for (int i = 0; i < 4; ++i) t4[i] = t8[2 * i] + t8[2 * i + 1];
  return (t4[0] + t4[1]) + (t4[2] + t4[3]);
}

// sums[c] = sum over k in [k0, k0+len) of x[k] * w[c*K + k], c < NB, each in the fixed lane order
// from +0. k0 is a multiple of 16 (a part boundary), so every k keeps the lane it has in the row.
template <int NB>
inline void dot_part(const float* x, const bf16* w, int64_t K, int64_t k0, int64_t len, float* sums) {
  cpu::LaneAcc acc[NB];
  const float* xr = x + k0;
  const bf16* wr = w + k0;
  int64_t k = 0;
  for (; k + kLanes <= len; k += kLanes) {
    for (int c = 0; c < NB; ++c) acc[c].add_products(xr + k, wr + c * K + k);
  }
  if (NB == 4 && k == len) {
    const v4f s = combine_lanes4(acc);
    std::memcpy(sums, &s, sizeof s);
    return;
  }
  for (int c = 0; c < NB; ++c) {
    float lanes[kLanes];
    acc[c].store(lanes);
    for (int l = 0; k + l < len; ++l) lanes[l] += xr[k + l] * to_float(wr[c * K + k + l]);
    sums[c] = cpu::combine_lanes(lanes);
  }
}

// out[c] = the output of columns c < NB of one row: the part sums in part order (parts of
// part_len values; the last may be shorter).
template <int NB>
inline void dot_columns(const float* x, const bf16* w, int64_t K, int64_t part_len, float* out) {
  dot_part<NB>(x, w, K, 0, std::min(part_len, K), out);
  for (int64_t k0 = part_len; k0 < K; k0 += part_len) {
    float sums[NB];
    dot_part<NB>(x, w, K, k0, std::min(part_len, K - k0), sums);
    for (int c = 0; c < NB; ++c) out[c] = out[c] + sums[c];
  }
}

// Every output of rows [m0, m1) x columns [n0, n1); out(m, n, v) finishes each. Rows of xf are
// ldx apart.
template <typename Out>
void compute_block(const float* xf, int64_t ldx, const bf16* w, int64_t K, int64_t part_len, int64_t m0,
                   int64_t m1, int64_t n0, int64_t n1, Out&& out) {
  int64_t n = n0;
  float sums[kColumnBlock];
  for (; n + kColumnBlock <= n1; n += kColumnBlock) {
    for (int64_t m = m0; m < m1; ++m) {
      dot_columns<kColumnBlock>(xf + m * ldx, w + n * K, K, part_len, sums);
      for (int c = 0; c < kColumnBlock; ++c) out(m, n + c, sums[c]);
    }
  }
  for (; n < n1; ++n) {
    for (int64_t m = m0; m < m1; ++m) {
      dot_columns<1>(xf + m * ldx, w + n * K, K, part_len, sums);
      out(m, n, sums[0]);
    }
  }
}

}  // namespace

absl::Status cpu_linear(const ExecContext& ctx, const LinearArgs& a) {
  if (absl::Status s = check_linear_shape(a); !s.ok()) return s;
  const int64_t M = a.M, N = a.N, K = a.K;
  const int64_t part_len = cpu::lane_part_size(K, a.plan.split_k < 1 ? 1 : a.plan.split_k);
  const int64_t tiles_m = (M + kTileM - 1) / kTileM, tiles_n = (N + kTileN - 1) / kTileN;
  constexpr int64_t kMinWorkPerThread = 1 << 17;  // multiply-adds (~25 us): below, one thread

  // x widened to fp32 once per call, rows zero-padded to a multiple of 16 (the vector paths read
  // whole 16-value groups; the portable path reads [0, K) of each row).
  const cpu::Isa isa = cpu::active_isa();
  const int64_t ldx = (K + kLanes - 1) / kLanes * kLanes;
  const AlignedFloats xf = aligned_floats(M * ldx);
  cpu::parallel_for(ctx, M, [&](int64_t m) {
    float* row = xf.get() + m * ldx;
    switch (isa) {
      case cpu::Isa::kAvx512: return cpu::linear_widen_row_avx512(a.x + m * K, K, row);
      case cpu::Isa::kAvx2: return cpu::linear_widen_row_avx2(a.x + m * K, K, row);
      case cpu::Isa::kPortable: break;
    }
    for (int64_t k = 0; k < K; ++k) row[k] = to_float(a.x[m * K + k]);
    for (int64_t k = K; k < ldx; ++k) row[k] = 0.0f;
  }, K, kMinWorkPerThread);

  const cpu::LinearOutputs outputs{a.bias, a.y, a.y_f32, N};
  // Weights larger than this are taken not to stay in the cache from one call to the next.
  static const int64_t kCachedWeightBytes = cpu::per_core_cache_bytes();
  const bool prefetch_weight = N * K * int64_t(sizeof(bf16)) > kCachedWeightBytes;
  cpu::parallel_for(ctx, tiles_m * tiles_n, [&](int64_t t) {
    int64_t m0 = (t / tiles_n) * kTileM, n0 = (t % tiles_n) * kTileN;
    const int64_t m1 = std::min(M, m0 + kTileM), n1 = std::min(N, n0 + kTileN);
    if (isa == cpu::Isa::kPortable) {
      compute_block(xf.get(), ldx, a.w, K, part_len, m0, m1, n0, n1,
                    [&](int64_t m, int64_t n, float v) { outputs.store(m, n, v); });
      return;
    }
    thread_local AlignedFloats panel;
    thread_local int64_t panel_floats = 0;
    if (panel_floats < cpu::kLinearPanelColumns * ldx) {
      panel_floats = cpu::kLinearPanelColumns * ldx;
      panel = aligned_floats(panel_floats);
    }
    float sums[kTileM * kTileN];
    const cpu::LinearTile tile{xf.get() + m0 * ldx, a.w + n0 * K, K, ldx, part_len, m1 - m0, n1 - n0,
                               panel.get(), sums, outputs.at(m0, n0), prefetch_weight};
    if (isa == cpu::Isa::kAvx512) cpu::linear_tile_avx512(tile); else cpu::linear_tile_avx2(tile);
  }, std::min(M, kTileM) * std::min(N, kTileN) * K, kMinWorkPerThread);
  return absl::OkStatus();
}

}  // namespace samebits
