// rmsnorm's vector paths (kernels/cpu/vector_avx2.cpp, vector_avx512.cpp), chosen at run time by
// kernels/cpu/isa.h; rmsnorm.cpp holds the portable path. A block of up to kRmsNormBlockRows rows
// is computed with exactly rmsnorm.cpp's operations per row: h = bf16(x + residual) (stored into
// the residual) or x, widened; the sum of squares per part in the 16-lane order of
// kernels/cpu/lanes.h (the lane trees of several rows side by side), the parts added in part
// order; inv = 1 / sqrt(ss / dim + eps); y = bf16(bf16(h * inv) * weight). Rows are independent.
#pragma once
#include <cstdint>

#include "kernels/ops.h"

namespace samebits::cpu {

inline constexpr int kRmsNormBlockRows = 16;

struct RmsNormBlock {
  const RmsNormArgs* args = nullptr;
  int64_t first_row = 0, rows = 0;  // rows <= kRmsNormBlockRows
  int64_t part_len = 0;             // a multiple of 16 (dim rounded up when not split)
  float* h = nullptr;               // scratch: kRmsNormBlockRows rows of round_up(dim, 16) floats
};

void rmsnorm_block_avx2(const RmsNormBlock& b);
void rmsnorm_block_avx512(const RmsNormBlock& b);

}  // namespace samebits::cpu
