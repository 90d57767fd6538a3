// gate_up_silu (kernels/ops.h) by its parts, for any backend: its linear on the interleaved weight
// into the [M, 2F] scratch, then its silu_mul over the interleaved columns. The CPU backend's op in
// both modes, the CUDA backend's in default mode (cuBLASLt, then the silu_mul kernel). The reference
// any fused implementation must equal bit for bit.
#pragma once
#include "absl/status/status.h"
#include "kernels/ops.h"

namespace samebits {

using LinearOp = absl::Status (*)(const ExecContext&, const LinearArgs&);
using SiluMulOp = absl::Status (*)(const ExecContext&, const SiluMulArgs&);

// The linear of a gate_up_silu call: w [2F, K] into a.gate_up (y, when y is [M, 2F] scratch).
LinearArgs gate_up_linear_args(const GateUpSiluArgs& a);

absl::Status gate_up_silu_by_parts(LinearOp linear, SiluMulOp silu_mul, const ExecContext& ctx,
                                   const GateUpSiluArgs& a);

// Host memory: gate [F, K] and up [F, K] into out [2F, K] by gate_up_weight_row (tests, benchmarks;
// the model interleaves in backend memory, models/tiny_qwen/device_weights.cpp).
void interleave_gate_up(const bf16* gate, const bf16* up, int64_t F, int64_t K, bf16* out);

}  // namespace samebits
