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

// The GPU cases' workload under racecheck (tests/gpu/test_gpu_schedule_ahead.cpp): on one layer of
// tiny it still discards rows, ends requests by EOS and by stop sequences, preempts, hits the prefix
// cache and chunks prompts, in both modes.
TEST(EngineScheduleAhead, TheGpuSanitizerWorkloadKeepsEveryEvent) {
  check_invariant_mode_ahead("tiny-one-layer", nullptr);
  check_default_mode_ahead("tiny-one-layer", nullptr);
}

}  // namespace
}  // namespace samebits::testing
