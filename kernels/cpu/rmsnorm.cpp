// rmsnorm (also the per-head q/k norm: rows = T * heads, dim = head_dim), optionally fused with the
// residual add: h = bf16(x + residual) is stored into residual, else h = x;
// y = bf16(bf16(h * inv) * weight), inv = 1 / sqrt(sum(h^2) / dim + eps), as HF (normalise in
// fp32, cast to bf16, multiply by the bf16 weight).
//
// The plan comes in RmsNormArgs (kernels/plan.h) and is executed as given.
// Invariant mode (plan_row_reduce(kInvariant): parts = 1): each row's sum of squares is one
// 16-lane fixed reduction (kernels/cpu/lanes.h) over the whole row; threads take whole rows.
// Default mode (plan_row_reduce(kDefault, rows, dim, parallel_units)): the row is cut into `parts`
// contiguous parts of round_up(ceil(dim / parts), 16) values, each reduced with the same 16-lane
// routine, the part sums added in part order (part 0 first). parts grows as rows shrink (a GPU
// splits a row across workers when rows are few), so a row's bits follow the batch size.
// Everything else is pointwise and identical in both modes.
// Where the CPU has AVX2 or AVX-512 (kernels/cpu/isa.h), blocks of rows go to the vector paths of
// kernels/cpu/rmsnorm_simd.h: the same operations per row; tests compare every path with this one
// bitwise.
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/rmsnorm_simd.h"
#include "kernels/cpu/lanes.h"
#include "kernels/cpu/threading.h"
#include "kernels/op_checks.h"

namespace samebits {

absl::Status cpu_rmsnorm(const ExecContext& ctx, const RmsNormArgs& a) {
  if (absl::Status s = check_rmsnorm_shape(a); !s.ok()) return s;
  const int64_t dim = a.dim;
  const int64_t part_len = cpu::lane_part_size(dim, a.plan.parts < 1 ? 1 : a.plan.parts);
  const cpu::Isa isa = cpu::active_isa();
  if (isa != cpu::Isa::kPortable) {
    const int64_t blocks = (a.rows + cpu::kRmsNormBlockRows - 1) / cpu::kRmsNormBlockRows;
    cpu::parallel_for(ctx, blocks, [&](int64_t blk) {
      thread_local std::vector<float> h_rows;
      const size_t need = size_t(cpu::kRmsNormBlockRows * ((dim + cpu::kLanes - 1) / cpu::kLanes * cpu::kLanes));
      if (h_rows.size() < need) h_rows.resize(need);
      const int64_t first = blk * cpu::kRmsNormBlockRows;
      const cpu::RmsNormBlock b{&a, first, std::min<int64_t>(cpu::kRmsNormBlockRows, a.rows - first), part_len,
                                h_rows.data()};
      if (isa == cpu::Isa::kAvx512) cpu::rmsnorm_block_avx512(b); else cpu::rmsnorm_block_avx2(b);
    }, dim * cpu::kRmsNormBlockRows, 1 << 14);
    return absl::OkStatus();
  }

  cpu::parallel_for(ctx, a.rows, [&](int64_t r) {
    // h in fp32, per thread (y may alias x, so h is read in full before y is written).
    thread_local std::vector<float> h_buffer;
    if (int64_t(h_buffer.size()) < dim) h_buffer.resize(dim);
    float* h = h_buffer.data();
    const bf16* x = a.x + r * dim;
    if (a.residual != nullptr) {
      bf16* res = a.residual + r * dim;
      for (int64_t i = 0; i < dim; ++i) {
        bf16 sum = to_bf16(to_float(x[i]) + to_float(res[i]));
        res[i] = sum;
        h[i] = to_float(sum);
      }
    } else {
      for (int64_t i = 0; i < dim; ++i) h[i] = to_float(x[i]);
    }
    float ss = 0.0f;
    for (int64_t k0 = 0; k0 < dim; k0 += part_len) {
      float part = cpu::sum_squares_lanes(h + k0, std::min(part_len, dim - k0));
      ss = k0 == 0 ? part : ss + part;
    }
    const float inv = 1.0f / std::sqrt(ss / float(dim) + a.eps);
    bf16* y = a.y + r * dim;
    for (int64_t i = 0; i < dim; ++i) y[i] = to_bf16(round_bf16(h[i] * inv) * to_float(a.weight[i]));
  }, dim, 1 << 14);
  return absl::OkStatus();
}

}  // namespace samebits
