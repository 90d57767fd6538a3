// The rotation of one rope pair (NeoX / HF rotate_half layout): for i < D/2, lo = v[i],
// hi = v[i + D/2], c = cos_i, s = sin_i; out[i] = lo*c - hi*s, out[i + D/2] = hi*c + lo*s, each
// product rounded, then the add (no fused multiply-add: -ffp-contract=off, nvcc --fmad=false), then
// one rounding to bf16. Host and device code, so every backend's rope (and the CUDA fused q|k|v
// preparation) computes exactly this.
#pragma once
#include "kernels/bf16.h"

namespace samebits {

// The fp32 results before their rounding to bf16 (for kernels that round several values at once).
SAMEBITS_HD float rope_lo_unrounded(float lo, float hi, float c, float s) {
  const float lo_c = lo * c, hi_s = hi * s;
  return lo_c - hi_s;
}

SAMEBITS_HD float rope_hi_unrounded(float lo, float hi, float c, float s) {
  const float hi_c = hi * c, lo_s = lo * s;
  return hi_c + lo_s;
}

SAMEBITS_HD bf16 rope_lo(float lo, float hi, float c, float s) { return to_bf16(rope_lo_unrounded(lo, hi, c, s)); }
SAMEBITS_HD bf16 rope_hi(float lo, float hi, float c, float s) { return to_bf16(rope_hi_unrounded(lo, hi, c, s)); }

}  // namespace samebits
