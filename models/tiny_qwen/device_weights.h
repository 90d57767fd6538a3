// The model's weights in backend memory, one upload per tensor, checked against the shapes the
// configuration requires.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "models/tiny_qwen/config.h"
#include "models/tiny_qwen/device_buffer.h"
#include "models/tiny_qwen/weights.h"

namespace samebits {

struct LayerWeights {
  const bf16* input_norm = nullptr;
  const bf16* post_attention_norm = nullptr;
  // q_proj, k_proj, v_proj (and their biases) lie back to back in one allocation: rows
  // [q | k | v] of one [q_dim + 2 * kv_dim, hidden] weight, so one linear call computes all three.
  const bf16 *qkv_proj = nullptr, *qkv_bias = nullptr;  // qkv_bias: attention_bias only
  const bf16* o_proj = nullptr;
  const bf16 *q_norm = nullptr, *k_norm = nullptr;  // qk_norm only
  const bf16* down_proj = nullptr;
  // [2I, H]: mlp.gate_proj and mlp.up_proj interleaved by gate_up_weight_row (kernels/ops.h), the
  // weight of the gate_up_silu op; the two tensors themselves are not kept.
  const bf16* gate_up = nullptr;
};

struct DeviceWeights {
  const bf16* embed_tokens = nullptr;
  const bf16* final_norm = nullptr;
  const bf16* lm_head = nullptr;  // == embed_tokens when tied
  std::vector<LayerWeights> layers;
  std::vector<DeviceBuffer> storage;
};

// Allocates every tensor of expected_tensor_shapes(config) in backend memory and has `write`
// fill it (numel bf16 values at dst, backend memory), in name order. A layer's q/k/v projections
// (weights, and biases where present) are placed back to back (LayerWeights::qkv_proj); then each
// layer's gate and up projections are regrouped into LayerWeights::gate_up.
using TensorWriter = std::function<absl::Status(const std::string& name, const std::vector<int64_t>& shape,
                                                bf16* dst, int64_t numel)>;
absl::StatusOr<DeviceWeights> build_device_weights(const Backend& backend, const ModelConfig& config,
                                                   const TensorWriter& write);

// Every tensor of expected_tensor_shapes(config) must be present with that shape; tensors the
// configuration does not use are ignored. Errors name the tensor.
absl::StatusOr<DeviceWeights> upload_weights(const Backend& backend, const ModelConfig& config,
                                             const HostWeights& weights);

class SafetensorsSet;
// A mapped checkpoint's tensors (already checked against config) in backend memory, straight from
// the mapping: bf16 tensors go up as they are stored (Backend::upload_bulk where the backend has
// it), others are converted one chunk at a time. Host memory never holds a whole tensor.
// *bytes receives the bf16 bytes placed in backend memory.
absl::StatusOr<DeviceWeights> upload_mapped_weights(const Backend& backend, const ModelConfig& config,
                                                    const SafetensorsSet& tensors, uint64_t* bytes);

// synthetic_weights(config, seed) in backend memory: filled there by Backend::fill_synthetic when
// the backend has it, else generated one chunk at a time on the host and uploaded. Host memory
// holds one chunk, never the whole model; *digest receives synthetic_weights_digest(config, seed).
absl::StatusOr<DeviceWeights> upload_synthetic_weights(const Backend& backend, const ModelConfig& config,
                                                       uint64_t seed, uint64_t* digest);

}  // namespace samebits
