// The mutation suite on the CPU backend (label mutation): every planted variance source must be
// caught by a sweep (engine or op) AND turn the scenario gate red; every miss fails. The controls:
// the real backend passes the same gate and the op sweeps (its engine sweep is EngineInvariance's,
// label determinism).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/engine/schedule_ahead_case.h"
#include "tests/mutation/detection.h"
#include "tests/mutation/op_sweep.h"

namespace samebits::testing {
namespace {

constexpr int kGateThreads = 2;

TEST(MutationSuite, RealCpuBackendPassesTheGate) {
  GateOutcome gate = run_gate(cpu_backend(), kGateThreads);
  EXPECT_EQ(gate.exit_code, 0) << gate.state << ": " << gate.detail;
  EXPECT_EQ(gate.state, "pass") << gate.detail;
}

TEST(MutationSuite, RealCpuBackendPassesTheOpSweeps) {
  EXPECT_EQ(op_sweeps(cpu_backend()), "");
}

// The op sweeps' inverse: each sees the source it is built for (the control above: the real
// backend passes them).
TEST(MutationSuite, EachOpSweepSeesTheSourceItIsBuiltFor) {
  struct Case {
    VarianceSource source;
    std::string (*sweep)(const Backend&);
    const char* name;
  };
  const Case cases[] = {{VarianceSource::kSplitKByM, linear_op_sweep, "linear / split-K by M"},
                        {VarianceSource::kGemmAlgorithmByM, linear_op_sweep, "linear / GEMM algorithm by M"},
                        {VarianceSource::kRmsNormSplitFewRows, rmsnorm_op_sweep, "rmsnorm / split rows"},
                        {VarianceSource::kRngByBatchRow, sample_op_sweep, "sample / RNG by batch row"}};
  for (const Case& c : cases) EXPECT_NE(c.sweep(mutant_backend(cpu_backend(), c.source)), "") << c.name;
}

// Scheduling ahead (on by default) hides no batch variance: one ulp planted into invariant
// mode's large batches still makes requests differ from their runs alone; also on the GPU cases'
// workload under racecheck (tiny-one-layer).
TEST(MutationSuite, SchedulingAheadStillSeesAPlantedBatchVariance) {
  check_planted_variance_seen_ahead("micro", mutant_backend(cpu_backend(), VarianceSource::kOneUlpInLargeBatch));
  check_planted_variance_seen_ahead("tiny-one-layer", mutant_backend(cpu_backend(), VarianceSource::kOneUlpInLargeBatch));
}

// The rule both suites apply: a gate-marginal source needs the op sweep; any other both levels.
TEST(MutationSuite, DetectionMissesNameWhatALevelLacks) {
  const Mutant plain{VarianceSource::kSplitKByM, "plain", "a source", false};
  const Mutant marginal{VarianceSource::kRmsNormSplitFewRows, "marginal", "a source", true};
  Detection d;
  d.engine_caught = d.sweep_caught = true;
  EXPECT_NE(detection_misses(plain, d), "");     // the gate missed it
  EXPECT_NE(detection_misses(marginal, d), "");  // the op sweep missed it
  d.ops_caught = true;
  EXPECT_NE(detection_misses(plain, d), "");
  EXPECT_EQ(detection_misses(marginal, d), "");
  d.gate_caught = true;
  EXPECT_EQ(detection_misses(plain, d), "");
  d.sweep_caught = d.engine_caught = d.ops_caught = false;
  EXPECT_NE(detection_misses(plain, d), "");
}

TEST(MutationSuite, EveryPlantedSourceIsCaughtOnCpu) {
  std::vector<Detection> rows;
  for (const Mutant& m : all_mutants()) {
    rows.push_back(detect(cpu_backend(), m, kGateThreads));
    const Detection& d = rows.back();
    EXPECT_EQ(detection_misses(m, d), "");
  }
  std::printf("%s", detection_table(cpu_backend().id, rows).c_str());
}

}  // namespace
}  // namespace samebits::testing
