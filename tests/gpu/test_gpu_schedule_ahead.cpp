// Scheduling ahead on CUDA (label gpu), where step n + 1 is issued while step n computes: the
// checks of tests/engine/schedule_ahead_case.h on the tiny model (invariant mode: the same bits
// with rows discarded; default mode: the same schedule step for step; host time and waits per
// step printed with and without), and the inverse with one ulp planted into invariant mode's
// large batches.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/engine/schedule_ahead_case.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/mutation/mutants.h"

namespace samebits::testing {
namespace {

TEST(GpuScheduleAhead, InvariantModeGivesTheSameBitsWhileDiscardingRows) {
  SAMEBITS_REQUIRE_GPU();
  check_invariant_mode_ahead("tiny", gpu);
}

TEST(GpuScheduleAhead, DefaultModeKeepsTheScheduleStepForStep) {
  SAMEBITS_REQUIRE_GPU();
  check_default_mode_ahead("tiny", gpu);
}

TEST(GpuScheduleAhead, StillSeesAPlantedBatchVariance) {
  SAMEBITS_REQUIRE_GPU();
  check_planted_variance_seen_ahead("tiny", mutant_backend(*gpu, VarianceSource::kOneUlpInLargeBatch));
}

}  // namespace
}  // namespace samebits::testing
