#include "kernels/gate_up_silu.h"

#include <algorithm>

#include "kernels/op_checks.h"

namespace samebits {

LinearArgs gate_up_linear_args(const GateUpSiluArgs& a) {
  LinearArgs l;
  l.x = a.x, l.w = a.w, l.M = a.M, l.N = 2 * a.F, l.K = a.K, l.plan = a.plan, l.y = a.gate_up;
  return l;
}

absl::Status gate_up_silu_by_parts(LinearOp linear, SiluMulOp silu_mul, const ExecContext& ctx,
                                   const GateUpSiluArgs& a) {
  if (absl::Status shape = check_gate_up_silu_shape(a); !shape.ok()) return shape;
  if (a.gate_up == nullptr) return absl::InvalidArgumentError("gate_up_silu: gate_up (scratch) is null");
  if (absl::Status s = linear(ctx, gate_up_linear_args(a)); !s.ok()) return s;
  SiluMulArgs act;
  act.gate = a.gate_up, act.up = a.gate_up + kGateUpGroup, act.T = a.M, act.F = a.F, act.y = a.y;
  act.group = kGateUpGroup;
  return silu_mul(ctx, act);
}

void interleave_gate_up(const bf16* gate, const bf16* up, int64_t F, int64_t K, bf16* out) {
  for (int64_t f = 0; f < F; ++f) {
    std::copy(gate + f * K, gate + (f + 1) * K, out + gate_up_weight_row(f, false) * K);
    std::copy(up + f * K, up + (f + 1) * K, out + gate_up_weight_row(f, true) * K);
  }
}

}  // namespace samebits
