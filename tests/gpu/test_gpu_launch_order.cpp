// Programmatic dependent launch (kernels/cuda/cuda_common.h): every step kernel may be launched
// before the kernel ahead of it has finished, and its wait is all that orders its reads after that
// kernel's writes. A reader launched that way behind a writer that releases it at once must see
// every word written; the inverse: the same reader without its wait must be seen reading words not
// yet written (which also shows that the launches do overlap, i.e. that the wait is needed).
#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_support.h"
#include "tests/support/test_support.h"

#if defined(SAMEBITS_HAVE_CUDA)
#include "kernels/cuda/cuda_ops.h"
#endif

namespace samebits::testing {
namespace {

TEST(GpuLaunchOrder, ReaderThatWaitsSeesEveryWordAndOneThatDoesNotIsSeenEarly) {
  SAMEBITS_REQUIRE_GPU();
#if defined(SAMEBITS_HAVE_CUDA)
  absl::StatusOr<LaunchOrderCheck> waits = cuda_launch_order_check(/*planted_no_wait=*/false);
  ASSERT_TRUE(waits.ok()) << waits.status();
  EXPECT_EQ(waits->not_yet_written, 0) << "of " << waits->words << " words";
  EXPECT_FALSE(waits->read_before_written);
  absl::StatusOr<LaunchOrderCheck> planted = cuda_launch_order_check(/*planted_no_wait=*/true);
  ASSERT_TRUE(planted.ok()) << planted.status();
  if (sanitizer_shapes() && !planted->read_before_written) {
    GTEST_SKIP() << "the sanitizer ran the two kernels one after the other: no overlap to see";
  }
  EXPECT_TRUE(planted->read_before_written) << "the reader did not start before the writer's words: launches do not overlap";
  EXPECT_EQ(planted->not_yet_written, planted->words) << "a reader without the wait went unseen";
#endif
}

}  // namespace
}  // namespace samebits::testing
