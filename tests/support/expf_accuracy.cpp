#include "tests/support/expf_accuracy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/fixed_math.h"

namespace samebits::testing {

void ExpfAccuracy::add(float x, float got) {
  ++checked;
  bool fine;
  if (x != x) {
    fine = float_bits(got) == float_bits(x);
  } else if (x >= 88.72283935546875f) {
    fine = got == INFINITY;
  } else if (x < kExpUnderflow) {
    fine = float_bits(got) == 0u;
  } else {
    const double exact = std::exp(double(x));
    int e;
    std::frexp(exact, &e);  // exact = m * 2^e, m in [0.5, 1): ulp = 2^(e - 24), 2^-149 at the bottom
    const double err = std::fabs(double(got) - exact) / std::ldexp(1.0, std::max(e - 24, -149));
    fine = std::isfinite(got);
    if (exact >= 0x1p-126) {
      if (err > worst_normal_ulp) {
        worst_normal_ulp = err;
        worst_normal_x = x;
      }
    } else {
      worst_subnormal_ulp = std::max(worst_subnormal_ulp, err);
    }
  }
  if (!fine && broken++ == 0) first_broken = float_bits(x);
}

void ExpfAccuracy::merge(const ExpfAccuracy& o) {
  if (o.broken > 0 && broken == 0) first_broken = o.first_broken;
  checked += o.checked;
  broken += o.broken;
  if (o.worst_normal_ulp > worst_normal_ulp) {
    worst_normal_ulp = o.worst_normal_ulp;
    worst_normal_x = o.worst_normal_x;
  }
  worst_subnormal_ulp = std::max(worst_subnormal_ulp, o.worst_subnormal_ulp);
}

std::string ExpfAccuracy::describe() const {
  return absl::StrCat(checked, " inputs: worst ", worst_normal_ulp, " ulp (normal results) at x = ", worst_normal_x,
                      ", worst ", worst_subnormal_ulp, " subnormal ulp, ", broken,
                      " special results wrong (first at bit pattern ", absl::Hex(first_broken), ")");
}

}  // namespace samebits::testing
