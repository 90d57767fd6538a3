// rope (NeoX / HF rotate_half layout), in place on q and k, from a precomputed fp32 table
// (make_rope_table: row p = [cos(p*f_0 .. p*f_{D/2-1}), sin(...)]).
// out[i] = q[i]*c_i - q[i+D/2]*s_i, out[i+D/2] = q[i+D/2]*c_i + q[i]*s_i, in fp32, rounded to bf16.
// Pointwise, no reduction: identical in both modes; threads take whole tokens.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/threading.h"
#include "kernels/op_checks.h"
#include "kernels/rope_math.h"

namespace samebits {
namespace {

absl::Status validate(const RopeArgs& a) {
  if (absl::Status shape = check_rope_shape(a); !shape.ok()) return shape;
  // Every position is checked before anything is written, so a bad call leaves q and k untouched.
  for (int64_t t = 0; t < a.T; ++t) {
    if (a.positions[t] < 0 || a.positions[t] >= a.max_position) {
      return absl::InvalidArgumentError(absl::StrCat("rope: token ", t, " has position ", a.positions[t],
                                                     " outside [0, ", a.max_position, ")"));
    }
  }
  return absl::OkStatus();
}

void rotate(bf16* v, const float* cos_row, const float* sin_row, int half) {
  for (int i = 0; i < half; ++i) {
    float lo = to_float(v[i]), hi = to_float(v[i + half]);
    float c = cos_row[i], s = sin_row[i];
    v[i] = rope_lo(lo, hi, c, s);
    v[i + half] = rope_hi(lo, hi, c, s);
  }
}

}  // namespace

absl::Status cpu_rope(const ExecContext& ctx, const RopeArgs& a) {
  if (absl::Status s = validate(a); !s.ok()) return s;
  const int D = a.head_dim, half = D / 2;
  cpu::parallel_for(ctx, a.T, [&](int64_t t) {
    const float* row = a.table + int64_t(a.positions[t]) * D;
    for (int h = 0; h < a.num_q_heads; ++h) rotate(a.q + (t * a.num_q_heads + h) * D, row, row + half, half);
    for (int h = 0; h < a.num_kv_heads; ++h) rotate(a.k + (t * a.num_kv_heads + h) * D, row, row + half, half);
  }, int64_t(a.num_q_heads + a.num_kv_heads) * D, 1 << 14);
  return absl::OkStatus();
}

}  // namespace samebits
