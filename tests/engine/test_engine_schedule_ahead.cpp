// Scheduling ahead (EngineConfig::schedule_ahead) on the CPU backend: the cases of
// tests/engine/schedule_ahead_case.h. The CPU backend is synchronous, so nothing overlaps here,
// but every piece of the path runs: placeholders, the device-side feed of sampled tokens through
// the embedding op, speculative rows and their discarding, the default-mode fallback. The GPU
// tests (GpuScheduleAhead) run the same checks where the steps do overlap; the inverse (a planted
// batch-variant kernel still seen with scheduling ahead) is in the mutation suite.
#include <gtest/gtest.h>

#include "tests/engine/schedule_ahead_case.h"

namespace samebits::testing {
namespace {

TEST(EngineScheduleAhead, InvariantModeGivesTheSameBitsWhileDiscardingRows) { check_invariant_mode_ahead("micro", nullptr); }

TEST(EngineScheduleAhead, DefaultModeKeepsTheScheduleStepForStep) { check_default_mode_ahead("micro", nullptr); }

}  // namespace
}  // namespace samebits::testing
