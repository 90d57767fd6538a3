// A Hugging Face checkpoint directory -> (ModelConfig, mapped tensors or HostWeights in bf16). Every tensor that
// expected_tensor_shapes(config) names must be present with that shape; nothing else may be
// (lm_head.weight is accepted and dropped when tie_word_embeddings is true). Every error is one
// line naming the file and, where one is at fault, the tensor.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "models/tiny_qwen/config.h"
#include "models/tiny_qwen/weights.h"

namespace samebits {

class SafetensorsSet;

// A checkpoint validated and mapped (names, shapes, layout checked; no tensor read yet).
struct MappedCheckpoint {
  ModelConfig config;
  std::shared_ptr<const SafetensorsSet> tensors;
  std::string architecture;  // from config.json
  std::string torch_dtype;   // from config.json ("" when absent)
  int num_files = 0;         // safetensors files mapped
};
absl::StatusOr<MappedCheckpoint> open_hf_checkpoint(const std::string& dir);

// HostWeights::digest() of the checkpoint's weights in bf16, read tensor by tensor from the
// mapping (one chunk of host memory, never the whole model).
uint64_t mapped_weights_digest(const MappedCheckpoint& checkpoint);

struct HfCheckpoint {
  ModelConfig config;
  HostWeights weights;
  std::string architecture;  // from config.json
  std::string torch_dtype;   // from config.json ("" when absent)
  int num_files = 0;         // safetensors files read
};

// open_hf_checkpoint, then every tensor read into host memory.
absl::StatusOr<HfCheckpoint> load_hf_checkpoint(const std::string& dir);

}  // namespace samebits
