// embedding: y[t, :] = table[ids[t], :], a row copy. No arithmetic: identical in both modes.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/threading.h"

namespace samebits {

absl::Status cpu_embedding(const ExecContext& ctx, const EmbeddingArgs& a) {
  if (a.ids == nullptr) return absl::InvalidArgumentError("embedding: ids is null");
  if (a.table == nullptr) return absl::InvalidArgumentError("embedding: table is null");
  if (a.y == nullptr) return absl::InvalidArgumentError("embedding: y is null");
  if (a.T <= 0) return absl::InvalidArgumentError(absl::StrCat("embedding: T must be positive, got ", a.T));
  if (a.vocab <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("embedding: vocab must be positive, got ", a.vocab));
  }
  if (a.dim <= 0) return absl::InvalidArgumentError(absl::StrCat("embedding: dim must be positive, got ", a.dim));
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
