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

inline absl::Status check_linear_shape(const LinearArgs& a) {
  if (a.x == nullptr) return absl::InvalidArgumentError("linear: x is null");
  if (a.w == nullptr) return absl::InvalidArgumentError("linear: w is null");
  if (a.M <= 0) return absl::InvalidArgumentError(absl::StrCat("linear: M must be positive, got ", a.M));
  if (a.N <= 0) return absl::InvalidArgumentError(absl::StrCat("linear: N must be positive, got ", a.N));
  if (a.K <= 0) return absl::InvalidArgumentError(absl::StrCat("linear: K must be positive, got ", a.K));
  if ((a.y == nullptr) == (a.y_f32 == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat("linear: exactly one of y (bf16) and y_f32 must be set, got ",
                                                   a.y == nullptr ? "neither" : "both"));
  }
  return absl::OkStatus();
}

inline absl::Status check_rmsnorm_shape(const RmsNormArgs& a) {
  if (a.x == nullptr) return absl::InvalidArgumentError("rmsnorm: x is null");
  if (a.weight == nullptr) return absl::InvalidArgumentError("rmsnorm: weight is null");
  if (a.y == nullptr) return absl::InvalidArgumentError("rmsnorm: y is null");
  if (a.rows <= 0) return absl::InvalidArgumentError(absl::StrCat("rmsnorm: rows must be positive, got ", a.rows));
  if (a.dim <= 0) return absl::InvalidArgumentError(absl::StrCat("rmsnorm: dim must be positive, got ", a.dim));
  if (!(a.eps >= 0.0f) || a.eps - a.eps != 0.0f) {  // NaN and inf fail one of the two
    return absl::InvalidArgumentError(absl::StrCat("rmsnorm: eps must be finite and >= 0, got ", a.eps));
  }
  if (a.residual != nullptr && static_cast<const void*>(a.residual) == static_cast<const void*>(a.x)) {
    return absl::InvalidArgumentError("rmsnorm: residual must not alias x");
  }
  return absl::OkStatus();
}

inline absl::Status check_silu_mul_shape(const SiluMulArgs& a) {
  if (a.gate == nullptr) return absl::InvalidArgumentError("silu_mul: gate is null");
  if (a.up == nullptr) return absl::InvalidArgumentError("silu_mul: up is null");
  if (a.y == nullptr) return absl::InvalidArgumentError("silu_mul: y is null");
  if (a.T <= 0) return absl::InvalidArgumentError(absl::StrCat("silu_mul: T must be positive, got ", a.T));
  if (a.F <= 0) return absl::InvalidArgumentError(absl::StrCat("silu_mul: F must be positive, got ", a.F));
  if (a.group < 0 || (a.group > 0 && (a.F % a.group != 0 || a.up != a.gate + a.group))) {
    return absl::InvalidArgumentError(absl::StrCat("silu_mul: group ", a.group,
                                                   " must be 0, or divide F with up == gate + group"));
  }
  return absl::OkStatus();
}

inline absl::Status check_gate_up_silu_shape(const GateUpSiluArgs& a) {
  if (a.x == nullptr) return absl::InvalidArgumentError("gate_up_silu: x is null");
  if (a.w == nullptr) return absl::InvalidArgumentError("gate_up_silu: w is null");
  if (a.y == nullptr) return absl::InvalidArgumentError("gate_up_silu: y is null");
  if (a.M <= 0) return absl::InvalidArgumentError(absl::StrCat("gate_up_silu: M must be positive, got ", a.M));
  if (a.K <= 0) return absl::InvalidArgumentError(absl::StrCat("gate_up_silu: K must be positive, got ", a.K));
  if (a.F <= 0 || a.F % kGateUpGroup != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gate_up_silu: F must be a positive multiple of ", kGateUpGroup, ", got ", a.F));
  }
  return absl::OkStatus();
}

inline absl::Status check_embedding_shape(const EmbeddingArgs& a) {
  if (a.ids == nullptr) return absl::InvalidArgumentError("embedding: ids is null");
  if (a.table == nullptr) return absl::InvalidArgumentError("embedding: table is null");
  if (a.y == nullptr) return absl::InvalidArgumentError("embedding: y is null");
  if (a.T <= 0) return absl::InvalidArgumentError(absl::StrCat("embedding: T must be positive, got ", a.T));
  if (a.vocab <= 0) return absl::InvalidArgumentError(absl::StrCat("embedding: vocab must be positive, got ", a.vocab));
  if (a.dim <= 0) return absl::InvalidArgumentError(absl::StrCat("embedding: dim must be positive, got ", a.dim));
  return absl::OkStatus();
}

}  // namespace samebits
