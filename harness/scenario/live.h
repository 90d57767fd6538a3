// Live mode and replay. In live mode several client threads submit the workload's requests with
// real timing (a simulated step lasts live.step_us) into a thread-safe queue, while the engine
// thread batches whatever has arrived before each step. The schedule actually used (the engine
// step at which each request entered, every step's record) is kept in the ModeRun, so that it can
// be written as a trace. Replay feeds the requests at the recorded engine steps and forces each
// recorded step (Engine::step(&record)), which reproduces the run bit for bit.
#pragma once
#include "absl/status/statusor.h"
#include "harness/scenario/runner.h"
#include "harness/scenario/trace.h"

namespace samebits {

absl::StatusOr<ModeRun> run_live(const RunSetup& setup, const Workload& workload, Mode mode);

// Optional hooks into a replay (explain uses them to watch a few requests' rows op by op).
struct ReplayHooks {
  OpObserver op_observer;                                         // set on the model
  std::function<void(size_t step, const StepRecord&)> before_step;  // before recorded step `step` runs
  std::function<bool(size_t step)> stop_after;  // true: end the replay after that step; the ModeRun
                                                // then holds only what finished so far, unchecked
};

// Replays one run of the trace. `model` must have the trace's weights digest.
absl::StatusOr<ModeRun> replay_run(const Trace& trace, const TraceRun& run, const ModelSource& model,
                                   const Backend& backend, const ReplayHooks* hooks = nullptr);

}  // namespace samebits
