// Host-side weights in the engine's dtype (bf16), keyed by Hugging Face tensor names:
//   model.embed_tokens.weight, model.norm.weight, lm_head.weight (absent when tied),
//   model.layers.{i}.input_layernorm.weight, .post_attention_layernorm.weight,
//   model.layers.{i}.self_attn.{q,k,v,o}_proj.weight, .{q,k,v}_proj.bias (Qwen2),
//   model.layers.{i}.self_attn.{q,k}_norm.weight (Qwen3),
//   model.layers.{i}.mlp.{gate,up,down}_proj.weight.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/bf16.h"
#include "models/tiny_qwen/config.h"

namespace samebits {

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<bf16> data;
};

struct HostWeights {
  std::map<std::string, HostTensor> tensors;
  // XXH3-64 over (name, shape, bf16 bytes little-endian) of every tensor in name order.
  uint64_t digest() const;
};

// The digest of HostWeights::digest() computed piecewise, for weights that are never all in host
// memory at once: begin_tensor() for each tensor in name order, then its values in index order.
class WeightsDigest {
 public:
  WeightsDigest();
  ~WeightsDigest();
  WeightsDigest(const WeightsDigest&) = delete;
  WeightsDigest& operator=(const WeightsDigest&) = delete;
  void begin_tensor(const std::string& name, const std::vector<int64_t>& shape);
  void add_values(const bf16* values, size_t n);
  void add_bytes(const void* bf16_bytes, size_t bytes);  // bf16 values as stored (little-endian)
  uint64_t finish() const;

 private:
  void* state_;  // XXH3_state_t
};

// The tensor names and shapes a configuration requires.
std::map<std::string, std::vector<int64_t>> expected_tensor_shapes(const ModelConfig& config);

// Seeded synthetic weights: value = f(seed, tensor name, index) through a counter-based generator,
// identical on every platform and backend. Norm weights are near 1, projections scaled by
// 1/sqrt(fan_in).
HostWeights synthetic_weights(const ModelConfig& config, uint64_t seed);
// The generator's parts, for backends that fill synthetic tensors in their own memory: value i of
// tensor `name` = bf16(offset + scale * u_i), u_i from the top 24 bits of the splitmix64 output at
// counter i of the stream keyed by synthetic_tensor_key(seed, name) (weights.cpp gives the code).
struct SyntheticFill {
  float scale = 0.f;
  float offset = 0.f;
};
SyntheticFill synthetic_fill(const ModelConfig& config, const std::string& tensor_name);
uint64_t synthetic_tensor_key(uint64_t seed, const std::string& tensor_name);  // XXH3_64bits_withSeed(name, seed)
// Values [begin, begin + n) of one synthetic tensor, as synthetic_weights computes them.
void synthetic_fill_range(uint64_t tensor_key, SyntheticFill fill, int64_t begin, int64_t n, bf16* out);
// The digest of synthetic weights, defined by the generator's identity instead of hashing 16 GB of
// values: XXH3-64 over a tag, kSyntheticGeneratorVersion, the seed, and every tensor's name, shape,
// scale and offset in name order. Sound because the generator is exact integer and fp32 arithmetic,
// pinned by tests (host values and their HostWeights::digest, device fill == host fill); bump
// kSyntheticGeneratorVersion whenever the generator's arithmetic changes.
inline constexpr int kSyntheticGeneratorVersion = 1;
uint64_t synthetic_weights_digest(const ModelConfig& config, uint64_t seed);
float synthetic_weight_value(uint64_t seed, const std::string& tensor_name, int64_t index,
                             float scale, float offset);

}  // namespace samebits
