// Stress (unit size): 3000 seeded random requests on the micro model, a KV pool small enough to
// force preemption; the engine's invariants are checked after every step (run_workload).
#include <gtest/gtest.h>

#include "tests/engine/stress_workload.h"

namespace samebits::testing {
namespace {

TEST(EngineStress, ThousandsOfRequestsUnderKvPressure) {
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    SCOPED_TRACE(mode_name(mode));
    const int num_blocks = 48;
    std::unique_ptr<Model> m = make_model(engine_test_config("micro"), num_blocks, 4);
    EngineConfig config;
    config.block_size = 4;
    config.num_blocks = num_blocks;
    config.max_tokens_per_step = 48;
    config.max_seqs = 12;
    config.max_chunk = 16;
    config.exec.mode = mode;
    const StressWorkload w = make_stress_workload(mode == Mode::kInvariant ? 1 : 2, 3000, 16, 10);
    expect_stress_outcome(w, run_workload(*m, config, w.arrivals), num_blocks);
  }
}

}  // namespace
}  // namespace samebits::testing
