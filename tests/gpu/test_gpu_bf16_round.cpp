// The device's cvt rounding to bf16 (kernels/cuda/bf16_round.cuh, used by rmsnorm and qkv_prep)
// against kernels/bf16.h's to_bf16, bit for bit over every float (every 4099th under the
// sanitizers); the inverse: plain truncation in its place must be seen to differ.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/support/test_support.h"

#if defined(SAMEBITS_HAVE_CUDA)
#include "kernels/cuda/cuda_ops.h"
#endif

namespace samebits::testing {
namespace {

TEST(GpuBf16Round, CvtEqualsToBf16ForEveryFloat) {
  SAMEBITS_REQUIRE_GPU();
#if defined(SAMEBITS_HAVE_CUDA)
  const uint64_t step = sanitizer_shapes() ? 4099 : 1;
  absl::StatusOr<Bf16RoundCheck> same = cuda_bf16_round_check(step, /*planted_truncation=*/false);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->mismatches, 0u) << "first at bits 0x" << std::hex << same->first;
  absl::StatusOr<Bf16RoundCheck> planted = cuda_bf16_round_check(step, /*planted_truncation=*/true);
  ASSERT_TRUE(planted.ok()) << planted.status();
  EXPECT_GT(planted->mismatches, 0u) << "truncation in place of rounding went unseen";
#endif
}

}  // namespace
}  // namespace samebits::testing
