// bf16 <-> fp32 on W lanes with GCC vector types (vf: W floats, vi: W int32s), included after a
// target pragma by the CPU kernels' vector bodies. The lane-wise image of kernels/bf16.h: widening
// puts the 16 bits in the upper half of a zero fp32; narrowing gives a quiet NaN with the sign
// kept for a NaN, otherwise rounds to nearest even.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/bf16.h"

namespace samebits::cpu::simd {

template <typename vf, typename vi>
inline vf widen_bf16_lanes(vi bits16) {
  typedef uint32_t vu __attribute__((vector_size(sizeof(vi))));
  return (vf)((vu)bits16 << 16);
}

template <typename vf, typename vi>
inline vi narrow_bf16_lanes(vf f) {
  typedef uint32_t vu __attribute__((vector_size(sizeof(vi))));  // unsigned: wrapping add, logical shift
  const vu u = (vu)f;
  const vi nan = ((u & 0x7f800000u) == 0x7f800000u) & ((u & 0x007fffffu) != 0u);
  const vi rounded = (vi)((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
  const vi quiet = (vi)((u >> 16) | 0x0040u);
  return nan ? quiet : rounded;
}

// W bf16 values from memory, widened.
template <typename vf, typename vi>
inline vf load_bf16_lanes(const bf16* p) {
  typedef uint16_t vh __attribute__((vector_size(sizeof(vi) / 2)));
  vh h;
  std::memcpy(&h, p, sizeof h);
  return widen_bf16_lanes<vf, vi>(__builtin_convertvector(h, vi));
}

// W narrowed values (bf16 bits in each int's low half) to memory.
template <typename vf, typename vi>
inline void store_bf16_lanes(bf16* p, vi bits16) {
  typedef uint16_t vh __attribute__((vector_size(sizeof(vi) / 2)));
  const vh h = __builtin_convertvector(bits16, vh);
  std::memcpy(p, &h, sizeof h);
}

}  // namespace samebits::cpu::simd
