// Fixed-lane reductions shared by every CPU kernel (linear, rmsnorm, attention).
//
// Order, identical for every n, every vector ISA and every caller: lane l (0..15) accumulates the
// products of k = l, l+16, l+32, ... in increasing k, starting from +0.0f, one rounded multiply
// then one rounded add per term (no FMA: -ffp-contract=off). The 16 lanes are then combined in a
// fixed pairwise tree: ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) + ... A tail shorter than 16 follows
// the same lane rule (k mod 16), so there is no tail-specific order.
//
// A range [begin, begin+n) whose begin is a multiple of 16 reduced with these routines gives each
// element the same lane it has in the whole row; split-K parts rely on this.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/bf16.h"
#include "kernels/plan.h"

namespace samebits::cpu {

inline constexpr int kLanes = kReductionLanes;
static_assert(kLanes == 16, "combine_lanes spells out a 16-lane tree");

inline float widen(float v) { return v; }
inline float widen(bf16 v) { return to_float(v); }

// The fixed pairwise tree over 16 lane sums.
inline float combine_lanes(const float* lanes) {
  float t8[8], t4[4];
  for (int i = 0; i < 8; ++i) t8[i] = lanes[2 * i] + lanes[2 * i + 1];
  for (int i = 0; i < 4; ++i) t4[i] = t8[2 * i] + t8[2 * i + 1];
  return (t4[0] + t4[1]) + (t4[2] + t4[3]);
}

// 16 lane accumulators held as four 4-wide vectors (GCC/Clang vector extensions: element-wise
// IEEE operations, so the bits are those of 16 scalar lanes on any ISA). Lane l is element l % 4
// of vector l / 4. Keeping them in vector registers (instead of a float[16] the compiler may keep
// in memory) is what makes the kernels fast on the baseline x86-64 ISA.
struct LaneAcc {
  typedef float v4f __attribute__((vector_size(16)));
  typedef uint16_t v8u16 __attribute__((vector_size(16)));
  v4f v[4] = {};

  static v4f load4(const float* p) {
    v4f r;
    std::memcpy(&r, p, sizeof r);
    return r;
  }
  // bf16 -> fp32 is the bf16 bits in the upper half of a zero fp32: interleave with zeros.
  static void widen8(const bf16* p, v4f* lo, v4f* hi) {
    v8u16 h, z = {};
    std::memcpy(&h, p, sizeof h);
    v8u16 l = __builtin_shufflevector(z, h, 0, 8, 1, 9, 2, 10, 3, 11);
    v8u16 u = __builtin_shufflevector(z, h, 4, 12, 5, 13, 6, 14, 7, 15);
    std::memcpy(lo, &l, sizeof l);
    std::memcpy(hi, &u, sizeof u);
  }
  // lanes l += a[l] * b[l], l = 0..15 (one rounded product, one rounded sum per lane).
  void add_products(const float* a, const bf16* b) {
    v4f b0, b1, b2, b3;
    widen8(b, &b0, &b1);
    widen8(b + 8, &b2, &b3);
    v[0] += load4(a) * b0;
    v[1] += load4(a + 4) * b1;
    v[2] += load4(a + 8) * b2;
    v[3] += load4(a + 12) * b3;
  }
  void add_products(const float* a, const float* b) {
    for (int j = 0; j < 4; ++j) v[j] += load4(a + 4 * j) * load4(b + 4 * j);
  }
  void add(const float* a) {
    for (int j = 0; j < 4; ++j) v[j] += load4(a + 4 * j);
  }
  void store(float* lanes) const { std::memcpy(lanes, v, sizeof v); }
};

// acc[l] += a[k] * b[k] for every k ≡ l (mod 16) in [0, n), in increasing k. Callers that reduce
// several ranges into the same acc continue the lane sequence (n a multiple of 16 except last).
template <typename A, typename B>
inline void accumulate_dot_lanes(float* acc, const A* a, const B* b, int64_t n) {
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) acc[l] += widen(a[k + l]) * widen(b[k + l]);
  }
  for (int l = 0; k + l < n; ++l) acc[l] += widen(a[k + l]) * widen(b[k + l]);
}

// The same, with the full 16-value groups in vector registers (fp32 x bf16 and fp32 x fp32).
template <typename B>
inline float dot_lanes_fast(const float* a, const B* b, int64_t n) {
  LaneAcc acc;
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) acc.add_products(a + k, b + k);
  float lanes[kLanes];
  acc.store(lanes);
  for (int l = 0; k + l < n; ++l) lanes[l] += a[k + l] * widen(b[k + l]);
  return combine_lanes(lanes);
}

// sum_k a[k] * b[k] over [0, n) in the fixed lane order.
inline float dot_lanes(const float* a, const bf16* b, int64_t n) { return dot_lanes_fast(a, b, n); }
inline float dot_lanes(const float* a, const float* b, int64_t n) { return dot_lanes_fast(a, b, n); }
inline float dot_lanes(const bf16* a, const bf16* b, int64_t n) {
  float acc[kLanes] = {};
  accumulate_dot_lanes(acc, a, b, n);
  return combine_lanes(acc);
}

// sum_k a[k]^2 over [0, n) in the fixed lane order (a dot product of a with itself).
inline float sum_squares_lanes(const float* a, int64_t n) { return dot_lanes(a, a, n); }

// sum_k a[k] over [0, n) in the fixed lane order.
inline float sum_lanes(const float* a, int64_t n) {
  LaneAcc acc;
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) acc.add(a + k);
  float lanes[kLanes];
  acc.store(lanes);
  for (int l = 0; k + l < n; ++l) lanes[l] += a[k + l];
  return combine_lanes(lanes);
}

using ::samebits::lane_part_size;  // kernels/plan.h: how split plans cut a row

}  // namespace samebits::cpu
