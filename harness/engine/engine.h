// The serving engine: continuous batching under a token budget, chunked prefill, a prefix cache
// over paged KV blocks, preemption by recompute, and a seeded sampler per request. One step() is
// one flattened batch through the model. Every step is recorded (StepRecord) so that a schedule
// can be replayed exactly.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/op_timer.h"
#include "models/tiny_qwen/model.h"

namespace samebits {

struct SamplingParams {
  float temperature = 0.f;  // 0 = greedy
  int top_k = 0;            // 0 = off
  float top_p = 1.f;        // 1 = off
  uint64_t seed = 0;        // sampling draws are keyed by (seed, generated-token index)
};
// The ranges that scenario files and traces accept (a sampler's inputs stay finite).
inline constexpr float kMaxTemperature = 100.f;
inline constexpr int kMaxTopK = 1 << 20;
inline constexpr float kMinTopP = 1e-6f;

struct RequestSpec {
  uint64_t id = 0;
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int max_new_tokens = 16;
  bool stop_at_eos = true;
  std::vector<std::vector<int32_t>> stop_sequences;
  bool observe = false;  // report every generated token's logits to the StepObserver
};

enum class FinishReason { kRunning, kMaxTokens, kEos, kStopSequence, kRejected, kCancelled };
const char* finish_reason_name(FinishReason r);

struct RequestResult {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // generated tokens, the final EOS or stop sequence included
  FinishReason reason = FinishReason::kRunning;
  std::string reject_reason;    // set when reason == kRejected
  int preemptions = 0;
  int prefix_hit_tokens = 0;    // tokens served from the prefix cache at (last) admission
};

struct EngineConfig {
  int block_size = 16;
  int num_blocks = 1024;
  int max_tokens_per_step = 256;  // token budget of one step
  int max_seqs = 64;              // running sequences at most
  int max_chunk = 0;              // prefill chunk cap; 0 = whatever the budget leaves
  bool prefix_cache = true;
  ExecContext exec;
  bool profile = false;  // time every op on the backend's clock (EngineStats::op_times)
  bool graphs = true;    // decode steps replayed from recorded graphs where possible (Model::set_graphs)
  // The step's sample-independent host work runs while the device computes it (same schedule,
  // same bits: only where the host does it changes); false runs it before the step is enqueued.
  bool overlap = true;
  // With overlap: step n + 1 is scheduled and enqueued while the device computes step n, its
  // decode rows fed with step n's tokens on the device, and step n's tokens booked after that
  // (harness/engine/engine.cpp says how each mode keeps its bits). Off under profile.
  bool schedule_ahead = true;
};
// Errors name the field and the value ("engine.block_size: 0 is not a positive integer").
absl::Status validate_engine_config(const EngineConfig& config, const ModelConfig& model);

// What one step did, enough to replay it.
struct StepRecord {
  struct Entry {
    uint64_t request_id = 0;
    int32_t start_position = 0;  // first position computed in this step
    int32_t num_tokens = 0;
    bool samples = false;        // this entry produced a token
    std::vector<int32_t> blocks; // the request's block table after the step
  };
  int64_t index = 0;
  std::vector<Entry> entries;
  std::vector<uint64_t> preempted;  // preempted before this step ran
  std::vector<uint64_t> admitted;   // newly admitted (or re-admitted) in this step
};

// Called for every generated token of a request with observe = true, in step order (within a step
// in batch row order), before the request's finish is booked; token_index counts the request's
// generated tokens from 0 and never repeats, preemption or not. With schedule_ahead a step's tokens
// are booked (observed, finished, in take_finished) during the next call of step().
using StepObserver = std::function<void(uint64_t request_id, int token_index, int32_t token,
                                        std::span<const float> logits)>;

struct EngineStats {
  int64_t steps = 0;
  int64_t tokens_computed = 0;     // prefill + decode tokens through the model
  int64_t tokens_generated = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_hit_requests = 0;
  int64_t preemptions = 0;
  int64_t rejected = 0;
  // Where the time of step() went. step_seconds: wall clock inside step() (scheduling, the model,
  // sampling, booking); host_wait_seconds: the part spent waiting for the device, at host_waits
  // points; the rest is host time. op_times: per op kind, with EngineConfig::profile only.
  double step_seconds = 0;
  double host_wait_seconds = 0;
  int64_t host_waits = 0;
  // Host time of steps spent before the step's first op was issued and after its results arrived:
  // the device has none of the step's work then (it may still run the previous step's tail).
  double host_idle_device_seconds = 0;
  // Steps whose host work between enqueueing and waiting (the step's record, the prefix cache's
  // registration of its blocks) finished while the device was still computing the step
  // (Backend::busy; 0 on a synchronous backend).
  int64_t overlapped_steps = 0;
  // Steps enqueued while the step before them was still in flight (EngineConfig::schedule_ahead),
  // and rows of such steps discarded because their request had finished in the step before
  // (invariant mode only).
  int64_t scheduled_ahead_steps = 0;
  int64_t discarded_rows = 0;
  // Host time of steps by phase: scheduling and building the batch; issuing it
  // (Model::forward_sample_begin, including any time a launch or copy blocks behind the device);
  // booking the sampled tokens after their wait. The rest of the host time: records, the prefix
  // cache, scheduling ahead's bookkeeping.
  double schedule_seconds = 0;
  double issue_seconds = 0;
  double book_seconds = 0;
  OpTimes op_times;
  int64_t graph_replays = 0;   // steps replayed from a recorded graph
  int64_t graph_captures = 0;  // graphs recorded

};

class Engine {
 public:
  // The model's KV cache must have config.block_size and at least config.num_blocks blocks. The
  // engine owns that cache while it lives: one engine at a time per model.
  static absl::StatusOr<std::unique_ptr<Engine>> create(Model& model, const EngineConfig& config);
  ~Engine();

  // Queues a request. A request that can never run (prompt + max_new_tokens beyond the model's
  // context, or more blocks than the cache has) finishes at once as kRejected with the reason.
  void add_request(RequestSpec spec);
  bool has_unfinished() const;
  // Finishes a queued or running request at once as kCancelled (its tokens so far in the result)
  // and frees its KV blocks; call between steps. False when no such request is unfinished.
  bool cancel(uint64_t request_id);
  // Schedules and runs one step. With schedule_ahead the step may be left computing when this
  // returns, its tokens booked by the next call (has_unfinished() stays true meanwhile; cancel()
  // books them first). With `forced`, runs exactly that schedule (replay) instead: the
  // same requests must have been added before the same steps; a record that does not fit the
  // engine's state (unknown request, position, busy block, missing prefix hit) is an error naming
  // the step and request, after which the engine should be discarded.
  absl::StatusOr<StepRecord> step(const StepRecord* forced = nullptr);
  // Results of requests finished since the last call.
  std::vector<RequestResult> take_finished();

  void set_observer(StepObserver observer);
  const EngineStats& stats() const;
  // Internal consistency (block reference counts, free list) for tests; empty when consistent.
  std::string check_invariants() const;
  int free_blocks() const;
  int num_waiting() const;  // queued, including preempted requests waiting for recompute
  int num_running() const;

 private:
  Engine();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace samebits
