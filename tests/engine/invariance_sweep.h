// The engine invariance sweep (invariance_cases()) as one call on any backend: each target served
// alone is the reference; every case's targets are compared with it bit for bit (tokens and fp32
// logits of every step). Used by the CUDA engine determinism tests (tests/gpu) and the mutation
// suite (tests/mutation); the CPU's own sweep test (test_engine_invariance.cpp) prints per case.
#pragma once
#include <string>

#include "tests/engine/invariance_cases.h"

namespace samebits::testing {

struct SweepReport {
  int cases_selected = 0;  // the cases the options selected
  int cases_run = 0;
  int cases_differing = 0;
  std::string first_differing;  // "<case>: target <id>, <n> steps differ"
  std::string error;            // an engine error ("" if none)
};

struct SweepOptions {
  bool stop_at_first_difference = false;
  bool thread_cases = true;  // the cases that vary only the CPU thread count
  // Only the last (cheapest) case of each kind (chunk cap, budget, random mix, prefix hit,
  // preemption, block size, threads): for compute-sanitizer's racecheck, under which one case
  // takes tens of seconds.
  bool one_case_per_kind = false;
};

SweepReport run_invariance_sweep(const Backend& backend, Mode mode, const SweepOptions& options);

}  // namespace samebits::testing
