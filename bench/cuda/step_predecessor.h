// The kernel that runs before attention in an engine step: qkv_prep (each head's rmsnorm, rope, the
// step's K and V written to the paged cache, q / k / v stored dense), at the shapes of a decode
// batch of bench_attention.cpp. The decode-step rows replay it and the attention call in one graph,
// as a captured engine step runs them, so that the attention's set-up before its wait for the
// previous kernel (attention_decode_segment.cuh) meets a kernel before it, where the isolated
// decode-graph rows replay attention calls back to back. Its own replays alone (the rows' prep_us)
// give what it costs by itself: the pair less it is what the attention call adds to a step.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"

namespace samebits::bench {

// Where the step's prepared values go: attention's inputs.
struct StepTarget {
  bf16 *q = nullptr, *k = nullptr, *v = nullptr;  // [T, heads, head_dim]
  bf16 *k_cache = nullptr, *v_cache = nullptr;
  int64_t num_slots = 0;
  std::vector<int64_t> slots;       // the cache slot of each of the step's T tokens
  std::vector<int32_t> positions;   // their positions
  int num_q_heads = 0, num_kv_heads = 0, head_dim = 0;
};

// Owns qkv_prep's other inputs (the fused projection's rows, the norms' weights, the rope table, the
// positions and slots on the device) for one StepTarget.
class StepPredecessor {
 public:
  // nullptr where an allocation or upload failed.
  static std::unique_ptr<StepPredecessor> make(const Backend& gpu, const StepTarget& target, Mode mode);
  ~StepPredecessor();
  // One qkv_prep call on `stream`; its status.
  absl::Status launch(void* stream) const;

 private:
  explicit StepPredecessor(const Backend& gpu) : gpu_(gpu) {}
  const Backend& gpu_;
  Mode mode_ = Mode::kInvariant;
  QkvPrepArgs args_;
  std::vector<void*> owned_;
};

}  // namespace samebits::bench
