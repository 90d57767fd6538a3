// Internals of Model shared by its source files (model.cpp: set-up, the forward pass and graphs;
// model_step.cpp: a step's sampling, its copies back and its wait; model_observed.cpp: the staged
// path an op observer sees).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "models/tiny_qwen/device_buffer.h"
#include "models/tiny_qwen/device_weights.h"
#include "models/tiny_qwen/model.h"

#ifndef SAMEBITS_RETURN_IF_ERROR
#define SAMEBITS_RETURN_IF_ERROR(expr)    \
  do {                                    \
    absl::Status _status = (expr);        \
    if (!_status.ok()) return _status;    \
  } while (0)
#endif

namespace samebits {

inline size_t align8(size_t n) { return (n + 7) / 8 * 8; }

// The index arrays of one upload, in this order, each section 8-byte aligned: [slots i64 | tokens |
// positions | query_start | context_lens | block_tables | logit_rows], then, when tokens are fed
// from the previous step, [fed_from | feed_ids | sources]. The first seven sections' offsets depend
// only on the (padded) batch shape, so a recorded graph's pointers stay valid.
enum MetaSection { kSlots, kTokens, kPositions, kQueryStart, kContextLens, kBlockTables, kLogitRows,
                   kFedFrom, kFeedIds, kSources, kMetaSections };

// A begun step: what its finish hands over, and where.
struct PendingStep {
  int64_t tokens = 0;     // sampled rows
  int64_t host_rows = 0;  // logits rows copied back
  int parity = 0;         // its staging buffers and its backend mark
};
inline constexpr size_t kMaxPendingSteps = 2;

// Activation buffers, sized for the largest batch seen so far and reused: no allocation in a
// step unless the batch outgrows them.
struct Scratch {
  DeviceBuffer resid, normed, qkv, q, k, v, attn, delta, gate_up, act;  // per token
  DeviceBuffer gathered, logits, sampled;                           // per logit row
  DeviceBuffer meta;                                                // the batch's index arrays
};

// What a recorded forward pass depends on besides the model: the padded batch shape (tokens =
// sequences for decode, block table width) and the attention plan.
struct GraphKey {
  int mode = 0;
  int64_t tokens = 0;
  int blocks_per_seq = 0;
  int plan_kind = 0, split_count = 0, split_size = 0;
  bool separate_new_keys = false;
  auto tie() const {
    return std::tie(mode, tokens, blocks_per_seq, plan_kind, split_count, split_size, separate_new_keys);
  }
  bool operator<(const GraphKey& o) const { return tie() < o.tie(); }
};

struct RecordedGraph {
  void* exec = nullptr;
  uint64_t buffer_epoch = 0, backend_epoch = 0;  // the memory it was recorded with
};

struct Model::Impl {
  ~Impl() { drop_graphs(); }
  const Backend* backend = nullptr;
  ModelConfig config;
  KvCacheShape kv;
  uint64_t digest = 0;
  DeviceWeights weights;
  DeviceBuffer rope_table;
  DeviceBuffer kv_cache;  // [layer][k|v][num_blocks, block_size, kv_heads, head_dim]
  Scratch scratch;
  uint64_t buffer_epoch = 0;  // bumped whenever a scratch buffer moves
  // Two steps may be in flight (forward_sample_begin twice before a finish): each begun step has
  // its own staging, by the parity of its count, so that the second step's upload and copies back
  // cannot touch the first step's while the host has not read them.
  HostStaging meta_host[2];   // the batch's index arrays on their way up
  HostStaging out_host[2];    // sampled tokens and observed logits rows on their way back
  int64_t last_logit_rows = -1;
  std::deque<PendingStep> pending;  // begun, not finished, oldest first (at most kMaxPendingSteps)
  int64_t steps_begun = 0;
  // Sampling rows of the last begun step: the rows a later batch's fed tokens may come from.
  int64_t last_sampled_rows = -1;
  // Recorded decode graphs.
  bool graphs_on = true;
  std::map<GraphKey, RecordedGraph> graphs;
  std::set<GraphKey> graph_seen, graph_failed;
  ForwardBatch padded;
  Model::GraphStats graph_stats;
  SetupTimes setup;
  OpObserver observer;  // optional (explain); empty in normal runs

  // Hands one op's output to the observer, after the backend finished it.
  absl::Status observe(const ExecContext& ctx, int layer, ModelOp op, const void* data, int64_t rows, int64_t cols,
                       bool fp32, std::string plan, const AttentionPlan* attention_plan = nullptr) const {
    SAMEBITS_RETURN_IF_ERROR(backend->synchronize(ctx));
    observer(OpOutput{layer, op, data, rows, cols, fp32, std::move(plan), attention_plan});
    return absl::OkStatus();
  }
  // Op kinds named by what they compute; linear kinds by projection and weight shape (N x K).
  enum LinearKind { kQkv, kO, kGateUp, kDown, kLmHead, kLinearKinds };
  std::string linear_kind[kLinearKinds];

  bf16* k_cache(int layer) const { return kv_cache.as<bf16>() + (2 * int64_t(layer)) * kv_layer_elems(); }
  bf16* v_cache(int layer) const { return kv_cache.as<bf16>() + (2 * int64_t(layer) + 1) * kv_layer_elems(); }
  int64_t kv_layer_elems() const {
    return int64_t(kv.num_blocks) * kv.block_size * config.num_kv_heads * config.head_dim;
  }
  // retired_sampled: where the sampled-tokens buffer goes instead of being freed if it must grow.
  absl::Status reserve(int64_t tokens, int64_t rows, size_t meta_bytes, DeviceBuffer* retired_sampled = nullptr);
  absl::Status enqueue_forward(const ExecContext& ctx, const ForwardBatch& batch);
  // The feed of a batch with fed_tokens (model_step.cpp): build_feed fills feed_ids and
  // feed_sources on the host, feed_tokens issues the two gathers that put the previous step's
  // sampled tokens into the uploaded tokens.
  void build_feed(const ForwardBatch& batch);
  absl::Status feed_tokens(const ExecContext& ctx, const ForwardBatch& batch, const int32_t* sampled,
                           const size_t* offsets);
  std::vector<int32_t> feed_ids, feed_sources;
  absl::Status enqueue_compute(const ExecContext& ctx, const ForwardBatch& batch, const size_t* offsets);
  bool graph_key(const ExecContext& ctx, const ForwardBatch& batch, GraphKey* key) const;
  void pad_batch(const ForwardBatch& batch, const GraphKey& key);
  absl::Status run_graph(const ExecContext& ctx, const ForwardBatch& batch, const GraphKey& key, const size_t* offsets);
  void drop_graphs() {
    for (auto& [key, g] : graphs) backend->graph_free(g.exec);
    graphs.clear();
  }
  // Copies backend memory to host memory: async into out_host where the backend can (ready after
  // the step's wait), else at once.
  absl::Status copy_back(const ExecContext& ctx, void* host, const void* src, size_t bytes) const {
    if (backend->download_async != nullptr) return backend->download_async(ctx, host, src, bytes);
    return backend->download(host, src, bytes);
  }
  absl::Status qkv_prep_observed(const ExecContext& ctx, const QkvPrepArgs& prep, int layer, int64_t T,
                                 const std::string& plan) const;
  absl::Status run_layers(const ExecContext& ctx, const ForwardBatch& batch, const int32_t* d_tokens,
                          const int32_t* d_positions, const int64_t* d_slots, const int32_t* d_query_start,
                          const int32_t* d_context_lens, const int32_t* d_block_tables);
};

}  // namespace samebits
