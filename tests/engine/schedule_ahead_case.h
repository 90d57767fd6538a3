// The workload that scheduling ahead (EngineConfig::schedule_ahead) is tested on, by the CPU
// engine tests and the GPU tests alike: requests that end by EOS or by a stop sequence at tokens
// only sampling reveals, others by their count; prompts sharing a two-block prefix (prefix hits),
// long prompts cut into chunks, a KV cache small enough to preempt, arrivals spread over steps.
#pragma once
#include <memory>
#include <vector>

#include "harness/engine/engine.h"
#include "tests/engine/engine_fixture.h"

namespace samebits::testing {

struct AheadCase {
  std::unique_ptr<Model> model;  // its EOS: a token that the requests generate mid-flight
  std::vector<Arrival> arrivals;
  EngineConfig engine;
};

// On `backend` (nullptr: the CPU backend), with the model config `name` (engine_test_config).
// The EOS token and the stop sequences are picked from a first run of the same requests.
AheadCase make_ahead_case(const std::string& name, Mode mode, const Backend* backend = nullptr);

struct AheadRuns {
  RunOutcome serial;  // schedule_ahead off
  RunOutcome ahead;   // on
};
AheadRuns run_with_and_without_ahead(AheadCase& c);

// Requests of `batched` (a run of c's workload) whose observed tokens or logits differ from the
// same request served alone, scheduling ahead on.
int requests_differing_from_alone(AheadCase& c, const RunOutcome& batched);

// The checks, shared by the CPU engine tests and the GPU tests (gtest assertions inside).
// Invariant mode: with and without scheduling ahead every token and logit is the same and each
// request's bits equal its run alone, while rows were discarded, requests ended by EOS and stop
// sequences mid-flight, and the runs had chunked prefill, prefix hits and preemption.
void check_invariant_mode_ahead(const std::string& model, const Backend* backend);
// Default mode: the schedule is the same step for step (records, blocks), the bits too, no row
// discarded, and some steps (not all: rows that may stop on a sampled value) were scheduled ahead.
void check_default_mode_ahead(const std::string& model, const Backend* backend);

// The inverse, on a backend that plants a batch variance into invariant mode (tests/mutation):
// scheduling ahead on, some request's bits differ from its run alone.
void check_planted_variance_seen_ahead(const std::string& model, const Backend& planted);

// Requests that ended by EOS / by a stop sequence in `o`.
int finished_by(const RunOutcome& o, FinishReason reason);
// Record entries that computed a chunk of a prompt without sampling (chunked prefill).
int unsampled_chunks(const RunOutcome& o);

}  // namespace samebits::testing
