// The mutation suite on the CPU backend (label mutation): every planted variance source must be
// caught by the engine sweep AND turn the scenario gate red; every miss fails. The control: the
// real backend passes the same gate (its sweep is EngineInvariance's, label determinism).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/mutation/detection.h"

namespace samebits::testing {
namespace {

constexpr int kGateThreads = 2;

TEST(MutationSuite, RealCpuBackendPassesTheGate) {
  GateOutcome gate = run_gate(cpu_backend(), kGateThreads);
  EXPECT_EQ(gate.exit_code, 0) << gate.state << ": " << gate.detail;
  EXPECT_EQ(gate.state, "pass") << gate.detail;
}

TEST(MutationSuite, EveryPlantedSourceIsCaughtOnCpu) {
  std::vector<Detection> rows;
  for (const Mutant& m : all_mutants()) {
    rows.push_back(detect(cpu_backend(), m, kGateThreads));
    const Detection& d = rows.back();
    EXPECT_TRUE(d.sweep_caught) << m.name << " (" << m.description << ") missed by the sweep: " << d.sweep_detail;
    EXPECT_TRUE(d.gate_caught) << m.name << " (" << m.description << ") missed by the gate: " << d.gate_detail;
  }
  std::printf("%s", detection_table(cpu_backend().id, rows).c_str());
}

}  // namespace
}  // namespace samebits::testing
