// fixed_expf_array: the path chosen by kernels/cpu/isa.h.
#include "kernels/cpu/isa.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/fixed_math.h"

namespace samebits::cpu {

void fixed_expf_array(const float* in, float* out, int64_t n) {
  switch (active_isa()) {
    case Isa::kAvx512: return fixed_expf_array_avx512(in, out, n);
    case Isa::kAvx2: return fixed_expf_array_avx2(in, out, n);
    default:
      for (int64_t i = 0; i < n; ++i) out[i] = fixed_expf(in[i]);
  }
}

}  // namespace samebits::cpu
