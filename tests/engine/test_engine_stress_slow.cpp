// Stress (label slow): 5000 seeded random requests on the tiny model with longer prompts and
// outputs, in a KV pool that forces preemption; invariants checked after every step.
#include <gtest/gtest.h>

#include "tests/engine/stress_workload.h"

namespace samebits::testing {
namespace {

TEST(EngineStressSlow, FiveThousandRequestsOnTheTinyModel) {
  const int num_blocks = 96;
  std::unique_ptr<Model> m = make_model(engine_test_config("tiny"), num_blocks, 8);
  EngineConfig config;
  config.block_size = 8;
  config.num_blocks = num_blocks;
  config.max_tokens_per_step = 128;
  config.max_seqs = 32;
  config.max_chunk = 32;
  const StressWorkload w = make_stress_workload(3, 5000, 48, 24);
  expect_stress_outcome(w, run_workload(*m, config, w.arrivals), num_blocks);
}

}  // namespace
}  // namespace samebits::testing
