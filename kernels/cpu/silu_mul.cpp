// silu_mul: y = bf16(bf16(silu(g)) * u), silu(g) = g / (1 + fixed_expf(-g)), as HF (the activation
// is cast to bf16 before the multiply). Pointwise, no reduction: identical in both modes; threads
// take whole rows.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/threading.h"
#include "kernels/fixed_math.h"

namespace samebits {

absl::Status cpu_silu_mul(const ExecContext& ctx, const SiluMulArgs& a) {
  if (a.gate == nullptr) return absl::InvalidArgumentError("silu_mul: gate is null");
  if (a.up == nullptr) return absl::InvalidArgumentError("silu_mul: up is null");
  if (a.y == nullptr) return absl::InvalidArgumentError("silu_mul: y is null");
  if (a.T <= 0) return absl::InvalidArgumentError(absl::StrCat("silu_mul: T must be positive, got ", a.T));
  if (a.F <= 0) return absl::InvalidArgumentError(absl::StrCat("silu_mul: F must be positive, got ", a.F));
  const int64_t F = a.F;
  cpu::parallel_for(ctx, a.T, [&](int64_t t) {
    const bf16* g = a.gate + t * F;
    const bf16* u = a.up + t * F;
    bf16* y = a.y + t * F;
    for (int64_t i = 0; i < F; ++i) {
      float gv = to_float(g[i]);
      float act = gv / (1.0f + fixed_expf(-gv));
      y[i] = to_bf16(round_bf16(act) * to_float(u[i]));
    }
  }, F, 1 << 14);
  return absl::OkStatus();
}

}  // namespace samebits
