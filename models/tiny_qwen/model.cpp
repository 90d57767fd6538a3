// The Qwen3 forward pass (HF Qwen3ForCausalLM; Qwen2 with attention_bias and no qk_norm) over one
// flattened batch. Per layer:
//   h = rmsnorm(x (+ residual))                  input_layernorm, residual add fused from layer 1 on
//   q|k|v = linear(h) (+ bias)                   q_proj, k_proj, v_proj as one call (the weights lie
//                                                back to back: device_weights.h)
//   q, k = rmsnorm over each head's head_dim     q_norm, k_norm (qk_norm)    } one qkv_prep op
//   q, k = rope(q, k, positions)                                             } (kernels/ops.h),
//   kv_write(k, v) -> paged cache                                            } read from q|k|v
//   o = attention(q, cache)
//   h = rmsnorm(o_proj(o) + residual)            post_attention_layernorm
//   x = down(silu(gate(h)) * up(h))              gate_up_silu (one op), down_proj
// then h = rmsnorm(x + residual) (model.norm), the logit rows gathered (the embedding op used as a
// row gather), logits = lm_head(rows) in fp32. Every op goes through the backend table with the
// caller's ExecContext; nothing here depends on the backend. The mode enters only through the
// plans built here (plan_matmul, plan_row_reduce, plan_attention: kernels/plan.h), one per call,
// from the shapes of this batch; the kernels execute them. In invariant mode no output element's
// reduction depends on N, so the fused q|k|v call gives q_proj's, k_proj's and v_proj's bits; in
// default mode the library's choice follows the fused shape, as in engines that fuse them.
// With an op observer (explain) the qkv_prep stages run one call each (split, norm, rope, write),
// each output observed: the same arithmetic per element, the same bits (tests).
//
// A step waits for the backend once: the batch's index arrays go up by one async copy from
// page-locked memory, attention derives its work on the device (no host mirrors), and the sampled
// tokens with the observed logits rows come back by async copies behind the step's work, before
// one synchronize. Decode steps replay recorded graphs (set_graphs): the batch is padded to the
// graph's shape (invariant mode: a bucket size, so padding rows changes no row's bits; default
// mode: exact shapes only) and the block tables to a power-of-two width (which no kernel's
// arithmetic depends on).
#include "models/tiny_qwen/model.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "kernels/fixed_math.h"
#include "kernels/op_timer.h"
#include "models/tiny_qwen/batch_check.h"
#include "models/tiny_qwen/model_impl.h"

