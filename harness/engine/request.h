// One request's state inside the engine (internal to harness/engine).
#pragma once
#include <cstdint>
#include <vector>

#include "harness/engine/engine.h"

namespace samebits {

// kFinishing: its last token (by max_new_tokens) is still being sampled; it holds no blocks and is
// neither waiting nor running.
enum class RequestState { kWaiting, kRunning, kFinishing };
inline constexpr int32_t kPendingToken = -1;

struct Request {
  RequestSpec spec;
  std::vector<int32_t> tokens;  // prompt, then every generated token
  int prompt_len = 0;
  int num_computed = 0;          // leading tokens whose KV is in the cache
  std::vector<int32_t> blocks;   // block table: logical block j -> physical block
  std::vector<uint64_t> block_hashes;  // prefix-cache chain hashes of the full blocks of `tokens`
  int num_registered_blocks = 0;       // blocks[0..n) already offered to the prefix cache
  RequestState state = RequestState::kWaiting;
  uint64_t admit_order = 0;      // larger = admitted (or re-admitted) more recently
  int64_t scheduled_step = -1;   // step that last scheduled it
  int scheduled_tokens = 0;      // tokens scheduled in that step
  int preemptions = 0;
  int prefix_hit_tokens = 0;
  // tokens.back() is a placeholder (kPendingToken) for the token that row pending_row of a step
  // still in flight samples (Scheduler::expect_token); it is fed to the next step on the device.
  bool token_pending = false;
  int32_t pending_row = -1;

  int num_generated() const { return int(tokens.size()) - prompt_len; }
  int num_tokens() const { return int(tokens.size()); }
};

}  // namespace samebits
