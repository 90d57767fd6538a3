// argmax: out[r] = the lowest id among the maxima of logits[r, :]; NaN never wins; a row of NaN
// only gives 0. A comparison scan, no arithmetic: identical in both modes; threads take whole rows.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/argmax_row.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/threading.h"

namespace samebits {

absl::Status cpu_argmax(const ExecContext& ctx, const ArgmaxArgs& a) {
  if (a.logits == nullptr) return absl::InvalidArgumentError("argmax: logits is null");
  if (a.out == nullptr) return absl::InvalidArgumentError("argmax: out is null");
  if (a.rows <= 0) return absl::InvalidArgumentError(absl::StrCat("argmax: rows must be positive, got ", a.rows));
  if (a.vocab <= 0 || a.vocab > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("argmax: vocab must be in [1, 2^31), got ", a.vocab));
  }
  cpu::parallel_for(ctx, a.rows, [&](int64_t r) {
    a.out[r] = cpu::argmax_row(a.logits + r * a.vocab, a.vocab);
  }, a.vocab, 1 << 16);
  return absl::OkStatus();
}

}  // namespace samebits
