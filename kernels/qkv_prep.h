// QkvPrepArgs (kernels/ops.h) as separate stages through a backend's own ops: the heads copied to
// the dense outputs, then rmsnorm over head rows, rope and kv_write on those outputs. The CPU
// backend's qkv_prep is exactly this; the CUDA backend's where its fused kernel does not apply (a
// split default-mode norm plan whose parts it cannot hold, a head size it does not take). The
// fused kernel computes the same arithmetic per element, so both give the same bits.
#pragma once
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/ops.h"

namespace samebits {

struct QkvPrepStages {
  // dst[r * dst_stride + c] = src[r * src_stride + c] for r < rows, c < cols (bf16 elements).
  absl::Status (*copy_rows)(const ExecContext&, bf16* dst, int64_t dst_stride, const bf16* src, int64_t src_stride,
                            int64_t rows, int64_t cols);
  absl::Status (*rmsnorm)(const ExecContext&, const RmsNormArgs&);
  absl::Status (*rope)(const ExecContext&, const RopeArgs&);
  absl::Status (*kv_write)(const ExecContext&, const KvWriteArgs&);
};

// Errors name the field ("qkv_prep: q_stride 96 is smaller than the 128 values of the q heads").
absl::Status check_qkv_prep(const QkvPrepArgs& a);
absl::Status qkv_prep_staged(const ExecContext& ctx, const QkvPrepArgs& a, const QkvPrepStages& ops);

}  // namespace samebits
