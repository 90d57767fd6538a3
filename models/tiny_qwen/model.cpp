// The Qwen3 forward pass (HF Qwen3ForCausalLM; Qwen2 with attention_bias and no qk_norm) over one
// flattened batch. Per layer:
//   h = rmsnorm(x (+ residual))                  input_layernorm, residual add fused from layer 1 on
//   q, k, v = linear(h) (+ bias)                 q_proj, k_proj, v_proj
//   q, k = rmsnorm over each head's head_dim     q_norm, k_norm (qk_norm)
//   q, k = rope(q, k, positions)
//   kv_write(k, v) -> paged cache; o = attention(q, cache)
//   h = rmsnorm(o_proj(o) + residual)            post_attention_layernorm
//   x = down(silu(gate(h)) * up(h))
// then h = rmsnorm(x + residual) (model.norm), the logit rows gathered (the embedding op used as a
// row gather), logits = lm_head(rows) in fp32. Every op goes through the backend table with the
// caller's ExecContext; nothing here depends on the backend. The mode enters only through the
// plans built here (plan_matmul, plan_row_reduce, plan_attention: kernels/plan.h), one per call,
// from the shapes of this batch; the kernels execute them.
#include "models/tiny_qwen/model.h"

#include <cmath>
#include <cstring>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "kernels/fixed_math.h"
#include "models/tiny_qwen/batch_check.h"
#include "models/tiny_qwen/device_buffer.h"
#include "models/tiny_qwen/device_weights.h"

#define SAMEBITS_RETURN_IF_ERROR(expr)    \
  do {                                    \
    absl::Status _status = (expr);        \
    if (!_status.ok()) return _status;    \
  } while (0)

namespace samebits {
namespace {

size_t align8(size_t n) { return (n + 7) / 8 * 8; }

absl::Status grow(const Backend& backend, DeviceBuffer* buf, size_t bytes) {
  if (buf->bytes() >= bytes) return absl::OkStatus();
  buf->reset();
  absl::StatusOr<DeviceBuffer> fresh = DeviceBuffer::allocate(backend, bytes);
  if (!fresh.ok()) return fresh.status();
  *buf = *std::move(fresh);
  return absl::OkStatus();
}

}  // namespace

// Activation buffers, sized for the largest batch seen so far and reused: no allocation in a
// step unless the batch outgrows them.
struct Scratch {
  DeviceBuffer resid, normed, q, k, v, attn, delta, gate, up, act;  // per token
  DeviceBuffer gathered, logits, sampled;                           // per logit row
  DeviceBuffer meta;                                                // the batch's index arrays
};

struct Model::Impl {
  const Backend* backend = nullptr;
  ModelConfig config;
  KvCacheShape kv;
  uint64_t digest = 0;
  DeviceWeights weights;
  DeviceBuffer rope_table;
  DeviceBuffer kv_cache;  // [layer][k|v][num_blocks, block_size, kv_heads, head_dim]
  Scratch scratch;
  std::vector<uint8_t> meta_host;
  int64_t last_logit_rows = -1;

