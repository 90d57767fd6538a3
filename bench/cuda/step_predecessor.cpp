#include "bench/cuda/step_predecessor.h"

#include <algorithm>

#include "kernels/fixed_math.h"
#include "kernels/plan.h"

namespace samebits::bench {
namespace {

// Qwen3's rope base; the table covers every position of the batch.
constexpr double kRopeTheta = 1e6;

}  // namespace

std::unique_ptr<StepPredecessor> StepPredecessor::make(const Backend& gpu, const StepTarget& target, Mode mode) {
  std::unique_ptr<StepPredecessor> p(new StepPredecessor(gpu));
  p->mode_ = mode;
  const int64_t T = int64_t(target.positions.size());
  const int hd = target.head_dim;
  if (T == 0 || int64_t(target.slots.size()) != T) return nullptr;
  int64_t max_position = 1;
  for (int32_t pos : target.positions) max_position = std::max<int64_t>(max_position, int64_t(pos) + 1);
  // The fused q|k|v projection's rows, as the model's qkv linear leaves them.
  const int64_t stride = int64_t(target.num_q_heads + 2 * target.num_kv_heads) * hd;
  auto alloc = [&](size_t bytes) -> void* {
    absl::StatusOr<void*> ptr = gpu.alloc(bytes);
    if (!ptr.ok()) return nullptr;
    p->owned_.push_back(*ptr);
    return *ptr;
  };
  auto* qkv = static_cast<bf16*>(alloc(size_t(T * stride) * 2));
  auto* norms = static_cast<bf16*>(alloc(size_t(2 * hd) * 2));
  auto* positions = static_cast<int32_t*>(alloc(size_t(T) * 4));
  auto* slots = static_cast<int64_t*>(alloc(size_t(T) * 8));
  const std::vector<float> table = make_rope_table(kRopeTheta, hd, max_position);
  auto* d_table = static_cast<float*>(alloc(table.size() * 4));
  if (qkv == nullptr || norms == nullptr || positions == nullptr || slots == nullptr || d_table == nullptr ||
      !gpu.fill_synthetic(qkv, T * stride, 6, 1.f, 0.f).ok() ||
      !gpu.fill_synthetic(norms, 2 * hd, 7, 0.5f, 1.f).ok() ||
      !gpu.upload(positions, target.positions.data(), size_t(T) * 4).ok() ||
      !gpu.upload(slots, target.slots.data(), size_t(T) * 8).ok() ||
      !gpu.upload(d_table, table.data(), table.size() * 4).ok()) {
    return nullptr;
  }
  QkvPrepArgs& a = p->args_;
  a.q_in = qkv;
  a.k_in = qkv + int64_t(target.num_q_heads) * hd;
  a.v_in = a.k_in + int64_t(target.num_kv_heads) * hd;
  a.q_stride = a.kv_stride = stride;
  a.T = T;
  a.num_q_heads = target.num_q_heads;
  a.num_kv_heads = target.num_kv_heads;
  a.head_dim = hd;
  a.q_norm = norms;
  a.k_norm = norms + hd;
  a.q_plan = plan_row_reduce(mode, T * target.num_q_heads, hd, kDefaultParallelUnits);
  a.k_plan = plan_row_reduce(mode, T * target.num_kv_heads, hd, kDefaultParallelUnits);
  a.positions = positions;
  a.table = d_table;
  a.max_position = max_position;
  a.slot_mapping = slots;
  a.k_cache = target.k_cache;
  a.v_cache = target.v_cache;
  a.num_slots = target.num_slots;
  a.slots_distinct = true;  // one new token per sequence, each in its own slot
  a.q = target.q;
  a.k = target.k;
  a.v = target.v;
  return p;
}

StepPredecessor::~StepPredecessor() {
  for (void* ptr : owned_) gpu_.free(ptr);
}

absl::Status StepPredecessor::launch(void* stream) const {
  ExecContext ctx;
  ctx.mode = mode_;
  ctx.stream = stream;
  return gpu_.qkv_prep(ctx, args_);
}

}  // namespace samebits::bench
