// SiluMulRoute: which of two same-bits kernels silu_mul's 16-byte path takes (kernels/cuda/silu_mul.cu).
// Apart from cuda_ops.h so that only silu_mul.cu and its tests depend on it.
#pragma once
#include "absl/status/status.h"
#include "kernels/ops.h"

namespace samebits {

// kCurrent: two 16-byte pieces per thread, loads first, bf16 rounding by cvt; kPrevious: the kernel
// it replaced (one piece per thread, bf16 rounding in integer arithmetic), kept for the side-by-side
// timing. Same bits (gpu test). kAuto (the backend table's silu_mul and gate_up_silu by parts) is
// kCurrent, or kPrevious in the whole process where the environment says
// SAMEBITS_CUDA_SILU_MUL=previous (the burst's --profile, old and new from one binary; read once).
enum class SiluMulRoute { kAuto, kCurrent, kPrevious };
absl::Status cuda_silu_mul_routed(const ExecContext& ctx, const SiluMulArgs& args, SiluMulRoute route);

}  // namespace samebits
