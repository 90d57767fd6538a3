// Scheduling ahead on CUDA (label gpu), where step n + 1 is issued while step n computes: the
// checks of tests/engine/schedule_ahead_case.h on the tiny model (invariant mode: the same bits
// with rows discarded; default mode: the same schedule step for step; host time and waits per
// step printed with and without), and the inverse with one ulp planted into invariant mode's
// large batches. Under racecheck (sanitizer_shapes()) on tiny-one-layer (tiny's kernels with a third
// of its launches, which the tool slows 100-1000x; the CPU tests check that its workload keeps every
// event asserted here) and on engine_backend (gpu_test_support.h says why).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/engine/schedule_ahead_case.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/mutation/mutants.h"

namespace samebits::testing {
namespace {

// The model of these cases: tiny, or under racecheck tiny-one-layer.
std::string ahead_model() { return sanitizer_shapes() ? "tiny-one-layer" : "tiny"; }

TEST(GpuScheduleAhead, InvariantModeGivesTheSameBitsWhileDiscardingRows) {
  SAMEBITS_REQUIRE_GPU();
  check_invariant_mode_ahead(ahead_model(), &engine_backend(*gpu));
}

TEST(GpuScheduleAhead, DefaultModeKeepsTheScheduleStepForStep) {
  SAMEBITS_REQUIRE_GPU();
  check_default_mode_ahead(ahead_model(), &engine_backend(*gpu));
}

TEST(GpuScheduleAhead, StillSeesAPlantedBatchVariance) {
  SAMEBITS_REQUIRE_GPU();
  check_planted_variance_seen_ahead(ahead_model(), mutant_backend(*gpu, VarianceSource::kOneUlpInLargeBatch));
}

}  // namespace
}  // namespace samebits::testing
