// The staged q|k|v path an op observer (explain) sees: qkv_prep one stage per call (split, head
// norms, rope, KV write), each stage's outputs handed to the observer in the unfused op order. The
// same arithmetic per element as the fused call, so the same bits (tests: GpuQkvPrep, explain).
#include <tuple>

#include "models/tiny_qwen/model_impl.h"

namespace samebits {

absl::Status Model::Impl::qkv_prep_observed(const ExecContext& ctx, const QkvPrepArgs& prep, int layer, int64_t T,
                                            const std::string& plan) const {
  const Backend& b = *backend;
  const int64_t q_dim = int64_t(prep.num_q_heads) * prep.head_dim, kv_dim = int64_t(prep.num_kv_heads) * prep.head_dim;
  QkvPrepArgs split = prep;
  split.q_norm = split.k_norm = nullptr, split.positions = nullptr, split.k_cache = split.v_cache = nullptr;
  SAMEBITS_RETURN_IF_ERROR(b.qkv_prep(ctx, split));
  for (auto [op, y, cols] : {std::tuple{ModelOp::kQProj, prep.q, q_dim}, {ModelOp::kKProj, prep.k, kv_dim},
                             {ModelOp::kVProj, prep.v, kv_dim}}) {
    SAMEBITS_RETURN_IF_ERROR(observe(ctx, layer, op, y, T, cols, false, plan));
  }
  // The later stages run in place on the dense outputs.
  QkvPrepArgs stage = split;
  stage.q_in = prep.q, stage.k_in = prep.k, stage.v_in = prep.v, stage.q_stride = q_dim, stage.kv_stride = kv_dim;
  if (prep.q_norm != nullptr) {
    QkvPrepArgs norm = stage;
    norm.q_norm = prep.q_norm, norm.k_norm = prep.k_norm, norm.q_plan = prep.q_plan, norm.k_plan = prep.k_plan;
    SAMEBITS_RETURN_IF_ERROR(b.qkv_prep(ctx, norm));
    SAMEBITS_RETURN_IF_ERROR(observe(ctx, layer, ModelOp::kQNorm, prep.q, T, q_dim, false, prep.q_plan.describe()));
    SAMEBITS_RETURN_IF_ERROR(observe(ctx, layer, ModelOp::kKNorm, prep.k, T, kv_dim, false, prep.k_plan.describe()));
  }
  QkvPrepArgs rope = stage;
  rope.positions = prep.positions;
  SAMEBITS_RETURN_IF_ERROR(b.qkv_prep(ctx, rope));
  SAMEBITS_RETURN_IF_ERROR(observe(ctx, layer, ModelOp::kRopeQ, prep.q, T, q_dim, false, ""));
  SAMEBITS_RETURN_IF_ERROR(observe(ctx, layer, ModelOp::kRopeK, prep.k, T, kv_dim, false, ""));
  QkvPrepArgs write = stage;
  write.slot_mapping = prep.slot_mapping, write.k_cache = prep.k_cache, write.v_cache = prep.v_cache;
  write.num_slots = prep.num_slots;
  return b.qkv_prep(ctx, write);
}
}  // namespace samebits