  bf16* k_cache(int layer) const { return kv_cache.as<bf16>() + (2 * int64_t(layer)) * kv_layer_elems(); }
  bf16* v_cache(int layer) const { return kv_cache.as<bf16>() + (2 * int64_t(layer) + 1) * kv_layer_elems(); }
  int64_t kv_layer_elems() const {
    return int64_t(kv.num_blocks) * kv.block_size * config.num_kv_heads * config.head_dim;
  }
  absl::Status reserve(int64_t tokens, int64_t rows, size_t meta_bytes);
  absl::Status run_layers(const ExecContext& ctx, const ForwardBatch& batch, const int32_t* d_tokens,
                          const int32_t* d_positions, const int64_t* d_slots, const int32_t* d_query_start,
                          const int32_t* d_context_lens, const int32_t* d_block_tables);
};

absl::Status Model::Impl::reserve(int64_t tokens, int64_t rows, size_t meta_bytes) {
  const Backend& b = *backend;
  const size_t H = size_t(config.hidden_size), I = size_t(config.intermediate_size);
  const size_t q_dim = size_t(config.num_heads) * size_t(config.head_dim);
  const size_t kv_dim = size_t(config.num_kv_heads) * size_t(config.head_dim);
  const size_t T = size_t(tokens), R = size_t(std::max<int64_t>(rows, 1)), e = sizeof(bf16);
  Scratch& s = scratch;
  for (auto [buf, bytes] : {std::pair{&s.resid, T * H * e}, {&s.normed, T * H * e}, {&s.q, T * q_dim * e},
                            {&s.k, T * kv_dim * e}, {&s.v, T * kv_dim * e}, {&s.attn, T * q_dim * e},
                            {&s.delta, T * H * e}, {&s.gate, T * I * e}, {&s.up, T * I * e}, {&s.act, T * I * e},
                            {&s.gathered, R * H * e}, {&s.logits, R * size_t(config.vocab_size) * sizeof(float)},
                            {&s.sampled, R * sizeof(int32_t)}, {&s.meta, meta_bytes}}) {
    SAMEBITS_RETURN_IF_ERROR(grow(b, buf, bytes));
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

  auto linear = [&](const bf16* x, const bf16* w, const bf16* bias, int64_t N, int64_t K, bf16* y) {
    LinearArgs a;
    a.x = x, a.w = w, a.bias = bias, a.M = T, a.N = N, a.K = K, a.y = y;
    a.plan = plan_matmul(ctx.mode, T, N, K, ctx.parallel_units);
    return b.linear(ctx, a);
  };
  auto rmsnorm = [&](const bf16* x, bf16* residual, const bf16* weight, int64_t rows, int64_t dim, bf16* y) {
    RmsNormArgs a;
    a.x = x, a.residual = residual, a.weight = weight, a.rows = rows, a.dim = dim, a.eps = c.rms_norm_eps, a.y = y;
    a.plan = plan_row_reduce(ctx.mode, rows, dim, ctx.parallel_units);
    return b.rmsnorm(ctx, a);
  };

  EmbeddingArgs embed;
  embed.ids = d_tokens, embed.T = T, embed.table = weights.embed_tokens, embed.vocab = c.vocab_size, embed.dim = H;
  embed.y = resid;
  SAMEBITS_RETURN_IF_ERROR(b.embedding(ctx, embed));

  for (int l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = weights.layers[size_t(l)];
    // Layer 0 normalises the embeddings; later layers first add the previous MLP output.
    if (l == 0) {
      SAMEBITS_RETURN_IF_ERROR(rmsnorm(resid, nullptr, w.input_norm, T, H, normed));
    } else {
      SAMEBITS_RETURN_IF_ERROR(rmsnorm(delta, resid, w.input_norm, T, H, normed));
    }
    SAMEBITS_RETURN_IF_ERROR(linear(normed, w.q_proj, w.q_bias, q_dim, H, q));
    SAMEBITS_RETURN_IF_ERROR(linear(normed, w.k_proj, w.k_bias, kv_dim, H, k));
    SAMEBITS_RETURN_IF_ERROR(linear(normed, w.v_proj, w.v_bias, kv_dim, H, v));
    if (c.qk_norm) {
      SAMEBITS_RETURN_IF_ERROR(rmsnorm(q, nullptr, w.q_norm, T * c.num_heads, c.head_dim, q));
      SAMEBITS_RETURN_IF_ERROR(rmsnorm(k, nullptr, w.k_norm, T * c.num_kv_heads, c.head_dim, k));
    }
    RopeArgs rope;
    rope.q = q, rope.k = k, rope.positions = d_positions, rope.T = T;
    rope.num_q_heads = c.num_heads, rope.num_kv_heads = c.num_kv_heads, rope.head_dim = c.head_dim;
    rope.table = rope_table.as<float>(), rope.max_position = c.max_position_embeddings;
    SAMEBITS_RETURN_IF_ERROR(b.rope(ctx, rope));

    KvWriteArgs write;
    write.k = k, write.v = v, write.slot_mapping = d_slots, write.T = T;
    write.num_kv_heads = c.num_kv_heads, write.head_dim = c.head_dim;
    write.k_cache = k_cache(l), write.v_cache = v_cache(l);
    write.num_slots = int64_t(kv.num_blocks) * kv.block_size;
    SAMEBITS_RETURN_IF_ERROR(b.kv_write(ctx, write));

    AttentionArgs at;
    at.q = q, at.k_new = k, at.v_new = v, at.k_cache = k_cache(l), at.v_cache = v_cache(l);
    at.query_start = d_query_start, at.context_lens = d_context_lens, at.block_tables = d_block_tables;
    at.host_query_start = batch.query_start.data(), at.host_context_lens = batch.context_lens.data();
    at.num_seqs = num_seqs, at.max_blocks_per_seq = batch.max_blocks_per_seq, at.T = T;
    at.num_q_heads = c.num_heads, at.num_kv_heads = c.num_kv_heads, at.head_dim = c.head_dim;
    at.block_size = kv.block_size, at.num_blocks = kv.num_blocks, at.scale = scale, at.plan = plan, at.out = attn;
    SAMEBITS_RETURN_IF_ERROR(b.attention(ctx, at));

    SAMEBITS_RETURN_IF_ERROR(linear(attn, w.o_proj, nullptr, H, q_dim, delta));
    SAMEBITS_RETURN_IF_ERROR(rmsnorm(delta, resid, w.post_attention_norm, T, H, normed));
    SAMEBITS_RETURN_IF_ERROR(linear(normed, w.gate_proj, nullptr, I, H, s.gate.as<bf16>()));
    SAMEBITS_RETURN_IF_ERROR(linear(normed, w.up_proj, nullptr, I, H, s.up.as<bf16>()));
    SiluMulArgs act;
    act.gate = s.gate.as<bf16>(), act.up = s.up.as<bf16>(), act.T = T, act.F = I, act.y = s.act.as<bf16>();
    SAMEBITS_RETURN_IF_ERROR(b.silu_mul(ctx, act));
    SAMEBITS_RETURN_IF_ERROR(linear(s.act.as<bf16>(), w.down_proj, nullptr, H, I, delta));
  }
  return rmsnorm(delta, resid, weights.final_norm, T, H, normed);
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
  absl::StatusOr<DeviceWeights> w = upload_weights(backend, config, weights);
  if (!w.ok()) return w.status();
  return assemble(backend, config, kv, *std::move(w), weights.digest());
}

absl::StatusOr<std::unique_ptr<Model>> Model::create_synthetic(const Backend& backend, const ModelConfig& config,
                                                               uint64_t seed, KvCacheShape kv) {
  SAMEBITS_RETURN_IF_ERROR(check_model_args(config, kv));
  uint64_t digest = 0;
  absl::StatusOr<DeviceWeights> w = upload_synthetic_weights(backend, config, seed, &digest);
  if (!w.ok()) return w.status();
  return assemble(backend, config, kv, *std::move(w), digest);
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

  const std::vector<float> table = make_rope_table(config.rope_theta, config.head_dim, config.max_position_embeddings);
  absl::StatusOr<DeviceBuffer> rope = DeviceBuffer::allocate(backend, table.size() * sizeof(float));
  if (!rope.ok()) return rope.status();
  m.rope_table = *std::move(rope);
  SAMEBITS_RETURN_IF_ERROR(backend.upload(m.rope_table.as<void>(), table.data(), m.rope_table.bytes()));

  const size_t kv_bytes = size_t(2 * config.num_layers) * size_t(m.kv_layer_elems()) * sizeof(bf16);
  absl::StatusOr<DeviceBuffer> cache = DeviceBuffer::allocate(backend, kv_bytes);
  if (!cache.ok()) return cache.status();
  m.kv_cache = *std::move(cache);
  return model;
}

absl::Status Model::forward(const ExecContext& ctx, const ForwardBatch& batch, std::vector<float>* logits) {
  Impl& m = *impl_;
  const Backend& b = *m.backend;
  m.last_logit_rows = -1;
  SAMEBITS_RETURN_IF_ERROR(check_forward_batch(batch, m.config, m.kv));
  const int64_t T = int64_t(batch.tokens.size());
  const int64_t R = int64_t(batch.logit_rows.size());

  // One upload for every index array: [slots i64 | tokens | positions | query_start | context_lens
  // | block_tables | logit_rows], each section 8-byte aligned.
  auto bytes_of = [](const auto& v) { return align8(v.size() * sizeof(v[0])); };
  size_t offsets[7];
  size_t total = 0;
  auto sections = std::make_tuple(&batch.slot_mapping, &batch.tokens, &batch.positions, &batch.query_start,
                                  &batch.context_lens, &batch.block_tables, &batch.logit_rows);
  int index = 0;
  std::apply([&](auto*... v) { ((offsets[index++] = total, total += bytes_of(*v)), ...); }, sections);
  SAMEBITS_RETURN_IF_ERROR(m.reserve(T, R, total));
  m.meta_host.resize(total);
  index = 0;
  std::apply([&](auto*... v) {
    ((std::memcpy(m.meta_host.data() + offsets[index++], v->data(), v->size() * sizeof((*v)[0]))), ...);
  }, sections);
  SAMEBITS_RETURN_IF_ERROR(b.upload(m.scratch.meta.as<void>(), m.meta_host.data(), total));
  uint8_t* meta = m.scratch.meta.as<uint8_t>();
  auto at = [&](int i) { return meta + offsets[i]; };

  SAMEBITS_RETURN_IF_ERROR(m.run_layers(ctx, batch, reinterpret_cast<const int32_t*>(at(1)),
                                        reinterpret_cast<const int32_t*>(at(2)), reinterpret_cast<const int64_t*>(at(0)),
                                        reinterpret_cast<const int32_t*>(at(3)), reinterpret_cast<const int32_t*>(at(4)),
                                        reinterpret_cast<const int32_t*>(at(5))));
  logits->resize(size_t(R) * size_t(m.config.vocab_size));
  if (R == 0) {
    m.last_logit_rows = 0;
    return b.synchronize(ctx);
  }
  // The wanted rows only, gathered with the embedding op (a row copy), then lm_head in fp32.
  EmbeddingArgs gather;
  gather.ids = reinterpret_cast<const int32_t*>(at(6)), gather.T = R, gather.table = m.scratch.normed.as<bf16>();
  gather.vocab = T, gather.dim = m.config.hidden_size, gather.y = m.scratch.gathered.as<bf16>();
  SAMEBITS_RETURN_IF_ERROR(b.embedding(ctx, gather));
  LinearArgs head;
  head.x = m.scratch.gathered.as<bf16>(), head.w = m.weights.lm_head, head.M = R, head.N = m.config.vocab_size;
  head.K = m.config.hidden_size, head.y_f32 = m.scratch.logits.as<float>();
  head.plan = plan_matmul(ctx.mode, R, head.N, head.K, ctx.parallel_units);
  SAMEBITS_RETURN_IF_ERROR(b.linear(ctx, head));
  SAMEBITS_RETURN_IF_ERROR(b.synchronize(ctx));
  SAMEBITS_RETURN_IF_ERROR(b.download(logits->data(), m.scratch.logits.as<void>(), logits->size() * sizeof(float)));
  m.last_logit_rows = R;
  return absl::OkStatus();
}

absl::Status Model::sample(const ExecContext& ctx, std::span<const SamplingRow> rows, std::vector<int32_t>* tokens) {
  Impl& m = *impl_;
  if (m.last_logit_rows < 0 || int64_t(rows.size()) != m.last_logit_rows) {
    return absl::FailedPreconditionError(absl::StrCat("model.sample: ", rows.size(), " sampling rows but the last forward produced ",
                                                      m.last_logit_rows < 0 ? 0 : m.last_logit_rows, " logit rows"));
  }
  tokens->resize(rows.size());
  if (rows.empty()) return absl::OkStatus();
  SampleArgs a;
  a.logits = m.scratch.logits.as<float>(), a.rows = int64_t(rows.size()), a.vocab = m.config.vocab_size;
  a.params = rows.data(), a.out = m.scratch.sampled.as<int32_t>();
  SAMEBITS_RETURN_IF_ERROR(m.backend->sample(ctx, a));
  SAMEBITS_RETURN_IF_ERROR(m.backend->synchronize(ctx));
  return m.backend->download(tokens->data(), a.out, rows.size() * sizeof(int32_t));
}

const ModelConfig& Model::config() const { return impl_->config; }
const Backend& Model::backend() const { return *impl_->backend; }
KvCacheShape Model::kv_shape() const { return impl_->kv; }
uint64_t Model::weights_digest() const { return impl_->digest; }

}  // namespace samebits
