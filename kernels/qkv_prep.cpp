#include "kernels/qkv_prep.h"

#include "absl/strings/str_cat.h"

namespace samebits {

absl::Status check_qkv_prep(const QkvPrepArgs& a) {
  auto invalid = [](auto&&... what) { return absl::InvalidArgumentError(absl::StrCat("qkv_prep: ", what...)); };
  if (a.T < 0) return invalid("T = ", a.T, " is negative");
  if (a.num_q_heads <= 0 || a.num_kv_heads <= 0) {
    return invalid("heads ", a.num_q_heads, " q / ", a.num_kv_heads, " kv: not positive");
  }
  if (a.head_dim <= 0 || a.head_dim % 2 != 0) return invalid("head_dim = ", a.head_dim, " is not a positive even number");
  const int64_t q_dim = int64_t(a.num_q_heads) * a.head_dim, kv_dim = int64_t(a.num_kv_heads) * a.head_dim;
  if (a.q_stride < q_dim) return invalid("q_stride ", a.q_stride, " is smaller than the ", q_dim, " values of the q heads");
  if (a.kv_stride < kv_dim) {
    return invalid("kv_stride ", a.kv_stride, " is smaller than the ", kv_dim, " values of the kv heads");
  }
  if (a.T == 0) return absl::OkStatus();
  if (!a.q_in || !a.k_in || !a.v_in) return invalid(!a.q_in ? "q_in" : !a.k_in ? "k_in" : "v_in", " is null");
  if (!a.q || !a.k || !a.v) return invalid(!a.q ? "q" : !a.k ? "k" : "v", " is null");
  if ((a.q_norm == nullptr) != (a.k_norm == nullptr)) return invalid(a.q_norm ? "k_norm" : "q_norm", " is null, the other is set");
  if (a.positions != nullptr && (a.table == nullptr || a.max_position <= 0)) {
    return invalid("rope: table is null or max_position = ", a.max_position);
  }
  if (a.k_cache != nullptr && (a.v_cache == nullptr || a.slot_mapping == nullptr)) {
    return invalid(a.v_cache ? "slot_mapping" : "v_cache", " is null, k_cache is set");
  }
  return absl::OkStatus();
}

absl::Status qkv_prep_staged(const ExecContext& ctx, const QkvPrepArgs& a, const QkvPrepStages& ops) {
  if (absl::Status s = check_qkv_prep(a); !s.ok()) return s;
  if (a.T == 0) return absl::OkStatus();
  const int64_t q_dim = int64_t(a.num_q_heads) * a.head_dim, kv_dim = int64_t(a.num_kv_heads) * a.head_dim;
  const struct {
    bf16* dst;
    const bf16* src;
    int64_t cols, stride;
  } copies[] = {{a.q, a.q_in, q_dim, a.q_stride}, {a.k, a.k_in, kv_dim, a.kv_stride}, {a.v, a.v_in, kv_dim, a.kv_stride}};
  for (const auto& c : copies) {
    if (c.dst == c.src && c.stride == c.cols) continue;  // already in place
    if (absl::Status s = ops.copy_rows(ctx, c.dst, c.cols, c.src, c.stride, a.T, c.cols); !s.ok()) return s;
  }
  if (a.q_norm != nullptr) {
    const struct {
      bf16* x;
      const bf16* w;
      int heads;
      RowReducePlan plan;
    } norms[] = {{a.q, a.q_norm, a.num_q_heads, a.q_plan}, {a.k, a.k_norm, a.num_kv_heads, a.k_plan}};
    for (const auto& n : norms) {
      RmsNormArgs r;
      r.x = n.x, r.weight = n.w, r.rows = a.T * n.heads, r.dim = a.head_dim, r.eps = a.eps, r.plan = n.plan, r.y = n.x;
      if (absl::Status s = ops.rmsnorm(ctx, r); !s.ok()) return s;
    }
  }
  if (a.positions != nullptr) {
    RopeArgs r;
    r.q = a.q, r.k = a.k, r.positions = a.positions, r.T = a.T;
    r.num_q_heads = a.num_q_heads, r.num_kv_heads = a.num_kv_heads, r.head_dim = a.head_dim;
    r.table = a.table, r.max_position = a.max_position;
    if (absl::Status s = ops.rope(ctx, r); !s.ok()) return s;
  }
  if (a.k_cache != nullptr) {
    KvWriteArgs w;
    w.k = a.k, w.v = a.v, w.slot_mapping = a.slot_mapping, w.T = a.T;
    w.num_kv_heads = a.num_kv_heads, w.head_dim = a.head_dim;
    w.k_cache = a.k_cache, w.v_cache = a.v_cache, w.num_slots = a.num_slots;
    if (absl::Status s = ops.kv_write(ctx, w); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace samebits
