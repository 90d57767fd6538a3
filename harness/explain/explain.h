// Why did it fork? For each fork of a mode (and for the mode's first logit divergence) take the
// main sample and the diverging sample, replay the run's recorded schedule with a per-op observer
// on the model (models/tiny_qwen/op_observer.h) that keeps the two requests' rows of every op, and
// find the first (position, layer, op) whose bits differ. Positions, layers and ops are ordered so
// that everything an op reads comes before it: the first difference in that order is the op that
// produced different bits from identical inputs.
#pragma once
#include <vector>

#include "absl/status/statusor.h"
#include "harness/explain/explanation.h"
#include "harness/golden/results.h"
#include "harness/scenario/trace.h"

namespace samebits {

struct ExplainOptions {
  int max_forks = 8;  // forks explained per mode (the most common first)
};

// The pairs to explain in one mode: (main sample, other sample) per fork, then the first logit
// divergence (merged with a fork pair when it is the same sample). The main sample is the
// main-stream sample nearest before the other one, so that the replay can stop early.
std::vector<Explanation> pairs_to_explain(const ModeResult& result, const ExplainOptions& options);

// Replays `run` (one mode of `trace`) on `backend` with the model `model` and fills in the pairs.
absl::StatusOr<ModeExplanation> explain_mode(const Trace& trace, const TraceRun& run, const ModeResult& result,
                                             const ModelSource& model, const Backend& backend,
                                             const ExplainOptions& options);

// The core of explain_mode, for pairs chosen by the caller (mode, main_sample, other_sample,
// first_logit_step and top_step set): fills in the rest of each.
absl::Status explain_pairs(const Trace& trace, const TraceRun& run, const ModelSource& model, const Backend& backend,
                           std::vector<Explanation>* pairs);

// Every mode of `results` that has something to explain, from the trace of the same run.
absl::StatusOr<ExplainReport> explain_run(const Trace& trace, const RunResults& results, const ModelSource& model,
                                          const Backend& backend, const ExplainOptions& options);

// Differences between two outputs of one op, element by element (sizes must match).
ValueDifference compare_bf16(const uint16_t* a, const uint16_t* b, int64_t n);
ValueDifference compare_f32(const float* a, const float* b, int64_t n);
TopTwo top_two(const float* logits, int64_t n);

}  // namespace samebits
