// The check behind OutputRow (attention_kernel.cuh; gpu test GpuAttentionOutput): n operand pairs
// (a, l) from a counter-based hash, each divided by OutputRow and by __fdiv_rn; where OutputRow
// keeps in_range(), the two quotients must have the same bits. The pairs mix the attention outputs'
// range (both exponents in [-60, 60), random mantissas and signs) with the cases a division gets
// wrong first: divisors of all-ones mantissa, exact quotients, operands at the range's edges, and
// arbitrary bit patterns (zeros, denormals, infinities, NaN; OutputRow must leave those to
// __fdiv_rn). The planted form (tests only) drops the correction step (q = r * a alone), which the
// check must see differ. Integer counts by atomic adds: their order changes nothing.
// The second check goes through every divisor of that range (or every stride-th mantissa): its
// refined reciprocal must be __frcp_rn's, RN(1 / l), the premise under which the quotient's
// correction step is exact for every dividend (Markstein; tests/kernels/test_fixed_math.cpp).
#include "absl/strings/str_cat.h"
#include "kernels/cuda/attention_kernel.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/fixed_math.h"

namespace samebits {
namespace {

struct Tally {
  unsigned long long in_range, mismatches;  // (the reciprocal check: divisors checked, mismatches)
  // (a bits << 32 | l bits) of the first mismatch seen (0: none); the reciprocal check: the smallest
  // mismatching l's bits (all ones: none).
  unsigned long long first;
};

// v mixed by splitmix64 (its first output for key v).
__device__ __forceinline__ uint64_t mix64(uint64_t v) { return splitmix64_at(v, 0); }

__device__ void operands(uint64_t seed, uint64_t i, float* a, float* l) {
  const uint64_t x = mix64(seed ^ mix64(i)), y = mix64(x);
  const uint32_t kind = uint32_t(x & 15), ma = uint32_t(y), ml = uint32_t(y >> 32);
  const int ea = int((x >> 8) % 120) - 60, el = int((x >> 16) % 120) - 60;
  const uint32_t sa = uint32_t(x >> 24) & 1u, sl = uint32_t(x >> 25) & 1u;
  switch (kind) {
    case 12:  // divisor mantissa all ones
      *a = make_float(sa, ea, ma);
      *l = make_float(sl, el, 0x7fffffu);
      return;
    case 13: {  // exact quotients: a = l * 2^k * (small integer)
      *l = make_float(sl, el, ml);
      *a = __fmul_rn(*l, make_float(sa, int((x >> 32) % 20) - 10, (ma & 7u) << 20));
      return;
    }
    case 14: {  // at the range's edges: a's exponents -65..-63 and 63..65, l's -61..-59 and 59..61
      const int edge_a = (x >> 40) & 1 ? 64 : -64, edge_l = (x >> 41) & 1 ? 60 : -60;
      *a = make_float(sa, edge_a + int((x >> 42) % 3) - 1, ma);
      *l = make_float(sl, edge_l + int((x >> 44) % 3) - 1, ml);
      return;
    }
    case 15:  // arbitrary bit patterns for either operand
      *a = (x >> 48) & 1 ? __uint_as_float(ma) : make_float(sa, ea, ma);
      *l = (x >> 49) & 1 ? __uint_as_float(ml) : make_float(sl, el, ml);
      return;
    default:
      *a = make_float(sa, ea, ma);
      *l = make_float(sl, el, ml);
  }
}

__global__ void output_row_check_kernel(uint64_t seed, uint64_t n, bool planted, Tally* tally) {
  unsigned long long in_range = 0, mismatches = 0, first = 0;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    float a, l;
    operands(seed, i, &a, &l);
    cuda::OutputRow row(l);
    float q = row.quotient(a, int(i));
    if (planted) q = __fmaf_rn(row.r, a, 0.0f);
    if (!row.in_range()) continue;
    ++in_range;
    if (__float_as_uint(q) != __float_as_uint(__fdiv_rn(a, l))) {
      if (mismatches++ == 0) first = (uint64_t(__float_as_uint(a)) << 32) | __float_as_uint(l);
    }
  }
  atomicAdd(&tally->in_range, in_range);
  if (mismatches != 0) {
    atomicAdd(&tally->mismatches, mismatches);
    atomicCAS(&tally->first, 0ull, first);
  }
}

// Divisor number i of the range: per sign 120 binades (2^-60 .. 2^59) of 2^23 / stride mantissas,
// then 2^60 itself.
__global__ void reciprocal_check_kernel(uint32_t stride, bool planted, Tally* tally) {
  const uint64_t per_binade = (uint64_t(1) << 23) / stride, per_sign = 120 * per_binade + 1;
  unsigned long long checked = 0, mismatches = 0;
  uint32_t first = 0xffffffffu;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < 2 * per_sign;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t j = i % per_sign;
    const uint32_t sign = uint32_t(i / per_sign);
    const float l = j == 120 * per_binade ? make_float(sign, 60, 0)
                                          : make_float(sign, int(j / per_binade) - 60, uint32_t(j % per_binade) * stride);
    const cuda::OutputRow row(l);
    float r = row.r;
    if (planted) asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(l));
    ++checked;
    if (__float_as_uint(r) != __float_as_uint(__frcp_rn(l))) {
      ++mismatches;
      first = min(first, __float_as_uint(l));
    }
  }
  atomicAdd(&tally->in_range, checked);
  if (mismatches != 0) {
    atomicAdd(&tally->mismatches, mismatches);
    atomicMin(&tally->first, (unsigned long long)first);
  }
}

