// The seeded workload generator: from a scenario and its seed, the same schedule every run.
// Target samples (the prompt under test) and background requests form one arrival stream, in a
// seeded order, timed by the scenario's arrival process in simulated engine steps. No two target
// samples arrive at the same step, so each one is served inside a different batch mix. A fraction
// of background prompts begin with a prefix of the target prompt of random length, so prefix-cache
// hits of many lengths happen. All randomness is integer arithmetic on a splitmix64 stream (plus
// one fixed_exp for Poisson), so the schedule is the same on every machine.
#pragma once
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/engine/engine.h"
#include "harness/scenario/scenario.h"
#include "models/tiny_qwen/text_tokenizer.h"

namespace samebits {

struct Arrival {
  int64_t step = 0;  // simulated engine step at which the request is submitted
  int sample = -1;   // target sample index, -1 for background
  RequestSpec spec;
};

struct Workload {
  std::vector<int32_t> target_prompt;  // the scenario's prompt in the model's tokens
  int samples = 0;
  std::vector<Arrival> arrivals;       // sorted by step; request ids 1..N in this order
  int shared_prefix_requests = 0;      // background prompts that begin with a target prefix
};

// Deterministic 64-bit generator (splitmix64) with unbiased integer ranges.
class WorkloadRng {
 public:
  explicit WorkloadRng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  int64_t uniform_int(int64_t lo, int64_t hi);  // inclusive
  double uniform01();                           // [0, 1), 53 bits

 private:
  uint64_t state_;
};

int sample_length(const LengthDistribution& d, WorkloadRng& rng);

// The scenario's target prompt through the model's tokenizer (text, chat messages, or ids as
// given). Errors name the scenario file and the field.
absl::StatusOr<std::vector<int32_t>> encode_target_prompt(const Scenario& scenario, const TextTokenizer& tokenizer);

// `samples` overrides scenario.samples when positive. Background prompts are filler text, one
// single-byte token per byte, after the tokenizer's BOS where it has one. Errors name the field (a
// prompt too long for the vocabulary/context is the runner's business).
absl::StatusOr<Workload> generate_workload(const Scenario& scenario, const TextTokenizer& tokenizer, int samples = 0);

}  // namespace samebits
