// The op sweeps of the mutation suite, through a backend's table (any backend, real or mutant):
// one target row computed alone, then inside batches of many sizes and at several positions, in
// invariant mode, bit for bit. They see what the engine sweep's model may hide: a reduction order
// that changes only where fp32 sums round (the tiny model's sums are often exact) or a bf16 output
// near a rounding boundary. Each returns "" when every row matched, else where the first differed.
#pragma once
#include <string>

#include "kernels/backend.h"

namespace samebits::testing {

// linear: N = 512, K = 1024, fp32 output (as the logits), batches of 2..130 rows.
std::string linear_op_sweep(const Backend& b);
// rmsnorm: sensitive rows (tests/support/sensitive_rows.h), hidden size 256 with the residual add
// and head_dim 64 (the q/k norm), batches of 2..130 rows.
std::string rmsnorm_op_sweep(const Backend& b);
// sample: one row's draws (temperature 1 over a flat distribution, uniform from (seed, step)) alone
// and inside batches of 3 and 8 rows. (The engine sweep's model is too sure of itself for a wrong
// uniform to change its draws.)
std::string sample_op_sweep(const Backend& b);

// The three above, in that order: the first difference found, or "".
std::string op_sweeps(const Backend& b);

}  // namespace samebits::testing
