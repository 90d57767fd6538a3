// Continuous batching in the manner of vLLM v1, without the model: which requests run in a step
// and with how many tokens, which KV blocks they own, who is preempted, who finishes.
//
// One step: a token budget (max_tokens_per_step). Running requests with one token left to compute
// (decodes) go first, one token each, in admission order; then running prefills, each chunked to
// min(max_chunk, budget left); then, if nobody was preempted in this step, waiting requests are
// admitted in arrival order while the budget, max_seqs and the free blocks allow (a prefix-cache
// hit, block-aligned, always leaves at least one token to compute). When a running request needs
// a block and none is free, the most recently admitted running request is preempted by recompute:
// its blocks are freed and it waits at the front of the queue with prompt + generated tokens,
// to be computed again later; its sampling keys (seed, generated-token index) do not change.
// Scheduling ahead: a token still being sampled stands as a placeholder (expect_token) until its
// value is known (resolve_token); no decision here depends on a token's value, only on counts, so
// a step scheduled with placeholders is the step scheduled with the values, unless a value ends
// its request (outlook says when that cannot happen).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "harness/engine/block_manager.h"
#include "harness/engine/engine.h"
#include "harness/engine/prefix_cache.h"
#include "harness/engine/request.h"

namespace samebits {

struct SchedulerConfig {
  int block_size = 16;
  int num_blocks = 1024;
  int max_tokens_per_step = 256;
  int max_seqs = 64;
  int max_chunk = 0;  // 0 = no cap beyond the budget
  bool prefix_cache = true;
  int max_model_len = 1024;  // prompt + max_new_tokens may not exceed this
  int vocab_size = 0;
  int eos_token_id = -1;     // -1 = none
};

struct ScheduledEntry {
  Request* request = nullptr;
  int start = 0;       // first position computed
  int num_tokens = 0;
  bool samples = false;  // the chunk reaches the last known token: its logits give the next token
};

struct ScheduleOutput {
  int64_t step = 0;
  std::vector<ScheduledEntry> entries;  // batch row order
  std::vector<uint64_t> preempted;
  std::vector<uint64_t> admitted;
  int64_t num_tokens = 0;
};

struct SchedulerStats {
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_hit_requests = 0;
  int64_t preemptions = 0;
  int64_t rejected = 0;
};

class Scheduler {
 public:
  explicit Scheduler(const SchedulerConfig& config);

  // Queues a request, or finishes it at once as rejected with the reason.
  void add(RequestSpec spec);
  // Why `spec` can never run ("" when it can).
  std::string rejection_reason(const RequestSpec& spec) const;
  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
  int num_waiting() const { return int(waiting_.size()); }
  int num_running() const { return int(running_.size()); }

  ScheduleOutput schedule();
  // The step `record` describes, checked against the current state (replay). Errors say where the
  // replay diverges.
  absl::StatusOr<ScheduleOutput> schedule_forced(const StepRecord& record);
  StepRecord record_of(const ScheduleOutput& out) const;

  // The model has computed `out`: its KV is in the cache. Registers newly full blocks.
  void commit(const ScheduleOutput& out);
  // Appends a sampled token; finishes the request (freeing `request`) when it is done.
  FinishReason append_token(Request* request, int32_t token);
  // How `request` would finish if `token` were appended, or took its placeholder's place
  // (kRunning: it would not).
  FinishReason finish_reason_after(const Request& request, int32_t token) const;

  // Scheduling ahead: the step `out` is computing and its tokens are not known yet.
  // outlook: whether the next step scheduled now is the step it would be once they are known
  // (`exact`: no sampling row of `out` can finish by a sampled value, EOS or a stop sequence; a
  // finish by max_new_tokens is known in advance), and whether some request certainly remains to
  // be scheduled (`work_remains`).
  struct Outlook {
    bool exact = true;
    bool work_remains = false;
  };
  Outlook outlook(const ScheduleOutput& out) const;
  // Row `row` of the step computing now will sample `request`'s next token: a placeholder stands
  // for it. A request whose count that token completes stops running now and releases its blocks,
  // as it would once the token is known (the step in flight writes them before any later step).
  void expect_token(Request* request, int32_t row);
  // The sampled token replaces the placeholder, then as append_token.
  FinishReason resolve_token(Request* request, int32_t token);

  // Finishes an unfinished request as kCancelled, freeing its blocks (between steps only).
  bool cancel(uint64_t request_id);
  std::vector<RequestResult> take_finished();
  const SchedulerStats& stats() const { return stats_; }
  const BlockManager& block_manager() const { return blocks_; }
  const PrefixCache& prefix_cache() const { return cache_; }
  const SchedulerConfig& config() const { return config_; }
  // Reference counts equal the block-table occurrences, blocks being written have one owner,
  // shared blocks are cached, free queue consistent. Empty when consistent.
  std::string check_invariants() const;

 private:
  int chunk_limit(int remaining, int budget) const;
  // Allocates blocks so that `r` holds `tokens` tokens, preempting the most recently admitted
  // running requests as needed. False when `r` itself was preempted.
  bool reserve_blocks(Request* r, int tokens, ScheduleOutput* out, int* budget);
  void preempt(Request* r, ScheduleOutput* out, int* budget);
  bool try_admit(Request* r, ScheduleOutput* out, int* budget);
  // Moves a waiting request to running_ holding the prefix-cache blocks `hit` (the caller has
  // matched them): its computed tokens start after them; schedule() and replay both admit here.
  void admit(Request* r, std::vector<int32_t> hit, ScheduleOutput* out);
  void release_blocks(Request* r);
  void remove_running(Request* r);
  void finish(Request* r, FinishReason reason);
  void push_entry(Request* r, int n, ScheduleOutput* out, int* budget);

  SchedulerConfig config_;
  BlockManager blocks_;
  PrefixCache cache_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // admission order
  std::vector<RequestResult> finished_;
  SchedulerStats stats_;
  uint64_t admit_counter_ = 0;
  int64_t step_counter_ = 0;
};

}  // namespace samebits
