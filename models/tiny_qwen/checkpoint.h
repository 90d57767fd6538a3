// A Hugging Face checkpoint directory -> (ModelConfig, HostWeights in bf16). Every tensor that
// expected_tensor_shapes(config) names must be present with that shape; nothing else may be
// (lm_head.weight is accepted and dropped when tie_word_embeddings is true). Every error is one
// line naming the file and, where one is at fault, the tensor.
#pragma once
#include <string>

#include "absl/status/statusor.h"
#include "models/tiny_qwen/config.h"
#include "models/tiny_qwen/weights.h"

namespace samebits {

struct HfCheckpoint {
  ModelConfig config;
  HostWeights weights;
  std::string architecture;  // from config.json
  std::string torch_dtype;   // from config.json ("" when absent)
  int num_files = 0;         // safetensors files read
};

absl::StatusOr<HfCheckpoint> load_hf_checkpoint(const std::string& dir);

}  // namespace samebits
