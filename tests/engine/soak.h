// The engine soak: a long seeded stream of requests under KV pressure (preemption, prefix hits,
// rejections, EOS, stop sequences, seeded sampling) in invariant mode, streamed through one engine
// without keeping its records, so memory must stay flat. What it checks: every request answered
// exactly once, every rejection is one of the impossible requests and carries its reason, no KV
// block leaked (and the engine's invariants hold every 256 steps), and the observed requests'
// digests (tokens and logits) equal those of the same requests run alone.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "tests/engine/engine_fixture.h"

namespace samebits::testing {

struct SoakFigures {
  int64_t requests = 0, finished = 0, rejected = 0, lost = 0, answered_twice = 0, wrongly_rejected = 0;
  int64_t steps = 0, preemptions = 0, prefix_hit_requests = 0, eos = 0, stop_sequence = 0, sampled = 0;
  int64_t observed = 0, observed_mismatch = 0, leaked_blocks = 0;
  std::map<std::string, int64_t> rejections_by_reason;  // the reason with its numbers blanked
  double rss_warm_mib = 0, rss_end_mib = 0, seconds = 0, cpu_seconds = 0;
  std::string error;  // first engine error or invariant violation
};

// `observe_every`: every n-th request is observed and re-run alone.
SoakFigures run_soak(int64_t num_requests, uint64_t seed, int observe_every);
void expect_soak_clean(const SoakFigures& f);

}  // namespace samebits::testing