// The tally from `host`, launch() run on it (one kernel named `name`), the tally back into `host`;
// the device buffer freed on every path.
template <typename Launch>
absl::Status run_check(Tally& host, const char* name, Launch launch) {
  Tally* d = nullptr;
  SAMEBITS_CUDA_TRY(cudaMalloc(&d, sizeof(Tally)));
  auto run = [&]() -> absl::Status {
    SAMEBITS_RETURN_IF_ERROR(cuda::blocking_copy(d, &host, sizeof(Tally), cudaMemcpyHostToDevice));
    launch(d);
    SAMEBITS_RETURN_IF_ERROR(cuda::check_launch(name));
    return cuda::blocking_copy(&host, d, sizeof(Tally), cudaMemcpyDeviceToHost);
  };
  const absl::Status st = run();
  cudaFree(d);
  return st;
}

}  // namespace

absl::StatusOr<OutputRowCheck> cuda_output_row_check(uint64_t seed, uint64_t n, bool planted) {
  Tally host{0, 0, 0};
  SAMEBITS_RETURN_IF_ERROR(run_check(host, "output_row_check_kernel", [&](Tally* d) {
    output_row_check_kernel<<<132 * 8, 256>>>(seed, n, planted, d);
  }));
  return OutputRowCheck{uint64_t(host.in_range), uint64_t(host.mismatches), uint32_t(host.first >> 32),
                        uint32_t(host.first)};
}

absl::StatusOr<ReciprocalCheck> cuda_output_reciprocal_check(uint32_t stride, bool planted) {
  if (stride == 0 || ((uint32_t(1) << 23) % stride) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("reciprocal check: stride ", stride, " does not divide 2^23"));
  }
  Tally host{0, 0, ~0ull};
  SAMEBITS_RETURN_IF_ERROR(run_check(host, "reciprocal_check_kernel", [&](Tally* d) {
    reciprocal_check_kernel<<<132 * 8, 256>>>(stride, planted, d);
  }));
  return ReciprocalCheck{uint64_t(host.in_range), uint64_t(host.mismatches),
                         host.mismatches == 0 ? 0u : uint32_t(host.first)};
}

}  // namespace samebits
