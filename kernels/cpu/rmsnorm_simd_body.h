// rmsnorm's vector body (kernels/cpu/rmsnorm_simd.h), included by vector_avx2.cpp and
// vector_avx512.cpp after their target pragma: V (simd_*.h) holds one row's 16 lanes and combines
// the lane trees of V::kGroup rows side by side; the pointwise steps run on W-lane GCC vectors
// (kernels/cpu/bf16_lanes.h), the row tails (dim % W) with kernels/bf16.h's scalar functions.
#pragma once
#include <cmath>

#include "kernels/cpu/bf16_lanes.h"
#include "kernels/cpu/rmsnorm_simd.h"
#include "kernels/cpu/simd_unroll.h"

namespace samebits::cpu::simd {

// vf, vi: GCC vector types of W floats and W int32s.
template <typename V, typename vf, typename vi>
inline void rmsnorm_block(const RmsNormBlock& b) {
  constexpr int64_t W = sizeof(vf) / sizeof(float);
  const RmsNormArgs& a = *b.args;
  const int64_t dim = a.dim, ld = (dim + 15) / 16 * 16;
  const int64_t block_rows = (b.rows + V::kGroup - 1) / V::kGroup * V::kGroup;

  // h of every row in fp32, zero-padded to ld; rows past b.rows are zero (their sums are unused).
  for (int64_t r = 0; r < block_rows; ++r) {
    float* h = b.h + r * ld;
    if (r >= b.rows) {
      std::memset(h, 0, sizeof(float) * ld);
      continue;
    }
    const bf16* x = a.x + (b.first_row + r) * dim;
    bf16* res = a.residual != nullptr ? a.residual + (b.first_row + r) * dim : nullptr;
    int64_t i = 0;
    for (; i + W <= dim; i += W) {
      vf hv = load_bf16_lanes<vf, vi>(x + i);
      if (res != nullptr) {
        const vi sum = narrow_bf16_lanes<vf, vi>(hv + load_bf16_lanes<vf, vi>(res + i));
        store_bf16_lanes<vf, vi>(res + i, sum);
        hv = widen_bf16_lanes<vf, vi>(sum);
      }
      std::memcpy(h + i, &hv, sizeof hv);
    }
    for (; i < dim; ++i) {
      if (res != nullptr) {
        const bf16 sum = to_bf16(to_float(x[i]) + to_float(res[i]));
        res[i] = sum;
        h[i] = to_float(sum);
      } else {
        h[i] = to_float(x[i]);
      }
    }
    for (; i < ld; ++i) h[i] = 0.0f;
  }

  // Sums of squares, V::kGroup rows at a time: per part, each row's lanes from +0 and its tree;
  // the part sums added in part order.
  float ss[kRmsNormBlockRows + 16];
  for (int64_t r0 = 0; r0 < block_rows; r0 += V::kGroup) {
    const float* h = b.h + r0 * ld;
    auto part_sums = [&](int64_t k0) {
      const int64_t end = std::min(k0 + b.part_len, ld);
      typename V::Acc acc[V::kGroup];
      SAMEBITS_UNROLL
      for (int i = 0; i < V::kGroup; ++i) acc[i] = V::zero();
      for (int64_t k = k0; k < end; k += 16) {
        SAMEBITS_UNROLL
        for (int i = 0; i < V::kGroup; ++i) {
          const typename V::X v = V::load(h + i * ld + k);
          V::add_product(acc[i], v, v);
        }
      }
      return V::trees(acc);
    };
    typename V::Sums total = part_sums(0);
    for (int64_t k0 = b.part_len; k0 < dim; k0 += b.part_len) total = V::sum(total, part_sums(k0));
    V::store(ss + r0, total);
  }

  for (int64_t r = 0; r < b.rows; ++r) {
    const float inv = 1.0f / std::sqrt(ss[r] / float(dim) + a.eps);
    const float* h = b.h + r * ld;
    bf16* y = a.y + (b.first_row + r) * dim;
    int64_t i = 0;
    for (; i + W <= dim; i += W) {
      vf hv;
      std::memcpy(&hv, h + i, sizeof hv);
      const vf normed = widen_bf16_lanes<vf, vi>(narrow_bf16_lanes<vf, vi>(hv * inv));
      store_bf16_lanes<vf, vi>(y + i, narrow_bf16_lanes<vf, vi>(normed * load_bf16_lanes<vf, vi>(a.weight + i)));
    }
    for (; i < dim; ++i) y[i] = to_bf16(round_bf16(h[i] * inv) * to_float(a.weight[i]));
  }
}

}  // namespace samebits::cpu::simd
