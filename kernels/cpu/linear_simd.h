// The linear kernel's vector paths (kernels/cpu/linear_avx2.cpp, linear_avx512.cpp), chosen at run
// time by kernels/cpu/isa.h. Each computes a tile of outputs with exactly linear.cpp's arithmetic:
// per split-K part, 16 lanes (lane l: k = l, l+16, ... from +0, one rounded product then one rounded
// add each), the lanes.h pairwise tree, the part sums added in part order. Vectors hold the 16
// lanes of one output (one zmm, or two ymm), so no lane ever changes order; a tail shorter than 16
// adds 0*0 = +0 to the lanes it does not reach, which leaves them unchanged (a lane sum that
// starts at +0 is never -0).
#pragma once
#include <algorithm>  // before the vector files' target pragma: std code stays baseline
#include <cstdint>

#include "kernels/bf16.h"

namespace samebits::cpu {

struct LinearTile {
  const float* x;    // rows of x in fp32, row stride K
  const bf16* w;     // rows of the weight (one per output column), row stride K
  int64_t K = 0;
  int64_t part_len = 0;  // split-K part length (a multiple of 16; K when not split)
  int64_t rows = 0, cols = 0;
  float* out = nullptr;  // out[r * cols + c]: the sum before bias
};

void linear_tile_avx2(const LinearTile& t);
void linear_tile_avx512(const LinearTile& t);

}  // namespace samebits::cpu
