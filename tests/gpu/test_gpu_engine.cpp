// The engine on CUDA (label gpu): the CPU suite's engine invariance cases (batches, chunked prefill,
// prefix hits, preemption, KV block sizes, thread counts) served by the CUDA backend. Invariant
// mode: every target's tokens and fp32 logits bitwise equal to the target served alone. The
// inverse: default mode (cuBLASLt, split rows, split-KV count) must differ somewhere in the same sweep.
// Under racecheck (sanitizer_shapes()) both run one case of each kind, default mode only up to its first
// differing case, on engine_backend (gpu_test_support.h says why).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/engine/invariance_sweep.h"
#include "tests/gpu/gpu_test_support.h"

namespace samebits::testing {
namespace {

TEST(GpuEngine, InvariantModeIsBitwiseIdenticalAcrossTheSweep) {
  SAMEBITS_REQUIRE_GPU();
  SweepOptions options;
  options.one_case_per_kind = sanitizer_shapes();  // racecheck: one case of each kind
  SweepReport r = run_invariance_sweep(engine_backend(*gpu), Mode::kInvariant, options);
  std::printf("[cuda invariant] %d of %d cases differ from the targets served alone%s%s\n", r.cases_differing,
              r.cases_run, r.first_differing.empty() ? "" : "; first: ", r.first_differing.c_str());
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.cases_run, r.cases_selected);
  if (!options.one_case_per_kind) {
    EXPECT_EQ(r.cases_run, int(invariance_cases().size()));
  }
  EXPECT_EQ(r.cases_differing, 0) << r.first_differing;
}

TEST(GpuEngine, DefaultModeDiffersSomewhereInTheSameSweep) {
  SAMEBITS_REQUIRE_GPU();
  SweepOptions options;
  options.thread_cases = false;  // the thread count is not a CUDA variable
  options.one_case_per_kind = sanitizer_shapes();
  // Racecheck: the assertion needs one differing case, and default-mode linear runs cuBLASLt's
  // kernels, which racecheck slows most; the full run still reports the count over the sweep.
  options.stop_at_first_difference = sanitizer_shapes();
  SweepReport r = run_invariance_sweep(engine_backend(*gpu), Mode::kDefault, options);
  std::printf("[cuda default] %d of %d cases differ from the targets served alone%s%s\n", r.cases_differing,
              r.cases_run, r.first_differing.empty() ? "" : "; first: ", r.first_differing.c_str());
  ASSERT_EQ(r.error, "");
  EXPECT_GT(r.cases_differing, 0);
}

}  // namespace
}  // namespace samebits::testing
