// qkv_prep on the CPU: the staged form (kernels/qkv_prep.h) through the CPU's own rmsnorm, rope
// and kv_write, so each piece of arithmetic lives in one place; the heads' copy out of the fused
// projection rows is a plain row copy.
#include <cstring>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/qkv_prep.h"

namespace samebits {
namespace {

absl::Status copy_rows(const ExecContext&, bf16* dst, int64_t dst_stride, const bf16* src, int64_t src_stride,
                       int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) std::memmove(dst + r * dst_stride, src + r * src_stride, size_t(cols) * sizeof(bf16));
  return absl::OkStatus();
}

}  // namespace

absl::Status cpu_qkv_prep(const ExecContext& ctx, const QkvPrepArgs& a) {
  return qkv_prep_staged(ctx, a, QkvPrepStages{copy_rows, cpu_rmsnorm, cpu_rope, cpu_kv_write});
}

}  // namespace samebits
