// The project's own math functions. glibc picks different exp/sin code paths by CPU feature and
// version; a golden digest must not depend on the machine that computed it. Everything here is
// built from +, -, *, / and sqrt (all correctly rounded in IEEE arithmetic) in a fixed order.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/bf16.h"

namespace samebits {

// exp(x) in fp32 from a fixed range reduction and polynomial; |rel err| < 2 ulp on [-87, 88].
float fixed_expf(float x);
// Double-precision helpers used only for tables computed once (rope).
double fixed_exp(double x);
double fixed_log(double x);
void fixed_sincos(double x, double* s, double* c);

// Rope table [max_position, head_dim]: cos(p * inv_freq[i]) for i < head_dim/2, then sin.
// inv_freq[i] = theta^(-2i/head_dim), as HF computes it.
std::vector<float> make_rope_table(double theta, int head_dim, int64_t max_position);

// Uniform in [0,1) keyed by (seed, step) only: counter-based, never by batch row or call order.
double sampling_uniform(uint64_t seed, uint64_t step);

}  // namespace samebits
