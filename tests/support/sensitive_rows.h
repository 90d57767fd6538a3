// Rows on which a change in a row reduction's order shows in bf16 outputs. An fp32 change of a sum
// of squares moves rmsnorm's inv by about an ulp, which changes the bf16 y only where h * inv lies
// within about an fp32 ulp of a bf16 rounding boundary: with random rows the odds are ~2^-16 per
// distinct mantissa, so a batch-dependent order would almost never show. Each row here is random
// over several binary orders of magnitude (so that sums of squares round often) except one small
// "tuner" element, chosen among ~1800 bf16 values so that the exact h_i * inv of some element lies
// within a quarter fp32 ulp of a bf16 midpoint (the situation of a near-tie in a trained model).
// The tuner moves inv in steps far finer than an ulp, so such a value always exists.
// Used by the rmsnorm kernel sweeps (tests/kernels) and the mutation suite's op sweep.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/bf16.h"

namespace samebits::testing {

struct SensitiveRows {
  std::vector<bf16> x, residual;  // [rows, dim] each; residual: for the fused residual add
};

// with_residual: the rows are tuned for h = bf16(x + residual), else for h = x.
SensitiveRows sensitive_rmsnorm_rows(int64_t rows, int64_t dim, bool with_residual, double eps);

}  // namespace samebits::testing
