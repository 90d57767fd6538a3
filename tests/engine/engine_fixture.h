// Shared by the engine tests: tiny models with seeded synthetic weights, and a driver that runs a
// workload (requests arriving at given steps) through an Engine, checking the engine's invariants
// after every step and collecting every observed request's tokens and logits.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/engine/engine.h"

namespace samebits::testing {

// "tiny" (the builtin), "micro" (hidden 64, 2 layers: for workloads of thousands of requests) or
// "tiny-one-layer" (tiny's shapes and kernels, one layer: about a third of tiny's launches per step;
// for the GPU schedule-ahead cases under racecheck, which slows every launch 100-1000x).
ModelConfig engine_test_config(const std::string& name);
// On `backend` (nullptr: the CPU backend).
std::unique_ptr<Model> make_model(const ModelConfig& config, int num_blocks, int block_size, uint64_t seed = 1,
                                  const Backend* backend = nullptr);

struct Arrival {
  int64_t step = 0;  // added before this step runs
  RequestSpec spec;
};

struct Observed {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // one row per generated token
};

struct RunOutcome {
  std::map<uint64_t, RequestResult> results;
  std::map<uint64_t, Observed> observed;
  std::vector<StepRecord> records;
  EngineStats stats;
  int free_blocks_at_end = -1;
  std::string error;  // first engine error or invariant violation, "" if none
};

// Runs until every request finished (at most max_steps steps); replays `forced` when given.
RunOutcome run_workload(Model& model, const EngineConfig& config, const std::vector<Arrival>& arrivals,
                        const std::vector<StepRecord>* forced = nullptr, int64_t max_steps = 1000000);

std::vector<int32_t> random_prompt(uint64_t seed, int length, int vocab = 256);

// Rows whose logits differ bitwise (memcmp) between two observations of one request, plus the
// difference in length; 0 when identical.
int count_differences(const Observed& a, const Observed& b);

}  // namespace samebits::testing
