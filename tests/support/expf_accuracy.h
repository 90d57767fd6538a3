// fixed_expf's contract checked on given results: against exp in double, |err| < 2 ulp where the
// result is a normal float, within 1 subnormal ulp where it is subnormal (one rounding), exactly
// +inf above ln(FLT_MAX) (every x >= 88.72283935546875, whose exp rounds past FLT_MAX), exactly +0
// below kExpUnderflow, x itself for NaN. Used by the host sweeps and by the device test over all
// 2^32 inputs (whose results are the host's, bit for bit).
#pragma once
#include <cstdint>
#include <string>

namespace samebits::testing {

struct ExpfAccuracy {
  int64_t checked = 0;
  int64_t broken = 0;            // results outside the contract
  uint32_t first_broken = 0;     // its input's bit pattern
  double worst_normal_ulp = 0;   // over normal results
  float worst_normal_x = 0;
  double worst_subnormal_ulp = 0;

  void add(float x, float got);
  void merge(const ExpfAccuracy& other);
  std::string describe() const;
  bool ok() const { return broken == 0 && worst_normal_ulp < 2.0 && worst_subnormal_ulp <= 1.0; }
};

}  // namespace samebits::testing
