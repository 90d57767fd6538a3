// Hugging Face config.json -> ModelConfig, for the dense Qwen3 (Qwen3ForCausalLM, model_type
// "qwen3") and Qwen2 (Qwen2ForCausalLM, "qwen2") architectures. Accepts both the transformers 4
// spelling (rope_theta, torch_dtype) and the 5 spelling (rope_parameters.rope_theta, dtype).
#pragma once
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "models/tiny_qwen/config.h"

namespace samebits {

struct HfConfig {
  ModelConfig model;
  std::string architecture;  // "Qwen3ForCausalLM" or "Qwen2ForCausalLM"
  std::string torch_dtype;   // "bfloat16", "float16", "float32" or "" when absent
};

// `origin` names the file in errors ("ckpt/config.json: num_key_value_heads: missing").
absl::StatusOr<HfConfig> parse_hf_config(std::string_view json_text, const std::string& origin);
absl::StatusOr<HfConfig> load_hf_config(const std::string& path);

}  // namespace samebits
