// A seeded random workload for stress tests: thousands of small requests, half sharing one of a
// few prefixes, some sampled, some with stop sequences, about 1% impossible (rejected), arriving a
// few per step; and the checks every stress run must pass.
#pragma once
#include <set>

#include "tests/engine/engine_fixture.h"

namespace samebits::testing {

struct StressWorkload {
  std::vector<Arrival> arrivals;
  std::set<uint64_t> impossible;  // ids that must be rejected
};

StressWorkload make_stress_workload(uint64_t seed, int num_requests, int max_prompt, int max_new);

// Every request finished or was rejected with a reason (exactly the impossible ones), every block
// came back, preemption happened and prefix-cache hits were counted.
void expect_stress_outcome(const StressWorkload& w, const RunOutcome& o, int num_blocks);

}  // namespace samebits::testing
