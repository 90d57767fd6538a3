// silu_mul: y = bf16(bf16(silu(g)) * u), silu(g) = g / (1 + fixed_expf(-g)), as HF (the activation
// is cast to bf16 before the multiply). Pointwise, no reduction: identical in both modes; threads
// take whole rows.
//
// Speed: groups of 4 gates with |g| <= 87 run fixed_expf's exact operation sequence on 4-wide
// vectors (element-wise IEEE operations: the same bits as the scalar function, which the tests
// check); any other group (NaN, inf, overflow or subnormal exponents) takes the scalar function.
// Where the CPU has AVX2 or AVX-512 (kernels/cpu/isa.h), rows go to silu_mul_row_avx2/avx512
// (kernels/cpu/exp_simd.h): the same operations on 8 or 16 lanes, bf16 conversions included, for
// every value; tests compare every path with this one bitwise.
// gate_up_silu: linear then this op, by kernels/gate_up_silu.h (the reference of every backend).
#include <cstring>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/threading.h"
#include "kernels/fixed_math.h"
#include "kernels/gate_up_silu.h"
#include "kernels/op_checks.h"

namespace samebits {
namespace {

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

// fixed_expf (kernels/fixed_math.h) on 4 values with |x| <= 87, where n stays in [-126, 126] and
// the scalar function returns p * 2^n: the same constants and operations in the same order.
inline v4f fixed_expf4(v4f x) {
  using namespace fixed_math_detail;
  const v4f t = x * kLog2e;
  const v4f half = t >= 0.0f ? v4f{} + 0.5f : v4f{} - 0.5f;
  const v4i n = __builtin_convertvector(t + half, v4i);  // truncation, as int(float)
  const v4f nf = __builtin_convertvector(n, v4f);
  const v4f p = expf_poly((x - nf * kLn2Hi) - nf * kLn2Lo);
  const v4i bits = (n + 127) << 23;
  v4f scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline bf16 silu_mul_one(bf16 g, bf16 u) {
  const float gv = to_float(g);
  const float act = gv / (1.0f + fixed_expf(-gv));
  return to_bf16(round_bf16(act) * to_float(u));
}

void silu_mul_row(const bf16* g, const bf16* u, bf16* y, int64_t F) {
  int64_t i = 0;
  for (; i + 4 <= F; i += 4) {
    v4f gv;
    for (int j = 0; j < 4; ++j) gv[j] = to_float(g[i + j]);
    const bool in_range = gv[0] >= -87.0f && gv[0] <= 87.0f && gv[1] >= -87.0f && gv[1] <= 87.0f &&
                          gv[2] >= -87.0f && gv[2] <= 87.0f && gv[3] >= -87.0f && gv[3] <= 87.0f;
    if (!in_range) {
      for (int j = 0; j < 4; ++j) y[i + j] = silu_mul_one(g[i + j], u[i + j]);
      continue;
    }
    const v4f act = gv / (1.0f + fixed_expf4(-gv));
    for (int j = 0; j < 4; ++j) y[i + j] = to_bf16(round_bf16(act[j]) * to_float(u[i + j]));
  }
  for (; i < F; ++i) y[i] = silu_mul_one(g[i], u[i]);
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
