// The forward pass of a Qwen3-style decoder over one flattened batch (prefill chunks and decodes
// mixed), every op through one backend's table in one mode. The paged KV cache lives here; which
// blocks each sequence owns is the engine's business (harness/engine).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "models/tiny_qwen/config.h"
#include "models/tiny_qwen/op_observer.h"
#include "models/tiny_qwen/weights.h"

namespace samebits {

struct DeviceWeights;
class SafetensorsSet;

struct KvCacheShape {
  int num_blocks = 0;
  int block_size = 0;
};

// One step's batch, flattened. Sequence s owns tokens [query_start[s], query_start[s+1]);
// context_lens[s] = tokens of s in the cache after this step (cached prefix + these tokens).
struct ForwardBatch {
  std::vector<int32_t> tokens;        // [T]
  std::vector<int32_t> positions;     // [T] absolute positions
  std::vector<int64_t> slot_mapping;  // [T] block * block_size + offset
  std::vector<int32_t> query_start;   // [S+1]
  std::vector<int32_t> context_lens;  // [S]
  std::vector<int32_t> block_tables;  // [S * max_blocks_per_seq], unused entries 0
  int max_blocks_per_seq = 0;
  std::vector<int32_t> logit_rows;    // token indices whose logits are wanted, in output order
  // Tokens not known on the host yet: tokens[fed_tokens[j]] is the token that the previous
  // forward_sample_begin sampled at its row fed_from[j] (still in backend memory; tokens[] holds
  // any valid id there). Strictly increasing token indices; empty: every token is in tokens[].
  std::vector<int32_t> fed_tokens;
  std::vector<int32_t> fed_from;
};

// Where a model's set-up time went (host wall clock, seconds).
struct SetupTimes {
  double weights_seconds = 0;   // allocate + upload (or generate on the device) every weight
  uint64_t weights_bytes = 0;   // bytes read from a checkpoint into backend memory (0: none read)
  double kv_cache_seconds = 0;  // allocate the paged KV cache and the rope table
};

class Model {
 public:
  static absl::StatusOr<std::unique_ptr<Model>> create(const Backend& backend, const ModelConfig& config,
                                                       const HostWeights& weights, KvCacheShape kv);
  // synthetic_weights(config, seed) without holding them in host memory: generated on the device
  // where the backend can, else one chunk at a time and uploaded. Same bits as
  // create(.., synthetic_weights(config, seed), ..); weights_digest() is
  // synthetic_weights_digest(config, seed), defined by the generator's identity.
  static absl::StatusOr<std::unique_ptr<Model>> create_synthetic(const Backend& backend, const ModelConfig& config,
                                                                 uint64_t seed, KvCacheShape kv);
  // A mapped checkpoint's weights (models/tiny_qwen/checkpoint.h), uploaded from the mapping
  // without a host copy; digest: mapped_weights_digest() of that checkpoint.
  static absl::StatusOr<std::unique_ptr<Model>> create_mapped(const Backend& backend, const ModelConfig& config,
                                                              const SafetensorsSet& tensors, uint64_t digest,
                                                              KvCacheShape kv);
  ~Model();

  // logits: resized to logit_rows.size() * vocab_size, fp32, row-major.
  absl::Status forward(const ExecContext& ctx, const ForwardBatch& batch, std::vector<float>* logits);
  // One token per logit row of the last forward(), drawn by the backend's sample op from the
  // logits still in backend memory. rows.size() must equal that forward's logit_rows.size().
  absl::Status sample(const ExecContext& ctx, std::span<const SamplingRow> rows, std::vector<int32_t>* tokens);

  // Every later forward() reports each op's output to `observer` (empty: none, the default).
  void set_op_observer(OpObserver observer);

  // forward() and sample() in one step: the logits stay in backend memory, the tokens come back
  // (one wait for the device), and only logits rows host_rows (indices into logit_rows, e.g. the
  // rows whose logits someone observes) are copied, into *logits in that order.
  absl::Status forward_sample(const ExecContext& ctx, const ForwardBatch& batch, std::span<const SamplingRow> rows,
                              std::span<const int32_t> host_rows, std::vector<int32_t>* tokens,
                              std::vector<float>* logits);
  // forward_sample in two halves: begin enqueues the whole step (forward, sampling, the copies
  // back) and returns without waiting; finish waits once and hands over the tokens and logits rows.
  // Host work between the two runs while the device computes. rows must stay untouched until finish.
  // Two steps may be in flight: begin, begin (the second may feed on the first's sampled tokens),
  // then each finish hands over the oldest unfinished step, waiting for that step only.
  absl::Status forward_sample_begin(const ExecContext& ctx, const ForwardBatch& batch,
                                    std::span<const SamplingRow> rows, std::span<const int32_t> host_rows);
  absl::Status forward_sample_finish(const ExecContext& ctx, std::vector<int32_t>* tokens, std::vector<float>* logits);

  // Decode steps (one query token per sequence, every row sampled) replayed from recorded graphs
  // where the backend can record them (Backend::capture_begin) and no observer or op timer is
  // set; on by default. A step's batch is recorded the second time its shape is seen and replayed
  // from then on. Invariant mode pads the batch to a bucket size (kGraphBuckets: padded rows are
  // rows of their own, and no row's bits depend on the others), so few graphs serve every batch;
  // default mode records exact shapes only, since there padding would change every row's bits
  // (the matmul algorithm follows M, the attention split count follows the batch).
  void set_graphs(bool on);
  struct GraphStats {
    int64_t replays = 0;   // forward passes replayed from a graph
    int64_t captures = 0;  // graphs recorded
  };
  GraphStats graph_stats() const;
  // The padded size of a decode batch of `tokens` rows in invariant mode: powers of two up to 128,
  // then multiples of 128; 0 beyond kMaxGraphTokens (such batches run without graphs).
  static int64_t graph_bucket(int64_t tokens);
  static constexpr int64_t kMaxGraphTokens = 4096;

  const ModelConfig& config() const;
  SetupTimes setup_times() const;
  const Backend& backend() const;
  KvCacheShape kv_shape() const;
  uint64_t weights_digest() const;

 private:
  Model();
  static absl::StatusOr<std::unique_ptr<Model>> assemble(const Backend& backend, const ModelConfig& config,
                                                         KvCacheShape kv, DeviceWeights&& weights, uint64_t digest);
  absl::Status sample_enqueue(const ExecContext& ctx, std::span<const SamplingRow> rows,
                              std::span<const int32_t> host_rows);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace samebits
