// Argument checks shared by every backend, so that each op rejects the same calls with the same
// one-line message whichever backend runs it. Checks that read tensor contents (positions, ids)
// stay with the backend that can read them before launching.
#pragma once
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/ops.h"

namespace samebits {

inline absl::Status check_rope_shape(const RopeArgs& a) {
  if (a.q == nullptr) return absl::InvalidArgumentError("rope: q is null");
  if (a.k == nullptr) return absl::InvalidArgumentError("rope: k is null");
  if (a.positions == nullptr) return absl::InvalidArgumentError("rope: positions is null");
  if (a.table == nullptr) return absl::InvalidArgumentError("rope: table is null");
  if (a.T <= 0) return absl::InvalidArgumentError(absl::StrCat("rope: T must be positive, got ", a.T));
  if (a.num_q_heads <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("rope: num_q_heads must be positive, got ", a.num_q_heads));
  }
  if (a.num_kv_heads <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("rope: num_kv_heads must be positive, got ", a.num_kv_heads));
  }
  if (a.head_dim <= 0 || a.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("rope: head_dim must be positive and even, got ", a.head_dim));
  }
  if (a.max_position <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("rope: max_position must be positive, got ", a.max_position));
  }
  return absl::OkStatus();
}

}  // namespace samebits
