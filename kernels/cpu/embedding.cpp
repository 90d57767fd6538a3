// embedding: y[t, :] = table[ids[t], :], a row copy. No arithmetic: identical in both modes.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/threading.h"
#include "kernels/op_checks.h"

namespace samebits {

absl::Status cpu_embedding(const ExecContext& ctx, const EmbeddingArgs& a) {
  if (absl::Status shape = check_embedding_shape(a); !shape.ok()) return shape;
  for (int64_t t = 0; t < a.T; ++t) {  // checked before any row is written
    if (a.ids[t] < 0 || a.ids[t] >= a.vocab) {
      return absl::InvalidArgumentError(absl::StrCat("embedding: token ", t, " has id ", a.ids[t],
                                                     " outside [0, ", a.vocab, ")"));
    }
  }
  const int64_t dim = a.dim;
  cpu::parallel_for(ctx, a.T, [&](int64_t t) {
    std::memcpy(a.y + t * dim, a.table + int64_t(a.ids[t]) * dim, size_t(dim) * sizeof(bf16));
  }, dim, 1 << 16);
  return absl::OkStatus();
}

}  // namespace samebits
