// The wgmma prefill kernel's output division (OutputRow, kernels/cuda/attention_kernel.cuh: the
// divisor's reciprocal once per row) against __fdiv_rn, the IEEE division every other attention
// kernel and the CPU backend use: the same bits on 2^30 operand pairs (2^22 under the sanitizers)
// wherever OutputRow keeps a pair on its own path, and most attention-like pairs kept there. The
// inverse: without its correction step the quotient is seen to differ. And the premise that makes
// the quotient exact for every dividend: the refined reciprocal is RN(1 / l) for every divisor of
// the range, all 2 x (120 x 2^23 + 1) of them (every 64th mantissa under the sanitizers); its
// inverse: rcp.approx's own value is not.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/gpu/gpu_test_support.h"
#include "tests/support/test_support.h"

#if defined(SAMEBITS_HAVE_CUDA)
#include "kernels/cuda/cuda_ops.h"
#endif

namespace samebits::testing {
namespace {

TEST(GpuAttentionOutput, RowQuotientsEqualIeeeDivision) {
  SAMEBITS_REQUIRE_GPU();
#if defined(SAMEBITS_HAVE_CUDA)
  const uint64_t n = sanitizer_shapes() ? uint64_t(1) << 22 : uint64_t(1) << 30;
  absl::StatusOr<OutputRowCheck> same = cuda_output_row_check(/*seed=*/2026, n, /*planted=*/false);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->mismatches, 0u) << "first at a = 0x" << std::hex << same->first_a << ", l = 0x" << same->first_l;
  // 12 of every 16 pairs have both operands in range, and some of the edge and exact cases do.
  EXPECT_GT(same->in_range, n / 16 * 12) << "too few pairs on OutputRow's own path";
  EXPECT_LT(same->in_range, n) << "no pair left to __fdiv_rn";
  std::cout << "[ info ] OutputRow: " << same->in_range << " of " << n << " pairs on its own path, "
            << same->mismatches << " differ from __fdiv_rn\n";
  absl::StatusOr<OutputRowCheck> planted = cuda_output_row_check(/*seed=*/2026, n, /*planted=*/true);
  ASSERT_TRUE(planted.ok()) << planted.status();
  EXPECT_GT(planted->mismatches, 0u) << "a quotient without its correction step went unseen";
#endif
}

TEST(GpuAttentionOutput, RowReciprocalIsCorrectlyRoundedForEveryDivisor) {
  SAMEBITS_REQUIRE_GPU();
#if defined(SAMEBITS_HAVE_CUDA)
  const uint32_t stride = sanitizer_shapes() ? 64 : 1;
  const uint64_t divisors = 2 * (120 * ((uint64_t(1) << 23) / stride) + 1);
  absl::StatusOr<ReciprocalCheck> refined = cuda_output_reciprocal_check(stride, /*planted=*/false);
  ASSERT_TRUE(refined.ok()) << refined.status();
  EXPECT_EQ(refined->checked, divisors);
  EXPECT_EQ(refined->mismatches, 0u) << "first at l = 0x" << std::hex << refined->first_l;
  std::cout << "[ info ] OutputRow's reciprocal: " << refined->mismatches << " of " << refined->checked
            << " divisors differ from __frcp_rn\n";
  absl::StatusOr<ReciprocalCheck> planted = cuda_output_reciprocal_check(stride, /*planted=*/true);
  ASSERT_TRUE(planted.ok()) << planted.status();
  EXPECT_EQ(planted->checked, divisors);
  EXPECT_GT(planted->mismatches, 0u) << "rcp.approx unrefined went unseen";
  std::cout << "[ info ] rcp.approx unrefined: " << planted->mismatches << " differ\n";
  EXPECT_FALSE(cuda_output_reciprocal_check(3, false).ok()) << "a stride that does not divide 2^23";
#endif
}

}  // namespace
}  // namespace samebits::testing
