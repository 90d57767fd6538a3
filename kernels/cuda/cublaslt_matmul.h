// Default-mode linear through cuBLASLt (kernels/cuda/linear.cu states the semantics).
#pragma once
#include <string>
#include "absl/status/status.h"
#include "kernels/ops.h"

namespace samebits::cuda {

// y = x * w^T (+ bias) with cuBLASLt's heuristic algorithm for this (M, N, K, output type); the
// choice is cached per shape. fp32 output with a bias: the matmul, then one fp32 add per element.
absl::Status cublaslt_linear(const ExecContext& ctx, const LinearArgs& args);
// Frees the workspace, the cached plans and the handle (at process exit, after the device is idle);
// a later cublaslt_linear starts them again.
void cublaslt_release();
// The loaded cuBLASLt's version, "major.minor.patch" (cublasLtGetVersion).
std::string cublaslt_version();
// y[m, n] = y[m, n] + bias[n] in fp32 (linear.cu).
absl::Status add_bias_f32(const ExecContext& ctx, float* y, const bf16* bias, int64_t M, int64_t N);

}  // namespace samebits::cuda
