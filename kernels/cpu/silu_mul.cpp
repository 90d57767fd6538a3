// silu_mul: y = bf16(bf16(silu(g)) * u), silu(g) = g / (1 + fixed_expf(-g)), as HF (the activation
// is cast to bf16 before the multiply). Pointwise, no reduction: identical in both modes; threads
// take whole rows.
//
// Where the CPU has AVX2 (with FMA) or AVX-512 (kernels/cpu/isa.h), rows go to
// silu_mul_row_avx2/avx512 (kernels/cpu/exp_simd.h): the same operations on 8 or 16 lanes, bf16
// conversions included, for every value; tests compare every path with this one bitwise. This
// portable row is the scalar function element by element.
// gate_up_silu: linear then this op, by kernels/gate_up_silu.h (the reference of every backend).
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/threading.h"
#include "kernels/fixed_math.h"
#include "kernels/gate_up_silu.h"
#include "kernels/op_checks.h"

namespace samebits {
namespace {

inline bf16 silu_mul_one(bf16 g, bf16 u) {
  const float gv = to_float(g);
  const float act = gv / (1.0f + fixed_expf(-gv));
  return to_bf16(round_bf16(act) * to_float(u));
}

void silu_mul_row(const bf16* g, const bf16* u, bf16* y, int64_t F) {
  for (int64_t i = 0; i < F; ++i) y[i] = silu_mul_one(g[i], u[i]);
}

}  // namespace

absl::Status cpu_gate_up_silu(const ExecContext& ctx, const GateUpSiluArgs& a) {
  return gate_up_silu_by_parts(cpu_linear, cpu_silu_mul, ctx, a);
}

absl::Status cpu_silu_mul(const ExecContext& ctx, const SiluMulArgs& a) {
  if (absl::Status shape = check_silu_mul_shape(a); !shape.ok()) return shape;
  const int64_t F = a.F;
  const cpu::Isa isa = cpu::active_isa();
  auto row = isa == cpu::Isa::kAvx512 ? cpu::silu_mul_row_avx512 : isa == cpu::Isa::kAvx2 ? cpu::silu_mul_row_avx2 : silu_mul_row;
  // Interleaved gate/up (a.group > 0): each group of the row is a contiguous piece of gate and up.
  const int64_t piece = a.group > 0 ? a.group : F, in_stride = a.group > 0 ? 2 * F : F;
  const int64_t in_step = a.group > 0 ? 2 * a.group : F;
  cpu::parallel_for(ctx, a.T, [&](int64_t t) {
    for (int64_t j = 0; j < F / piece; ++j) {
      row(a.gate + t * in_stride + j * in_step, a.up + t * in_stride + j * in_step, a.y + t * F + j * piece, piece);
    }
  }, F * 8, 1 << 15);
  return absl::OkStatus();
}

}  // namespace samebits
