// The linear kernel's vector paths (kernels/cpu/vector_avx2.cpp, vector_avx512.cpp), chosen at run
// time by kernels/cpu/isa.h. Each computes a tile of outputs with exactly linear.cpp's arithmetic:
// per split-K part, 16 lanes (lane l: k = l, l+16, ... from +0, one rounded product then one rounded
// add each), the lanes.h pairwise tree, the part sums added in part order. A vector holds lanes of
// ONE output (one zmm, or two ymm), so no lane ever changes order.
//
// Rows of x and the widened weight panel are zero-padded to a multiple of 16: the padding adds
// 0*0 = +0 to the lanes it reaches, which leaves them unchanged (a lane sum that starts at +0 is
// never -0). The trees of several outputs run side by side (see linear_simd_body.h).
#pragma once
#include <algorithm>  // before the vector files' target pragma: std code stays baseline
#include <cstdint>

#include "kernels/bf16.h"

namespace samebits::cpu {

// Rows of x in one tile at most (linear.cpp's split of the work between threads).
inline constexpr int64_t kLinearTileRows = 64;
// Columns of the weight widened to fp32 at a time (the panel the vector paths reuse across rows).
inline constexpr int kLinearPanelColumns = 4;
// Tiles with fewer rows read the bf16 weight directly (a panel would be used too few times).
inline constexpr int kLinearPanelMinRows = 4;

// Where linear's outputs go, and the last step of each (every path): sum + bias[c] as one fp32 add
// when bias is given, then bf16 by round to nearest even into y, or fp32 as it is into y_f32; rows
// ldy apart.
struct LinearOutputs {
  const bf16* bias = nullptr;
  bf16* y = nullptr;
  float* y_f32 = nullptr;
  int64_t ldy = 0;

  void store(int64_t r, int64_t c, float v) const {
    if (bias != nullptr) v = v + to_float(bias[c]);
    if (y != nullptr) {
      y[r * ldy + c] = to_bf16(v);
    } else {
      y_f32[r * ldy + c] = v;
    }
  }
  // The same outputs with (r0, c0) as their origin.
  LinearOutputs at(int64_t r0, int64_t c0) const {
    return {bias == nullptr ? nullptr : bias + c0, y == nullptr ? nullptr : y + r0 * ldy + c0,
            y_f32 == nullptr ? nullptr : y_f32 + r0 * ldy + c0, ldy};
  }
};

struct LinearTile {
  const float* x;        // rows of x in fp32, row stride padded_K, zero beyond K
  const bf16* w;         // rows of the weight (one per output column), row stride K
  int64_t K = 0;
  int64_t padded_K = 0;  // K rounded up to a multiple of 16
  int64_t part_len = 0;  // split-K part length (a multiple of 16; K when not split)
  int64_t rows = 0, cols = 0;
  float* panel = nullptr;  // scratch: kLinearPanelColumns * padded_K floats
  float* sums = nullptr;   // scratch: sums[r * cols + c], the sum before bias
  LinearOutputs out;       // origin at the tile's first row and column
  // Tiles of fewer than kLinearPanelMinRows rows read each weight byte once or twice: where the
  // weight does not stay in the cache between calls, they prefetch the columns after the ones they
  // read (the schedule of the loads, never their arithmetic).
  bool prefetch_weight = false;
};

void linear_tile_avx2(const LinearTile& t);
void linear_tile_avx512(const LinearTile& t);

// One row of K values of x widened to fp32 and zero-padded to the next multiple of 16 (a row that
// LinearTile::x points to).
void linear_widen_row_avx2(const bf16* x, int64_t K, float* out);
void linear_widen_row_avx512(const bf16* x, int64_t K, float* out);

}  // namespace samebits::cpu
