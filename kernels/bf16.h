// bf16 storage type and its two conversions.
// bf16 is the top half of an IEEE fp32. Widening is exact (a shift); narrowing rounds to nearest,
// ties to even, and keeps NaN a (quiet) NaN. Both are plain integer code, usable on host and device,
// so every backend rounds identically.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define SAMEBITS_HD __host__ __device__ __forceinline__
#else
#define SAMEBITS_HD inline
#endif

namespace samebits {

struct bf16 {
  uint16_t bits;
};
static_assert(sizeof(bf16) == 2);

SAMEBITS_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

SAMEBITS_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

SAMEBITS_HD float to_float(bf16 h) { return bits_float(uint32_t(h.bits) << 16); }

SAMEBITS_HD bf16 to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return bf16{uint16_t((u >> 16) | 0x0040u)};  // quiet NaN, sign kept
  }
  uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return bf16{uint16_t((u + rounding_bias) >> 16)};
}

// Round an fp32 value to the nearest bf16 and widen it back (the value an op stores).
SAMEBITS_HD float round_bf16(float f) { return to_float(to_bf16(f)); }

}  // namespace samebits
