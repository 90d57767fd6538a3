// The invariance sweep of the engine (docs/DESIGN.md, "The invariance contract"): two observed
// target requests (one greedy with a prompt longer than one attention split, one sampled at
// temperature 1.5 over the whole distribution) served alone, then inside random batches of other
// requests, with their prompts chunked at 1, 7 and 64 tokens or cut by small budgets, after
// prefix-cache hits of several lengths, after preemption and recompute, with other KV block sizes
// and CPU thread counts.
#pragma once
#include <string>
#include <vector>

#include "tests/engine/engine_fixture.h"

namespace samebits::testing {

inline constexpr uint64_t kGreedyTarget = 1000;
inline constexpr uint64_t kSampledTarget = 1001;

struct InvarianceCase {
  std::string name;
  EngineConfig config;  // exec.mode is set by the sweep
  std::vector<Arrival> arrivals;
  bool thread_count_only = false;   // varies only the CPU threads (same bits in both modes by design)
  int expect_greedy_hit = -1;       // prefix-hit tokens the greedy target must get (-1: not checked)
  bool expect_greedy_preempted = false;
};

RequestSpec greedy_target();
RequestSpec sampled_target();
// The reference: each target alone, whole prompt in one step.
std::vector<InvarianceCase> reference_cases();
std::vector<InvarianceCase> invariance_cases();

}  // namespace samebits::testing
