// Scheduling ahead on CUDA (label gpu), where step n + 1 is issued while step n computes: the
// checks of tests/engine/schedule_ahead_case.h on the tiny model (invariant mode: the same bits
// with rows discarded; default mode: the same schedule step for step; host time and waits per
// step printed with and without), and the inverse with one ulp planted into invariant mode's
// large batches. Under racecheck (sanitizer_shapes()) without graphs (engine_graphs() says why) and
// on tiny-one-layer: tiny's kernels with a third of its launches, which racecheck slows most. That
// workload keeps every event the checks assert (the CPU tests run it too).
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
  check_invariant_mode_ahead(ahead_model(), gpu, engine_graphs());
}

TEST(GpuScheduleAhead, DefaultModeKeepsTheScheduleStepForStep) {
  SAMEBITS_REQUIRE_GPU();
  check_default_mode_ahead(ahead_model(), gpu, engine_graphs());
}

TEST(GpuScheduleAhead, StillSeesAPlantedBatchVariance) {
  SAMEBITS_REQUIRE_GPU();
  check_planted_variance_seen_ahead(ahead_model(), mutant_backend(*gpu, VarianceSource::kOneUlpInLargeBatch),
                                    engine_graphs());
}

}  // namespace
}  // namespace samebits::testing
