// Model configuration: the Qwen3 dense architecture (and Qwen2's variant: q/k/v biases, no q/k
// norm) as data. Built-in shapes: "tiny" (CPU experiments), "qwen3-0.6b", "qwen3-8b" (GPU work).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace samebits {

struct ModelConfig {
  std::string name;
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 1e6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Qwen2: biases on q/k/v projections
  bool qk_norm = true;          // Qwen3: rmsnorm per head on q and k
  int max_position_embeddings = 0;
  int bos_token_id = -1;
  int eos_token_id = -1;
};

// Names accepted by builtin_config.
std::vector<std::string> builtin_config_names();
absl::StatusOr<ModelConfig> builtin_config(const std::string& name);
// Checks the invariants every op relies on (heads divisible, head_dim even, ...).
absl::Status validate_config(const ModelConfig& config);

}  // namespace samebits