namespace samebits {
namespace {

class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// *epoch changes when the buffer moves (recorded graphs hold its address).
absl::Status grow(const Backend& backend, DeviceBuffer* buf, size_t bytes, uint64_t* epoch) {
  if (buf->bytes() >= bytes) return absl::OkStatus();
  ++*epoch;
  buf->reset();
  absl::StatusOr<DeviceBuffer> fresh = DeviceBuffer::allocate(backend, bytes);
  if (!fresh.ok()) return fresh.status();
  *buf = *std::move(fresh);
  return absl::OkStatus();
}

}  // namespace


absl::Status Model::Impl::reserve(int64_t tokens, int64_t rows, size_t meta_bytes, DeviceBuffer* retired_sampled) {
  const Backend& b = *backend;
  const size_t H = size_t(config.hidden_size), I = size_t(config.intermediate_size);
  const size_t q_dim = size_t(config.num_heads) * size_t(config.head_dim);
  const size_t kv_dim = size_t(config.num_kv_heads) * size_t(config.head_dim);
  const size_t T = size_t(tokens), R = size_t(std::max<int64_t>(rows, 1)), e = sizeof(bf16);
  Scratch& s = scratch;
  for (auto [buf, bytes] : {std::pair{&s.resid, T * H * e}, {&s.normed, T * H * e},
                            {&s.qkv, T * (q_dim + 2 * kv_dim) * e}, {&s.q, T * q_dim * e},
                            {&s.k, T * kv_dim * e}, {&s.v, T * kv_dim * e}, {&s.attn, T * q_dim * e},
                            {&s.delta, T * H * e}, {&s.gate_up, 2 * T * I * e}, {&s.act, T * I * e},
                            {&s.gathered, R * H * e}, {&s.logits, R * size_t(config.vocab_size) * sizeof(float)},
                            {&s.sampled, R * sizeof(int32_t)}, {&s.meta, meta_bytes}}) {
    if (buf == &s.sampled && retired_sampled != nullptr && buf->bytes() < bytes) *retired_sampled = std::move(*buf);
    SAMEBITS_RETURN_IF_ERROR(grow(b, buf, bytes, &buffer_epoch));
  }
  return absl::OkStatus();
}


absl::Status Model::Impl::run_layers(const ExecContext& ctx, const ForwardBatch& batch, const int32_t* d_tokens,
                                     const int32_t* d_positions, const int64_t* d_slots,
                                     const int32_t* d_query_start, const int32_t* d_context_lens,
                                     const int32_t* d_block_tables) {
  const Backend& b = *backend;
  const ModelConfig& c = config;
  const int64_t T = int64_t(batch.tokens.size());
  const int num_seqs = int(batch.context_lens.size());
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t q_dim = int64_t(c.num_heads) * c.head_dim, kv_dim = int64_t(c.num_kv_heads) * c.head_dim;
  Scratch& s = scratch;
  bf16 *resid = s.resid.as<bf16>(), *normed = s.normed.as<bf16>(), *delta = s.delta.as<bf16>();
  bf16 *q = s.q.as<bf16>(), *k = s.k.as<bf16>(), *v = s.v.as<bf16>(), *attn = s.attn.as<bf16>();

  int32_t max_context = 0;
  for (int32_t len : batch.context_lens) max_context = std::max(max_context, len);
  const AttentionPlan plan = plan_attention(ctx.mode, num_seqs, c.num_kv_heads, max_context, ctx.parallel_units);
  const float scale = float(1.0 / std::sqrt(double(c.head_dim)));

  // Per-token outputs to the observer, if any; `plan` is only evaluated when one is set.
  int layer_now = -1;
  auto seen = [&](ModelOp op, const bf16* y, int64_t cols, auto plan) -> absl::Status {
    if (!observer) return absl::OkStatus();
    return observe(ctx, layer_now, op, y, T, cols, false, plan());
  };
  auto no_plan = [] { return std::string(); };
  // The fused q|k|v call is observed through qkv_prep's split stage (observed_as = nullptr here).
  std::string qkv_plan;
  auto linear = [&](int kind, const ModelOp* observed_as, const bf16* x, const bf16* w, const bf16* bias, int64_t N,
                    int64_t K, bf16* y) -> absl::Status {
    OpScope scope(ctx, linear_kind[kind]);
    LinearArgs a;
    a.x = x, a.w = w, a.bias = bias, a.M = T, a.N = N, a.K = K, a.y = y;
    a.plan = plan_matmul(ctx.mode, T, N, K, ctx.parallel_units);
    SAMEBITS_RETURN_IF_ERROR(b.linear(ctx, a));
    if (observed_as == nullptr) {
      if (observer) qkv_plan = a.plan.describe();
      return absl::OkStatus();
    }
    return seen(*observed_as, y, N, [&] { return a.plan.describe(); });
  };
  static constexpr ModelOp kOProj = ModelOp::kOProj, kDownProj = ModelOp::kDownProj;
  auto rmsnorm = [&](ModelOp op, const bf16* x, bf16* residual, const bf16* weight, int64_t rows, int64_t dim,
                     bf16* y) -> absl::Status {
    OpScope scope(ctx, residual != nullptr ? "rmsnorm + residual add" : "rmsnorm");
    RmsNormArgs a;
    a.x = x, a.residual = residual, a.weight = weight, a.rows = rows, a.dim = dim, a.eps = c.rms_norm_eps, a.y = y;
    a.plan = plan_row_reduce(ctx.mode, rows, dim, ctx.parallel_units);
    SAMEBITS_RETURN_IF_ERROR(b.rmsnorm(ctx, a));
    if (residual != nullptr) {
      const ModelOp sum = op == ModelOp::kPostNorm ? ModelOp::kResidual : ModelOp::kResidualIn;
      SAMEBITS_RETURN_IF_ERROR(seen(sum, residual, dim, no_plan));
    }
    return seen(op, y, dim, [&] { return a.plan.describe(); });
  };

  EmbeddingArgs embed;
  embed.ids = d_tokens, embed.T = T, embed.table = weights.embed_tokens, embed.vocab = c.vocab_size, embed.dim = H;
  embed.y = resid;
  {
    OpScope scope(ctx, "embedding");
    SAMEBITS_RETURN_IF_ERROR(b.embedding(ctx, embed));
  }
  SAMEBITS_RETURN_IF_ERROR(seen(ModelOp::kEmbedding, resid, H, no_plan));
  bool any_decode = false, any_prefill = false;
  for (int s_ = 0; s_ < num_seqs; ++s_) {
    (batch.query_start[size_t(s_) + 1] - batch.query_start[size_t(s_)] == 1 ? any_decode : any_prefill) = true;
  }
  const char* attention_kind = !any_prefill ? "attention decode" : !any_decode ? "attention prefill" : "attention mixed";

  for (int l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = weights.layers[size_t(l)];
    layer_now = l;
    // Layer 0 normalises the embeddings; later layers first add the previous MLP output.
    if (l == 0) {
      SAMEBITS_RETURN_IF_ERROR(rmsnorm(ModelOp::kInputNorm, resid, nullptr, w.input_norm, T, H, normed));
    } else {
      SAMEBITS_RETURN_IF_ERROR(rmsnorm(ModelOp::kInputNorm, delta, resid, w.input_norm, T, H, normed));
    }
    SAMEBITS_RETURN_IF_ERROR(linear(kQkv, nullptr, normed, w.qkv_proj, w.qkv_bias, q_dim + 2 * kv_dim, H, s.qkv.as<bf16>()));
    QkvPrepArgs prep;
    prep.q_in = s.qkv.as<bf16>(), prep.k_in = prep.q_in + q_dim, prep.v_in = prep.k_in + kv_dim;
    prep.q_stride = prep.kv_stride = q_dim + 2 * kv_dim, prep.T = T;
    prep.num_q_heads = c.num_heads, prep.num_kv_heads = c.num_kv_heads, prep.head_dim = c.head_dim;
    if (c.qk_norm) {
      prep.q_norm = w.q_norm, prep.k_norm = w.k_norm, prep.eps = c.rms_norm_eps;
      prep.q_plan = plan_row_reduce(ctx.mode, T * c.num_heads, c.head_dim, ctx.parallel_units);
      prep.k_plan = plan_row_reduce(ctx.mode, T * c.num_kv_heads, c.head_dim, ctx.parallel_units);
    }
    prep.positions = d_positions, prep.table = rope_table.as<float>(), prep.max_position = c.max_position_embeddings;
    prep.slot_mapping = d_slots, prep.k_cache = k_cache(l), prep.v_cache = v_cache(l);
    prep.num_slots = int64_t(kv.num_blocks) * kv.block_size;
    prep.slots_distinct = true;  // check_forward_batch
    prep.q = q, prep.k = k, prep.v = v;
    if (observer) {
      SAMEBITS_RETURN_IF_ERROR(qkv_prep_observed(ctx, prep, l, T, qkv_plan));
    } else {
      OpScope scope(ctx, "q/k norm + rope + kv_write");
      SAMEBITS_RETURN_IF_ERROR(b.qkv_prep(ctx, prep));
    }

    AttentionArgs at;
    at.q = q, at.k_new = k, at.v_new = v, at.k_cache = k_cache(l), at.v_cache = v_cache(l);
    at.query_start = d_query_start, at.context_lens = d_context_lens, at.block_tables = d_block_tables;
    // No host mirrors: the work list is built on the device (no host pass over the sequences per
    // layer, and the same launches for every batch of these shapes, as graphs need).
    at.num_seqs = num_seqs, at.max_blocks_per_seq = batch.max_blocks_per_seq, at.T = T;
    at.num_q_heads = c.num_heads, at.num_kv_heads = c.num_kv_heads, at.head_dim = c.head_dim;
    at.block_size = kv.block_size, at.num_blocks = kv.num_blocks, at.scale = scale, at.plan = plan, at.out = attn;
    {
      OpScope scope(ctx, attention_kind);
      SAMEBITS_RETURN_IF_ERROR(b.attention(ctx, at));
    }
    if (observer) SAMEBITS_RETURN_IF_ERROR(observe(ctx, l, ModelOp::kAttention, attn, T, q_dim, false, plan.describe(), &plan));

    SAMEBITS_RETURN_IF_ERROR(linear(kO, &kOProj, attn, w.o_proj, nullptr, H, q_dim, delta));
    SAMEBITS_RETURN_IF_ERROR(rmsnorm(ModelOp::kPostNorm, delta, resid, w.post_attention_norm, T, H, normed));
    GateUpSiluArgs mlp;
    mlp.x = normed, mlp.w = w.gate_up, mlp.M = T, mlp.F = I, mlp.K = H;
    mlp.plan = plan_matmul(ctx.mode, T, 2 * I, H, ctx.parallel_units);
    mlp.gate_up = s.gate_up.as<bf16>(), mlp.y = s.act.as<bf16>();
    {
      OpScope scope(ctx, linear_kind[kGateUp]);
      SAMEBITS_RETURN_IF_ERROR(b.gate_up_silu(ctx, mlp));
    }
    SAMEBITS_RETURN_IF_ERROR(seen(ModelOp::kGateUpSilu, s.act.as<bf16>(), I, [&] { return mlp.plan.describe(); }));
    SAMEBITS_RETURN_IF_ERROR(linear(kDown, &kDownProj, s.act.as<bf16>(), w.down_proj, nullptr, H, I, delta));
  }
  layer_now = c.num_layers;
  return rmsnorm(ModelOp::kFinalNorm, delta, resid, weights.final_norm, T, H, normed);
}

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

namespace {

absl::Status check_model_args(const ModelConfig& config, KvCacheShape kv) {
  SAMEBITS_RETURN_IF_ERROR(validate_config(config));
  if (kv.num_blocks <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("model: kv.num_blocks: ", kv.num_blocks, " is not a positive integer"));
  }
  if (kv.block_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("model: kv.block_size: ", kv.block_size, " is not a positive integer"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Model::create(const Backend& backend, const ModelConfig& config,
                                                     const HostWeights& weights, KvCacheShape kv) {
  SAMEBITS_RETURN_IF_ERROR(check_model_args(config, kv));
  const Stopwatch clock;
  absl::StatusOr<DeviceWeights> w = upload_weights(backend, config, weights);
  if (!w.ok()) return w.status();
  const double weights_seconds = clock.seconds();
  auto model = assemble(backend, config, kv, *std::move(w), weights.digest());
  if (model.ok()) (*model)->impl_->setup.weights_seconds = weights_seconds;
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::create_mapped(const Backend& backend, const ModelConfig& config,
                                                            const SafetensorsSet& tensors, uint64_t digest,
                                                            KvCacheShape kv) {
  SAMEBITS_RETURN_IF_ERROR(check_model_args(config, kv));
  const Stopwatch clock;
  uint64_t bytes = 0;
  absl::StatusOr<DeviceWeights> w = upload_mapped_weights(backend, config, tensors, &bytes);
  if (!w.ok()) return w.status();
  const double weights_seconds = clock.seconds();
  auto model = assemble(backend, config, kv, *std::move(w), digest);
  if (model.ok()) {
    (*model)->impl_->setup.weights_seconds = weights_seconds;
    (*model)->impl_->setup.weights_bytes = bytes;
  }
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::create_synthetic(const Backend& backend, const ModelConfig& config,
                                                               uint64_t seed, KvCacheShape kv) {
  SAMEBITS_RETURN_IF_ERROR(check_model_args(config, kv));
  uint64_t digest = 0;
  const Stopwatch clock;
  absl::StatusOr<DeviceWeights> w = upload_synthetic_weights(backend, config, seed, &digest);
  if (!w.ok()) return w.status();
  SAMEBITS_RETURN_IF_ERROR(backend.synchronize(ExecContext{}));  // the fills ran
  const double weights_seconds = clock.seconds();
  auto model = assemble(backend, config, kv, *std::move(w), digest);
  if (model.ok()) (*model)->impl_->setup.weights_seconds = weights_seconds;
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::assemble(const Backend& backend, const ModelConfig& config,
                                                       KvCacheShape kv, DeviceWeights&& weights, uint64_t digest) {
  std::unique_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  m.backend = &backend;
  m.config = config;
  m.kv = kv;
  m.weights = std::move(weights);
  m.digest = digest;
  const Stopwatch clock;
  const int64_t H = config.hidden_size, I = config.intermediate_size;
  const int64_t q_dim = int64_t(config.num_heads) * config.head_dim;
  const int64_t kv_dim = int64_t(config.num_kv_heads) * config.head_dim;
  // gate_up_silu is timed as a linear of its 2I weight rows (its silu_mul runs inside, or right after it).
  const std::pair<const char*, std::pair<int64_t, int64_t>> linears[Impl::kLinearKinds] = {
      {"qkv_proj", {q_dim + 2 * kv_dim, H}}, {"o_proj", {H, q_dim}}, {"gate_up+silu_mul", {2 * I, H}},
      {"down_proj", {H, I}}, {"lm_head", {config.vocab_size, H}}};
  for (int i = 0; i < Impl::kLinearKinds; ++i) {
    m.linear_kind[i] = absl::StrCat("linear ", linears[i].first, " ", linears[i].second.first, "x", linears[i].second.second);
  }

  const std::vector<float> table = make_rope_table(config.rope_theta, config.head_dim, config.max_position_embeddings);
  absl::StatusOr<DeviceBuffer> rope = DeviceBuffer::allocate(backend, table.size() * sizeof(float));
  if (!rope.ok()) return rope.status();
  m.rope_table = *std::move(rope);
  SAMEBITS_RETURN_IF_ERROR(backend.upload(m.rope_table.as<void>(), table.data(), m.rope_table.bytes()));

  const size_t kv_bytes = size_t(2 * config.num_layers) * size_t(m.kv_layer_elems()) * sizeof(bf16);
  absl::StatusOr<DeviceBuffer> cache = DeviceBuffer::allocate(backend, kv_bytes);
  if (!cache.ok()) return cache.status();
  m.kv_cache = *std::move(cache);
  m.setup.kv_cache_seconds = clock.seconds();
  return model;
}

int64_t Model::graph_bucket(int64_t tokens) {
  if (tokens <= 0 || tokens > kMaxGraphTokens) return 0;
  if (tokens <= 128) {
    int64_t b = 1;
    while (b < tokens) b *= 2;
    return b;
  }
  return (tokens + 127) / 128 * 128;
}

// Whether this batch runs as a recorded graph, and under which key.
bool Model::Impl::graph_key(const ExecContext& ctx, const ForwardBatch& batch, GraphKey* key) const {
  if (!graphs_on || backend->capture_begin == nullptr || observer || ctx.timer != nullptr) return false;
  const int64_t T = int64_t(batch.tokens.size());
  const int64_t S = int64_t(batch.context_lens.size());
  if (S != T || int64_t(batch.logit_rows.size()) != T) return false;  // decode: one token per sequence
  for (int64_t i = 0; i < T; ++i) {
    if (batch.logit_rows[size_t(i)] != i) return false;  // every row sampled, in order
  }
  const int64_t padded = ctx.mode == Mode::kInvariant ? Model::graph_bucket(T) : (T <= Model::kMaxGraphTokens ? T : 0);
  if (padded == 0) return false;
  int width = 1;
  while (width < batch.max_blocks_per_seq) width *= 2;
  int32_t max_context = 0;
  for (int32_t len : batch.context_lens) max_context = std::max(max_context, len);
  const AttentionPlan plan = plan_attention(ctx.mode, int(padded), config.num_kv_heads, max_context, ctx.parallel_units);
  key->mode = int(ctx.mode);
  key->tokens = padded;
  key->blocks_per_seq = width;
  key->plan_kind = int(plan.kind);
  key->split_count = plan.split_count;
  key->split_size = plan.split_size;
  key->separate_new_keys = plan.separate_new_keys;
  return true;
}

// The batch padded to the key's shape: each padded row a sequence of its own (one token at
// position 0, context 1, written nowhere: slot -1; it reads block 0 and its result is dropped),
// block table rows widened with zeros.
void Model::Impl::pad_batch(const ForwardBatch& batch, const GraphKey& key) {
  ForwardBatch& p = padded;
  const size_t T = batch.tokens.size(), P = size_t(key.tokens), W = size_t(key.blocks_per_seq);
  const size_t w = size_t(batch.max_blocks_per_seq);
  p.tokens = batch.tokens, p.tokens.resize(P, 0);
  p.positions = batch.positions, p.positions.resize(P, 0);
  p.slot_mapping = batch.slot_mapping, p.slot_mapping.resize(P, -1);
  p.context_lens = batch.context_lens, p.context_lens.resize(P, 1);
  p.query_start.resize(P + 1);
  for (size_t i = 0; i <= P; ++i) p.query_start[i] = int32_t(i);
  p.logit_rows.resize(P);
  for (size_t i = 0; i < P; ++i) p.logit_rows[i] = int32_t(i);
  p.max_blocks_per_seq = int(W);
  p.block_tables.assign(P * W, 0);
  for (size_t s = 0; s < T; ++s) {
    std::memcpy(&p.block_tables[s * W], &batch.block_tables[s * w], w * sizeof(int32_t));
  }
}

absl::Status Model::Impl::enqueue_forward(const ExecContext& ctx, const ForwardBatch& batch) {
  const Backend& b = *backend;
  last_logit_rows = -1;
  SAMEBITS_RETURN_IF_ERROR(check_forward_batch(batch, config, kv));
  SAMEBITS_RETURN_IF_ERROR(check_fed_tokens(batch, last_sampled_rows));
  GraphKey key;
  const bool as_graph = graph_key(ctx, batch, &key);
  if (as_graph) pad_batch(batch, key);
  const ForwardBatch& run = as_graph ? padded : batch;
  const int64_t T = int64_t(run.tokens.size());
  const int64_t R = int64_t(run.logit_rows.size());

  // One upload for every index array (MetaSection); the feed's sections only when tokens are fed.
  const bool fed = !batch.fed_tokens.empty();
  if (fed) build_feed(batch);
  auto bytes_of = [](const auto& v) { return align8(v.size() * sizeof(v[0])); };
  size_t offsets[kMetaSections] = {};
  size_t total = 0;
  auto sections = std::make_tuple(&run.slot_mapping, &run.tokens, &run.positions, &run.query_start,
                                  &run.context_lens, &run.block_tables, &run.logit_rows, &batch.fed_from,
                                  &feed_ids, &feed_sources);
  auto uploaded = [&](int section) { return section <= kLogitRows || fed; };
  int index = 0;
  std::apply([&](auto*... v) {
    ((offsets[index] = total, total += uploaded(index) ? bytes_of(*v) : 0, ++index), ...);
  }, sections);
  // The previous step's sampled tokens stay readable until the feed has been issued, even when
  // its buffer must grow now (the old one is freed at the end of this call, after the device is
  // done with it: Backend::free waits for the device).
  const int32_t* previous_sampled = scratch.sampled.as<int32_t>();
  DeviceBuffer retired_sampled;
  SAMEBITS_RETURN_IF_ERROR(reserve(T, R, total, fed ? &retired_sampled : nullptr));
  // This parity's staging was last read by the step before the previous one, which has finished.
  HostStaging& staging = meta_host[steps_begun % 2];
  SAMEBITS_RETURN_IF_ERROR(staging.reserve(b, total));
  index = 0;
  std::apply([&](auto*... v) {
    // An empty section may have no storage (data() null): memcpy must not see it even for 0 bytes.
    auto copy = [&](auto* section) {
      if (!section->empty() && uploaded(index)) {
        std::memcpy(staging.as<uint8_t>() + offsets[index], section->data(), section->size() * sizeof((*section)[0]));
      }
      ++index;
    };
    (copy(v), ...);
  }, sections);
  {
    OpScope scope(ctx, "batch upload");
    SAMEBITS_RETURN_IF_ERROR(b.upload_async != nullptr ? b.upload_async(ctx, scratch.meta.as<void>(), staging.as<void>(), total)
                                                       : b.upload(scratch.meta.as<void>(), staging.as<void>(), total));
  }
  if (fed) SAMEBITS_RETURN_IF_ERROR(feed_tokens(ctx, batch, previous_sampled, offsets));
  last_sampled_rows = -1;  // a later batch may feed only from the step this forward begins
  if (as_graph) {
    SAMEBITS_RETURN_IF_ERROR(run_graph(ctx, run, key, offsets));
  } else {
    SAMEBITS_RETURN_IF_ERROR(enqueue_compute(ctx, run, offsets));
  }
  last_logit_rows = int64_t(batch.logit_rows.size());  // the real rows come first
  return absl::OkStatus();
}

// A key's first batch runs eagerly (sizing every buffer the ops use); the second is recorded,
// then replayed as long as no buffer it holds has moved. A recording that fails (an op that
// cannot be recorded) leaves the key to eager runs.
absl::Status Model::Impl::run_graph(const ExecContext& ctx, const ForwardBatch& batch, const GraphKey& key,
                                    const size_t* offsets) {
  const Backend& b = *backend;
  const uint64_t backend_epoch = b.memory_epoch != nullptr ? b.memory_epoch() : 0;
  auto it = graphs.find(key);
  if (it != graphs.end() && (it->second.buffer_epoch != buffer_epoch || it->second.backend_epoch != backend_epoch)) {
    b.graph_free(it->second.exec);
    graphs.erase(it);
    it = graphs.end();
  }
  if (it == graphs.end()) {
    if (graph_failed.count(key) || graph_seen.insert(key).second) return enqueue_compute(ctx, batch, offsets);
    if (graphs.size() >= 64) drop_graphs();
    SAMEBITS_RETURN_IF_ERROR(b.capture_begin(ctx));
    const absl::Status recorded = enqueue_compute(ctx, batch, offsets);
    absl::StatusOr<void*> exec = b.capture_end(ctx);
    const uint64_t epoch_after = b.memory_epoch != nullptr ? b.memory_epoch() : 0;
    if (!recorded.ok() || !exec.ok() || epoch_after != backend_epoch) {
      if (exec.ok()) b.graph_free(*exec);
      graph_failed.insert(key);
      return enqueue_compute(ctx, batch, offsets);
    }
    ++graph_stats.captures;
    it = graphs.emplace(key, RecordedGraph{*exec, buffer_epoch, backend_epoch}).first;
  }
  ++graph_stats.replays;
  return b.graph_launch(ctx, it->second.exec);
}

absl::Status Model::Impl::enqueue_compute(const ExecContext& ctx, const ForwardBatch& batch, const size_t* offsets) {
  const Backend& b = *backend;
  const int64_t T = int64_t(batch.tokens.size());
  const int64_t R = int64_t(batch.logit_rows.size());
  uint8_t* meta = scratch.meta.as<uint8_t>();
  auto at = [&](int i) { return meta + offsets[i]; };

  SAMEBITS_RETURN_IF_ERROR(run_layers(ctx, batch, reinterpret_cast<const int32_t*>(at(1)),
                                      reinterpret_cast<const int32_t*>(at(2)), reinterpret_cast<const int64_t*>(at(0)),
                                      reinterpret_cast<const int32_t*>(at(3)), reinterpret_cast<const int32_t*>(at(4)),
                                      reinterpret_cast<const int32_t*>(at(5))));
  if (R > 0) {
    // The wanted rows only, gathered with the embedding op (a row copy), then lm_head in fp32.
    EmbeddingArgs gather;
    gather.ids = reinterpret_cast<const int32_t*>(at(6)), gather.T = R, gather.table = scratch.normed.as<bf16>();
    gather.vocab = T, gather.dim = config.hidden_size, gather.y = scratch.gathered.as<bf16>();
    {
      OpScope scope(ctx, "logit rows gather");
      SAMEBITS_RETURN_IF_ERROR(b.embedding(ctx, gather));
    }
    LinearArgs head;
    head.x = scratch.gathered.as<bf16>(), head.w = weights.lm_head, head.M = R, head.N = config.vocab_size;
    head.K = config.hidden_size, head.y_f32 = scratch.logits.as<float>();
    head.plan = plan_matmul(ctx.mode, R, head.N, head.K, ctx.parallel_units);
    OpScope scope(ctx, linear_kind[kLmHead]);
    SAMEBITS_RETURN_IF_ERROR(b.linear(ctx, head));
    if (observer) {
      SAMEBITS_RETURN_IF_ERROR(observe(ctx, config.num_layers, ModelOp::kLogits, head.y_f32, R, head.N, true, head.plan.describe()));
    }
  }
  return absl::OkStatus();
}

absl::Status Model::forward(const ExecContext& ctx, const ForwardBatch& batch, std::vector<float>* logits) {
  Impl& m = *impl_;
  SAMEBITS_RETURN_IF_ERROR(m.enqueue_forward(ctx, batch));
  logits->resize(size_t(m.last_logit_rows) * size_t(m.config.vocab_size));
  OpScope scope(ctx, "logits copy");
  SAMEBITS_RETURN_IF_ERROR(m.backend->synchronize(ctx));
  return m.backend->download(logits->data(), m.scratch.logits.as<void>(), logits->size() * sizeof(float));
}


void Model::set_graphs(bool on) {
  impl_->graphs_on = on;
  if (!on) impl_->drop_graphs();
}
Model::GraphStats Model::graph_stats() const { return impl_->graph_stats; }

void Model::set_op_observer(OpObserver observer) { impl_->observer = std::move(observer); }

const char* model_op_name(ModelOp op) {
  switch (op) {
    case ModelOp::kEmbedding: return "embedding";
    case ModelOp::kResidualIn: return "residual_in";
    case ModelOp::kInputNorm: return "input_norm";
    case ModelOp::kQProj: return "q_proj";
    case ModelOp::kKProj: return "k_proj";
    case ModelOp::kVProj: return "v_proj";
    case ModelOp::kQNorm: return "q_norm";
    case ModelOp::kKNorm: return "k_norm";
    case ModelOp::kRopeQ: return "rope_q";
    case ModelOp::kRopeK: return "rope_k";
    case ModelOp::kAttention: return "attention";
    case ModelOp::kOProj: return "o_proj";
    case ModelOp::kResidual: return "residual";
    case ModelOp::kPostNorm: return "post_attention_norm";
    case ModelOp::kGateUpSilu: return "gate_up_silu";
    case ModelOp::kDownProj: return "down_proj";
    case ModelOp::kFinalNorm: return "final_norm";
    case ModelOp::kLogits: return "logits";
  }
  return "unknown";
}

const ModelConfig& Model::config() const { return impl_->config; }
const Backend& Model::backend() const { return *impl_->backend; }
KvCacheShape Model::kv_shape() const { return impl_->kv; }
SetupTimes Model::setup_times() const { return impl_->setup; }
uint64_t Model::weights_digest() const { return impl_->digest; }

}  // namespace samebits