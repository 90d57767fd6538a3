// The engine behind `samebits serve`: one engine thread runs continuous batching over whatever the
// HTTP handlers have submitted, so concurrent clients make the batch mixes. Each submitted request
// becomes a Job with n choices (one engine request each); the engine thread appends every
// generated token (id, logprob, top alternatives, samebits step digest over token id + fp32
// logits) to its choice and wakes the handler waiting on the job. Cancellation (client gone,
// time limit) frees the request's KV blocks between steps. stop() drains: every job in flight
// finishes before the thread ends.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/engine/engine.h"
#include "harness/serve/openai_request.h"
#include "models/tiny_qwen/model_source.h"

namespace samebits::serve {

struct TokenOut {
  int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // most likely first, ties by lower id
  uint64_t step_digest = 0;                    // step_digest(id, logits)
};

struct ChoiceState {
  std::vector<TokenOut> tokens;
  bool done = false;
  FinishReason reason = FinishReason::kRunning;
  uint64_t digest = 0;  // chain over step digests
};

struct Job {
  GenerationRequest request;
  std::string id;  // "cmpl-N" / "chatcmpl-N"
  int64_t created = 0;
  std::chrono::steady_clock::time_point deadline;
  std::vector<uint64_t> engine_ids;  // by choice

  // Guarded by mu; cv is notified on every new token and when done.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ChoiceState> choices;
  bool done = false;
  bool timed_out = false;
  std::string error;  // set when the engine rejected a choice
  int choices_left = 0;
};

struct ServiceLimits {
  int max_queued_sequences = 256;  // choices waiting or running; more -> 429
  std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
};

struct Health {
  int kv_blocks_total = 0, kv_blocks_free = 0;
  int running = 0, waiting = 0, in_flight = 0;
  int64_t jobs_finished = 0, jobs_cancelled = 0, jobs_timed_out = 0;
  int64_t engine_steps = 0, tokens_generated = 0;
};

class EngineService {
 public:
  static absl::StatusOr<std::unique_ptr<EngineService>> start(const ModelSource& model, const Backend& backend,
                                                             const EngineConfig& config, const ServiceLimits& limits);
  ~EngineService();

  // Queues the request's n choices; nullptr with a 429 error when the queue is full, or a 503
  // when the service is stopping.
  std::shared_ptr<Job> submit(const GenerationRequest& request, ApiError* error);
  // Asks the engine thread to cancel every unfinished choice of the job (idempotent).
  void cancel(const std::shared_ptr<Job>& job);
  Health health() const;
  // Finishes every job in flight, then ends the engine thread. Submissions after it get 503.
  void stop();
  int max_top_logprobs() const { return 20; }

 private:
  EngineService() = default;
  void loop();
  void on_token(uint64_t id, int32_t token, std::span<const float> logits);
  void on_finished(const RequestResult& r);
  void expire_deadlines();
  void publish_health();

  std::unique_ptr<Model> model_;
  std::unique_ptr<Engine> engine_;
  ServiceLimits limits_;
  int vocab_ = 0;

  mutable std::mutex mu_;  // guards the queues below and health_
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> pending_;
  std::vector<std::shared_ptr<Job>> cancels_;
  bool stopping_ = false;
  int queued_sequences_ = 0;
  Health health_;
  uint64_t next_job_ = 1;

  // Engine thread only.
  struct Slot {
    std::shared_ptr<Job> job;
    int choice = 0;
  };
  std::vector<std::shared_ptr<Job>> active_;
  std::unordered_map<uint64_t, Slot> slots_;
  uint64_t next_engine_id_ = 1;
  std::thread thread_;
};

}  // namespace samebits::serve
