// Tensor names and shapes per configuration, seeded synthetic weights, and the weights digest.
//
// Synthetic values are counter-based: tensor_key = XXH3_64bits_withSeed(name bytes, seed); the
// value at flat index i takes the splitmix64 output at counter i of the stream keyed by
// tensor_key, i.e. mix(tensor_key + (i + 1) * 0x9E3779B97F4A7C15). Its top 24 bits give
// u in [-1, 1) exactly representable in fp32; value = bf16(offset + scale * u) in fp32 arithmetic.
// Integer math and two correctly rounded fp32 operations: identical on every platform and easy to
// reproduce on a device.
#include "models/tiny_qwen/weights.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/fixed_math.h"
#include "xxhash.h"

namespace samebits {
namespace {

static_assert(std::endian::native == std::endian::little, "digests hash little-endian bytes as stored");

float value_from_bits(uint64_t bits, float scale, float offset) {
  // Top 24 bits as a signed integer in [-2^23, 2^23), divided by 2^23: exact in fp32.
  float u = float(int32_t(bits >> 40) - (1 << 23)) / float(1 << 23);
  float scaled = scale * u;
  return round_bf16(offset + scaled);
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

uint64_t synthetic_tensor_key(uint64_t seed, const std::string& name) {
  return XXH3_64bits_withSeed(name.data(), name.size(), seed);
}

// How each kind of tensor is filled: norm weights near 1, biases small, matrices scaled by
// 1/sqrt(fan_in) (the last dimension), embeddings so that tied logits have a spread of a few units.
SyntheticFill synthetic_fill(const ModelConfig& config, const std::string& name) {
  auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("norm.weight")) return {0.1f, 1.0f};
  if (ends_with(".bias")) return {0.1f, 0.0f};
  if (name == "model.embed_tokens.weight" || name == "lm_head.weight") {
    return {float(4.0 / std::sqrt(double(config.hidden_size))), 0.0f};
  }
  const auto shapes = expected_tensor_shapes(config);
  auto it = shapes.find(name);
  const int64_t fan_in = it == shapes.end() ? 1 : it->second.back();
  return {float(1.0 / std::sqrt(double(fan_in))), 0.0f};
}

void synthetic_fill_range(uint64_t key, SyntheticFill fill, int64_t begin, int64_t n, bf16* out) {
  // Each value depends on its index alone, so any partition of the loop gives the same bits.
#pragma omp parallel for schedule(static) if (n > (1 << 20))
  for (int64_t i = 0; i < n; ++i) {
    out[i] = to_bf16(value_from_bits(splitmix64_at(key, uint64_t(begin + i)), fill.scale, fill.offset));
  }
}

WeightsDigest::WeightsDigest() : state_(XXH3_createState()) { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }
WeightsDigest::~WeightsDigest() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void WeightsDigest::begin_tensor(const std::string& name, const std::vector<int64_t>& shape) {
  auto* state = static_cast<XXH3_state_t*>(state_);
  const uint64_t name_len = name.size();
  XXH3_64bits_update(state, &name_len, sizeof name_len);
  XXH3_64bits_update(state, name.data(), name.size());
  const uint64_t rank = shape.size();
  XXH3_64bits_update(state, &rank, sizeof rank);
  XXH3_64bits_update(state, shape.data(), shape.size() * sizeof(int64_t));
}

void WeightsDigest::add_values(const bf16* values, size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), values, n * sizeof(bf16));
}

void WeightsDigest::add_bytes(const void* bf16_bytes, size_t bytes) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), bf16_bytes, bytes);
}

uint64_t WeightsDigest::finish() const { return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_)); }

uint64_t HostWeights::digest() const {
  WeightsDigest d;
  for (const auto& [name, tensor] : tensors) {  // std::map: name order
    d.begin_tensor(name, tensor.shape);
    d.add_values(tensor.data.data(), tensor.data.size());
  }
  return d.finish();
}

std::map<std::string, std::vector<int64_t>> expected_tensor_shapes(const ModelConfig& c) {
  std::map<std::string, std::vector<int64_t>> shapes;
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const int64_t q_dim = int64_t(c.num_heads) * c.head_dim, kv_dim = int64_t(c.num_kv_heads) * c.head_dim;
  shapes["model.embed_tokens.weight"] = {V, H};
  shapes["model.norm.weight"] = {H};
  if (!c.tie_word_embeddings) shapes["lm_head.weight"] = {V, H};
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    shapes[p + "input_layernorm.weight"] = {H};
    shapes[p + "post_attention_layernorm.weight"] = {H};
    shapes[p + "self_attn.q_proj.weight"] = {q_dim, H};
    shapes[p + "self_attn.k_proj.weight"] = {kv_dim, H};
    shapes[p + "self_attn.v_proj.weight"] = {kv_dim, H};
    shapes[p + "self_attn.o_proj.weight"] = {H, q_dim};
    if (c.attention_bias) {
      shapes[p + "self_attn.q_proj.bias"] = {q_dim};
      shapes[p + "self_attn.k_proj.bias"] = {kv_dim};
      shapes[p + "self_attn.v_proj.bias"] = {kv_dim};
    }
    if (c.qk_norm) {
      shapes[p + "self_attn.q_norm.weight"] = {c.head_dim};
      shapes[p + "self_attn.k_norm.weight"] = {c.head_dim};
    }
    shapes[p + "mlp.gate_proj.weight"] = {I, H};
    shapes[p + "mlp.up_proj.weight"] = {I, H};
    shapes[p + "mlp.down_proj.weight"] = {H, I};
  }
  return shapes;
}

float synthetic_weight_value(uint64_t seed, const std::string& tensor_name, int64_t index, float scale,
                             float offset) {
  return value_from_bits(splitmix64_at(synthetic_tensor_key(seed, tensor_name), uint64_t(index)), scale, offset);
}

uint64_t synthetic_weights_digest(const ModelConfig& config, uint64_t seed) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  auto add = [&](const void* p, size_t n) { XXH3_64bits_update(state, p, n); };
  constexpr char kTag[] = "samebits synthetic weights";
  add(kTag, sizeof kTag - 1);
  const uint64_t version = kSyntheticGeneratorVersion;
  add(&version, sizeof version);
  add(&seed, sizeof seed);
  for (const auto& [name, shape] : expected_tensor_shapes(config)) {  // std::map: name order
    const uint64_t name_len = name.size(), rank = shape.size();
    add(&name_len, sizeof name_len);
    add(name.data(), name.size());
    add(&rank, sizeof rank);
    add(shape.data(), shape.size() * sizeof(int64_t));
    const SyntheticFill fill = synthetic_fill(config, name);
    add(&fill.scale, sizeof fill.scale);
    add(&fill.offset, sizeof fill.offset);
  }
  const uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return digest;
}

HostWeights synthetic_weights(const ModelConfig& config, uint64_t seed) {
  HostWeights weights;
  for (const auto& [name, shape] : expected_tensor_shapes(config)) {
    HostTensor& t = weights.tensors[name];
    t.shape = shape;
    const int64_t n = numel(shape);
    t.data.resize(size_t(n));
    synthetic_fill_range(synthetic_tensor_key(seed, name), synthetic_fill(config, name), 0, n, t.data.data());
  }
  return weights;
}

}  // namespace samebits
