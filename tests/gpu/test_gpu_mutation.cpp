// The mutation suite on CUDA (label gpu; tests/mutation holds the mutants and the CPU suite): every
// planted variance source, built from the CUDA backend's own ops, must be caught by a sweep (engine or op)
// AND turn the scenario gate (golden/mutation/<cuda id>.json) red; the real CUDA backend passes
// the same gate. Prints the CUDA detection table.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/gpu/gpu_test_support.h"
#include "tests/mutation/detection.h"
#include "tests/mutation/op_sweep.h"

namespace samebits::testing {
namespace {

constexpr int kGateThreads = 2;

TEST(GpuMutationSuite, RealCudaBackendPassesTheGate) {
  SAMEBITS_REQUIRE_GPU();
  GateOutcome gate = run_gate(*gpu, kGateThreads);
  EXPECT_EQ(gate.exit_code, 0) << gate.state << ": " << gate.detail;
  EXPECT_EQ(gate.state, "pass") << gate.detail;
}

TEST(GpuMutationSuite, RealCudaBackendPassesTheOpSweeps) {
  SAMEBITS_REQUIRE_GPU();
  EXPECT_EQ(op_sweeps(*gpu), "");
}

TEST(GpuMutationSuite, EveryPlantedSourceIsCaughtOnCuda) {
  SAMEBITS_REQUIRE_GPU();
  std::vector<Detection> rows;
  for (const Mutant& m : all_mutants()) {
    rows.push_back(detect(*gpu, m, kGateThreads));
    const Detection& d = rows.back();
    EXPECT_EQ(detection_misses(m, d), "");
  }
  std::printf("%s", detection_table(gpu->id, rows).c_str());
}

}  // namespace
}  // namespace samebits::testing
