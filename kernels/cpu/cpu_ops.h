// The CPU backend's ops, one function per op, each in its own file under kernels/cpu/.
// kernels/cpu/backend_cpu.cpp puts them into the backend table (kernels/backend.h).
#pragma once
#include "absl/status/status.h"
#include "kernels/ops.h"

namespace samebits {

absl::Status cpu_linear(const ExecContext& ctx, const LinearArgs& args);        // linear.cpp
absl::Status cpu_rmsnorm(const ExecContext& ctx, const RmsNormArgs& args);      // rmsnorm.cpp
absl::Status cpu_rope(const ExecContext& ctx, const RopeArgs& args);            // rope.cpp
absl::Status cpu_silu_mul(const ExecContext& ctx, const SiluMulArgs& args);     // silu_mul.cpp
absl::Status cpu_gate_up_silu(const ExecContext& ctx, const GateUpSiluArgs& args);  // silu_mul.cpp
absl::Status cpu_embedding(const ExecContext& ctx, const EmbeddingArgs& args);  // embedding.cpp
absl::Status cpu_kv_write(const ExecContext& ctx, const KvWriteArgs& args);     // kv_write.cpp
absl::Status cpu_qkv_prep(const ExecContext& ctx, const QkvPrepArgs& args);     // qkv_prep.cpp
absl::Status cpu_attention(const ExecContext& ctx, const AttentionArgs& args);  // attention.cpp
absl::Status cpu_argmax(const ExecContext& ctx, const ArgmaxArgs& args);        // argmax.cpp
absl::Status cpu_sample(const ExecContext& ctx, const SampleArgs& args);        // sample.cpp

}  // namespace samebits
